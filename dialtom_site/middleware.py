"""Small site-wide middleware."""
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse

from . import errors

NUL_REFUSED = "The request contains a NUL byte (%00), which no field accepts."


def nul_byte_in(request) -> bool:
    """A NUL in the path, the query string, a header or a form-encoded body. PostgreSQL can
    neither store nor compare one, so it would surface as a 500 in whichever view passed it
    on (an `Authorization: Token` header is looked up; cookies: see drop_nul_cookies)."""
    if any("\x00" in value for key, value in request.META.items()
           if key.startswith("HTTP_") and key != "HTTP_COOKIE" and isinstance(value, str)):
        return True
    if "\x00" in request.path_info or b"\x00" in unquote_to_bytes(request.META.get("QUERY_STRING", "")):
        return True
    if request.content_type == "application/x-www-form-urlencoded":
        return b"\x00" in unquote_to_bytes(request.body)
    if request.method == "POST" and request.content_type == "multipart/form-data":
        # The text fields only (Django parses them for POST anyway); files may hold any byte.
        return any("\x00" in key or any("\x00" in v for v in values) for key, values in request.POST.lists())
    return False


def drop_nul_cookies(request) -> None:
    """A cookie holding a NUL (`sessionid="abcd\\000efgh"` is unescaped to one) is dropped,
    as a cookie the site never set: the visitor goes on without a session, instead of a
    `psycopg.DataError` on every page until they clear their cookies (issue 20, break 4)."""
    if any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items()):
        request.COOKIES = {k: v for k, v in request.COOKIES.items() if "\x00" not in k and "\x00" not in v}


class HostileInputMiddleware:
    """One answer for a NUL byte anywhere in a request's text (issue 12, break 6): 400 with
    the reason, before any view runs; a cookie with one is dropped instead (drop_nul_cookies). JSON bodies are checked by dialtom_site.parsers;
    multipart uploads by the import parsers (a file may hold any byte)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        drop_nul_cookies(request)
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


class ApiErrorsMiddleware:
    """The outermost middleware (issue 20, break 5): see dialtom_site/errors.py.

    - an outage (database, broker) raised in a view is a 503 with Retry-After, not a 500;
    - under /api/, an error answer that is not JSON (from Django, or a view that is not
      DRF's) becomes `{"detail": ...}` with the same status and headers;
    - every /api/ answer carries `Cache-Control: no-store`: a shared cache or the browser's
      back button must not keep a verifier's claims, tokens or another run's results.
    """

    KEEP_HEADERS_EXCEPT = {"content-type", "content-length", "content-disposition"}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not errors.is_api(request):
            return response
        if response.status_code >= 400 and "json" not in response.get("Content-Type", ""):
            replacement = errors.json_for(response.status_code)
            for name, value in response.headers.items():
                if name.lower() not in self.KEEP_HEADERS_EXCEPT:
                    replacement.headers[name] = value
            # not response.close(): that sends request_finished, which closes the database
            # connection in the middle of the request (an error body holds no file anyway)
            response = replacement
        response["Cache-Control"] = "no-store"
        return response

    def process_exception(self, request, exception):
        kind = errors.outage_kind(exception)
        return errors.outage_response(request, kind) if kind else None  # which logs it, with its cause
