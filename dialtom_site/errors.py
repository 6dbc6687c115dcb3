"""One way to answer an error (issue 20, break 5): JSON under /api/, a styled page elsewhere.

- Every answer under `/api/` is JSON, whoever produced it: Django's URL resolver (404), its
  request checks (400, DisallowedHost; a body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413),
  the CSRF check (403), a view without the method (405), an uncaught exception (500).
  DRF's own answers are JSON already and pass through untouched.
- A database or broker outage (PostgreSQL restarting, Redis gone) is a 503 with
  `Retry-After`, not a 500: a client that retries 503s but not 500s then stores its answer
  on the retry. Pages get the styled 503.html.

The handlers are wired in dialtom_site/urls.py (handler400/403/404/500) and
settings.CSRF_FAILURE_VIEW; ApiErrorsMiddleware (dialtom_site/middleware.py) turns outages
raised in a view into 503s and makes every other `/api/` error JSON.
"""
from __future__ import annotations

import logging
import sys
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
OUTAGE_DETAIL = {
    "database": "The database is unavailable for a moment. Nothing was stored: retry after the time in Retry-After.",
    "broker": "The task queue is unavailable for a moment. Retry after the time in Retry-After.",
}


OUTAGE_PAGE_TEXT = "The studio is unavailable for a moment. Reload the page in a few seconds."


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def outage_kind(exc: BaseException | None) -> str | None:
    """"database" or "broker" when `exc` (or what caused it) says the service is unreachable,
    not that the request was wrong (a NUL is a DataError, never an outage)."""
    from django.db import InterfaceError as DjangoInterfaceError
    from django.db import OperationalError as DjangoOperationalError
    from kombu.exceptions import OperationalError as KombuOperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (DjangoOperationalError, DjangoInterfaceError)):
            return "database"
        if isinstance(exc, (KombuOperationalError, RedisConnectionError, RedisTimeoutError)):
            return "broker"
        exc = exc.__cause__ or exc.__context__
    return None


def api_error(status: int, detail: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def outage_response(request: HttpRequest, kind: str) -> HttpResponse:
    """503 with Retry-After. The page is rendered without the request: with the database
    down, even asking who the user is would fail."""
    retry_after = str(settings.DIALTOM_RETRY_AFTER_SECONDS)
    logger.warning("%s outage: 503 for %s %s", kind, request.method, request.path, exc_info=True)
    if is_api(request):
        return api_error(503, OUTAGE_DETAIL[kind], Retry_After=retry_after)
    try:
        page = render_to_string("503.html")
    except Exception:  # noqa: BLE001 - an outage page must not fail in turn (a missing static manifest, ...)
        page = f"<!doctype html><title>503</title><h1>{OUTAGE_PAGE_TEXT}</h1>"
    response = HttpResponse(page, status=503)
    response["Retry-After"] = retry_after
    return response


def json_for(status: int, detail: str | None = None) -> JsonResponse:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return api_error(status, detail or phrase)


def bad_request(request: HttpRequest, exception: Exception, template_name: str = "400.html") -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):
        detail = f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        if is_api(request):
            return json_for(413, detail)
        return HttpResponse(detail, status=413, content_type="text/plain; charset=utf-8")
    if is_api(request):
        return json_for(400, "Bad request.")
    return defaults.bad_request(request, exception, template_name)


def permission_denied(request: HttpRequest, exception: Exception, template_name: str = "403.html") -> HttpResponse:
    if is_api(request):
        return json_for(403, "You do not have permission to perform this action.")
    return defaults.permission_denied(request, exception, template_name)


def page_not_found(request: HttpRequest, exception: Exception, template_name: str = "404.html") -> HttpResponse:
    if is_api(request):
        return json_for(404, "Not found.")
    return defaults.page_not_found(request, exception, template_name)


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """Django calls this inside its `except` block: an outage raised outside any view (the
    session saved by SessionMiddleware, say) is still told apart from a bug."""
    kind = outage_kind(sys.exc_info()[1])
    if kind:
        return outage_response(request, kind)
    if is_api(request):
        return json_for(500, "Server error. It is logged; retrying the same request is safe.")
    return defaults.server_error(request, template_name)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if is_api(request):
        return json_for(403, f"CSRF check failed: {reason}" if reason else "CSRF check failed.")
    from django.shortcuts import render

    return render(request, "403_csrf.html", {"reason": reason}, status=403)  # styled, saying how to go on


def validation_text(exc: ValidationError) -> str:
    """A ValidationError as one line of text, for pages and commands alike: `field: message;
    other: message` (errors not tied to a field: the message alone)."""
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    return "; ".join(f"{field}: {' '.join(msgs)}" if field != "__all__" else " ".join(msgs)
                     for field, msgs in exc.message_dict.items())
