"""The site's URLs plus views that hit a real, unreachable service (for tests/test_api_errors.py)."""
import redis
from django.urls import include, path

from dialtom_site.urls import handler400, handler403, handler404, handler500  # noqa: F401
from tests.reliability.helpers import free_port


def broker_down(request):
    """What any view sees when Redis is gone: a real client to a port nothing listens on."""
    redis.Redis(port=free_port(), socket_connect_timeout=1).ping()


def crash(request):
    raise RuntimeError("boom")


urlpatterns = [
    path("api/v1/broker-probe/", broker_down),
    path("broker-probe/", broker_down),
    path("api/v1/crash/", crash),
    path("", include("dialtom_site.urls")),
]
