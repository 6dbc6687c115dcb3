from django.http import HttpResponse
from django.urls import include, path


def bare(request):
    """The baseline: a Django view that does nothing (no auth, no database)."""
    return HttpResponse(b'{"ok": true}', content_type="application/json")


urlpatterns = [path("bench/bare/", bare), path("", include("dialtom_site.urls"))]
