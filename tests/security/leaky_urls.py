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


# --- an API endpoint with a crash on some input, for the schemathesis self-test ---------
from drf_spectacular.utils import extend_schema  # noqa: E402
from rest_framework import serializers  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402


class _Divide(serializers.Serializer):
    n = serializers.IntegerField(min_value=-5, max_value=5)


class FragileView(APIView):
    @extend_schema(request=_Divide, responses={200: _Divide})
    def post(self, request):
        data = _Divide(data=request.data)
        data.is_valid(raise_exception=True)
        return Response({"n": 10 // data.validated_data["n"]})  # ZeroDivisionError on n=0


urlpatterns.insert(0, path("api/v1/fragile/", FragileView.as_view()))
