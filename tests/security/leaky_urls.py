"""A URLconf with deliberate holes, to prove the access matrix finds them."""
from django.http import HttpResponse
from django.urls import include, path

from verification.models import Judgment


def leaky_dashboard(request):
    return HttpResponse("<p>" + " ".join(Judgment.objects.values_list("comment", flat=True)) + "</p>")


def crash(request):
    raise RuntimeError("boom")


urlpatterns = [
    path("dashboard/leaky/", leaky_dashboard),
    path("crash/", crash),
    path("", include("dialtom_site.urls")),
]
