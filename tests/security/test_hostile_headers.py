"""Hostile bytes in the parts of a request the fuzzers did not vary (issue 20, break 4).

test_hostile_input.py poisons the path, the query string and the body; these parts reach
the database too: the session cookie (a session lookup), the Authorization header (a token
lookup); and the CSRF cookie and header, any other header, reach Django's own checks. A NUL
in a cookie was a `psycopg.DataError` 500 on every page, even for an anonymous visitor.

Every URL (urlwalk.py), anonymous and with a token: a NUL, its `\\000` cookie escape, a very
long value and non-ASCII bytes in each of those parts; none may answer 5xx. A cookie
holding a NUL is dropped (the visitor is anonymous, as with any unknown session); a header
holding one is refused with the usual 400.
"""
import pytest
from django.conf import settings
from django.test import Client

from .urlwalk import all_urls

SESSION = settings.SESSION_COOKIE_NAME
CSRF = settings.CSRF_COOKIE_NAME
VALUES = ("abcd\x00efgh", '"abcd\\000efgh"', "caf\xe9\xff%00" + "x" * 3000)


def _hostile_parts(value: str):
    """(description, extra WSGI environ) for one hostile value in each part."""
    yield "session cookie", {"HTTP_COOKIE": f"{SESSION}={value}"}
    yield "csrf cookie", {"HTTP_COOKIE": f"{CSRF}={value}"}
    yield "authorization", {"HTTP_AUTHORIZATION": f"Token {value}"}
    yield "bearer", {"HTTP_AUTHORIZATION": f"Bearer {value}"}
    yield "csrf header", {"HTTP_X_CSRFTOKEN": value, "HTTP_COOKIE": f"{CSRF}={value}"}
    yield "other headers", {"HTTP_REFERER": value, "HTTP_USER_AGENT": value, "HTTP_X_FORWARDED_FOR": value,
                            "HTTP_ACCEPT_LANGUAGE": value, "HTTP_HX_REQUEST": value, "HTTP_IF_NONE_MATCH": value}


def _problems(urls, extra_auth: dict) -> tuple[list[str], int]:
    client = Client(raise_request_exception=False)
    problems, sent = [], 0
    for url in urls:
        for value in VALUES:
            for part, environ in _hostile_parts(value):
                environ = {**extra_auth, **environ}
                for method in ("get", "post") if part in ("session cookie", "authorization") else ("get",):
                    response = getattr(client, method)(url.path, **environ)
                    client.cookies.clear()
                    sent += 1
                    if response.status_code >= 500:
                        problems.append(f"{method.upper()} {url.path} {part}={value[:20]!r} -> {response.status_code}")
    return problems, sent


@pytest.mark.parametrize("role", ["anonymous", "token"])
def test_hostile_cookies_and_headers_to_every_url_find_no_server_error(role, world):
    from rest_framework.authtoken.models import Token

    urls, skipped = all_urls(world["objects"])
    assert urls and not skipped, skipped
    auth = {} if role == "anonymous" else {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=world['staff']).key}"}
    problems, sent = _problems(urls, auth)
    print(f"\n{role}: {sent} requests with hostile cookies and headers to {len(urls)} URLs")
    assert not problems, f"{len(problems)} server errors:\n" + "\n".join(problems[:60])


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/verify/", "/api/v1/progress/"])
def test_the_reported_nul_cookie_is_ignored_not_a_500(path, world):
    """The report's request: `Cookie: __Host-sessionid="abcd\\000efgh"` (here under the
    test settings' cookie name) answers as for any visitor without a session."""
    client = Client(raise_request_exception=False)
    poisoned = client.get(path, HTTP_COOKIE=f'{SESSION}="abcd\\000efgh"')
    plain = Client().get(path)
    assert poisoned.status_code == plain.status_code < 500


def test_a_nul_in_the_token_is_a_400_with_a_reason(world):
    response = Client().get("/api/v1/progress/", HTTP_AUTHORIZATION="Token abcd\x00efgh")
    assert response.status_code == 400
    assert response.json() == {"detail": "The request contains a NUL byte (%00), which no field accepts."}
