"""Small site-wide middleware."""
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse

NUL_REFUSED = "The request contains a NUL byte (%00), which no field accepts."


def nul_byte_in(request) -> bool:
    """A NUL in the path, the query string or a form-encoded body. PostgreSQL can neither
    store nor compare one, so it would surface as a 500 in whichever view passed it on."""
    if "\x00" in request.path_info or b"\x00" in unquote_to_bytes(request.META.get("QUERY_STRING", "")):
        return True
    if request.content_type == "application/x-www-form-urlencoded":
        return b"\x00" in unquote_to_bytes(request.body)
    if request.method == "POST" and request.content_type == "multipart/form-data":
        # The text fields only (Django parses them for POST anyway); files may hold any byte.
        return any("\x00" in key or any("\x00" in v for v in values) for key, values in request.POST.lists())
    return False


class HostileInputMiddleware:
    """One answer for a NUL byte anywhere in a request's text (issue 12, break 6): 400 with
    the reason, before any view runs. JSON bodies are checked by dialtom_site.parsers;
    multipart uploads by the import parsers (a file may hold any byte)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if nul_byte_in(request):
            if request.path_info.startswith("/api/"):
                return JsonResponse({"detail": NUL_REFUSED}, status=400)
            return HttpResponseBadRequest(NUL_REFUSED, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class SecurityHeadersMiddleware:
    """Adds `settings.SECURITY_EXTRA_HEADERS` (CSP, Permissions-Policy, ...) to every response.

    A view that sets one of these headers itself keeps its own value.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.headers = dict(getattr(settings, "SECURITY_EXTRA_HEADERS", {}))

    def __call__(self, request):
        response = self.get_response(request)
        for name, value in self.headers.items():
            response.headers.setdefault(name, value)
        return response
