"""Small site-wide middleware."""
from django.conf import settings


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
