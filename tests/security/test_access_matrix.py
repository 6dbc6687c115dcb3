"""Who may open what: every URL Django knows × methods × anonymous / verifier / crowd / staff.

The URL list comes from the resolver (tests/security/urlwalk.py), so every page or
endpoint another app adds is covered as soon as it is merged. The rules:
- no 500 for anyone, anywhere;
- anonymous gets 200 only on the public pages (login; the OpenAPI schema and its docs,
  which describe the API and hold no data) and never a 2xx on a write;
- verifiers and crowd workers never get a 2xx on a staff-only URL (admin, dashboard,
  releases/exports, aggregation, ...), and a redirect they get goes to the login page;
- none of them changes staff-controlled data (batches, items, runs, people, releases);
- verifier B's private comment never reaches anyone but B and staff.
"""
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from .conftest import SECRET_COMMENT
from .urlwalk import PUBLIC_NAMES, all_urls

WRITE_METHODS = ("post", "put", "patch", "delete")
LOGIN = settings.LOGIN_URL if settings.LOGIN_URL.startswith("/") else "/accounts/login/"


def _methods(url):
    return ("get", "post", "put", "patch", "delete") if url.is_api else ("get", "post")


def _staff_data_snapshot():
    """Rows staff own: a verifier's request must leave them exactly as they were."""
    tables = [
        t for t in connection.introspection.table_names()
        if t.startswith(("annotation_", "aggregation_", "accounts_"))
        or any(w in t for w in ("release", "scor", "leaderboard", "reference", "guideline", "adjudication"))
    ]
    snap = {}
    with connection.cursor() as cursor:
        for table in sorted(tables):
            cols = [c.name for c in connection.introspection.get_table_description(cursor, table)
                    if c.name not in {"last_login", "updated_at"}]
            col_sql = ", ".join(f'"{c}"' for c in cols)
            cursor.execute(f'SELECT ({col_sql})::text FROM "{table}" t ORDER BY 1')
            snap[table] = [r[0] for r in cursor.fetchall()]
    return snap


def _client(user):
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _call(client, method, url, user):
    if user is not None and "_auth_user_id" not in client.session:
        client.force_login(user)  # an earlier POST to a logout URL logged it out
    kwargs = {"content_type": "application/json", "data": "{}"} if method in ("put", "patch") or (method == "post" and url.is_api) else {}
    return getattr(client, method)(url.path, **kwargs)


@pytest.fixture
def urls(world):
    found, skipped = all_urls(world["objects"])
    print(f"\n{len(found)} URLs, {len(skipped)} skipped")
    for s in skipped:
        print("  skipped:", s)
    assert found and not skipped, skipped
    return found


def matrix_problems(role, user, urls):
    """Every (method, URL) for one role; returns what broke the rules (empty when none)."""
    client = _client(user)
    problems, n = [], 0
    # Logout URLs last; _call logs back in when a POST logged the client out.
    for url in sorted(urls, key=lambda u: ("logout" in u.path, u.path)):
        for method in _methods(url):
            n += 1
            response = _call(client, method, url, user)
            status = response.status_code
            where = f"{role} {method.upper()} {url.path} [{url.pattern}] -> {status}"
            if status >= 500:
                problems.append(where + " (server error)")
                continue
            body = b"" if getattr(response, "streaming", False) else response.content
            if role != "staff" and SECRET_COMMENT.encode() in body:
                problems.append(where + " (leaks another verifier's comment)")
            if role == "anonymous":
                if 200 <= status < 300 and not (method == "get" and url.name in PUBLIC_NAMES) and not (
                    method == "post" and url.name == "login"
                ):
                    problems.append(where + " (anonymous reached it)")
                if 300 <= status < 400 and method == "get" and url.name not in PUBLIC_NAMES and url.name != "logout":
                    if not response["Location"].startswith(LOGIN) and not url.path.startswith("/admin/"):
                        problems.append(where + f" (redirects to {response['Location']}, not to login)")
            elif role in ("verifier", "crowd_worker") and url.staff_only:
                if 200 <= status < 300:
                    problems.append(where + " (staff-only URL reached)")
                elif 300 <= status < 400:
                    location = response["Location"]
                    if not (location.startswith(LOGIN) or location.startswith("/admin/login/")):
                        problems.append(where + f" (redirects to {location})")
    print(f"{role}: {n} requests")
    return problems


@pytest.mark.parametrize("role", ["anonymous", "verifier", "crowd_worker", "staff"])
def test_access_matrix(role, world, urls):
    user = None if role == "anonymous" else world[role]
    before = _staff_data_snapshot()
    problems = matrix_problems(role, user, urls)
    assert not problems, "\n".join(problems)
    if role != "staff":
        assert _staff_data_snapshot() == before


@pytest.mark.urls("tests.security.leaky_urls")
def test_the_matrix_catches_a_leaky_page_and_a_crash(world):
    """The matrix can fail: a dashboard open to everyone and a view that crashes are found."""
    found, skipped = all_urls(world["objects"])
    assert not skipped
    verifier = matrix_problems("verifier", world["verifier"], found)
    anonymous = matrix_problems("anonymous", None, found)
    assert any("/dashboard/leaky/" in p and "staff-only URL reached" in p for p in verifier)
    assert any("/dashboard/leaky/" in p and "anonymous reached it" in p for p in anonymous)
    assert any("/crash/" in p and "server error" in p for p in verifier)
    assert any("leaks another verifier's comment" in p for p in verifier)


def test_every_post_without_csrf_token_is_refused(world, urls):
    """A logged-in browser session (staff: the most powerful one) cannot be made to POST
    anything from another site: each POST without the CSRF token is refused with 403.
    The login form too (login CSRF); anonymous requests elsewhere carry no session to abuse."""
    problems = []
    for role in ("staff", "verifier", "anonymous"):
        client = Client(enforce_csrf_checks=True, raise_request_exception=False)
        if role != "anonymous":
            client.force_login(world[role])
        for url in urls:
            for method in ("post",) + (("put", "patch", "delete") if url.is_api else ()):
                response = getattr(client, method)(url.path, data={"username": "x", "password": "y"} if method == "post" else None)
                status = response.status_code
                if role == "anonymous" and url.name != "login":
                    # No session cookie, nothing to forge: any refusal will do (401/403/405).
                    ok = 400 <= status < 500
                else:
                    # A session (or the login form: login CSRF) must be refused before the view runs.
                    ok = status == 403
                if not ok:
                    problems.append(f"{role} {method.upper()} {url.path} -> {status}")
    assert not problems, "POST accepted without a CSRF token:\n" + "\n".join(problems)


def test_a_verifier_cannot_read_or_change_another_verifiers_judgment(world, urls):
    """Object level: every URL that names a judgment or claim, filled with verifier B's ids,
    is refused to verifier A for every method, and B's judgment stays as it was."""
    client = _client(world["verifier"])
    judgment = world["judgment_b"]
    before = (judgment.label, judgment.comment, judgment.updated_at)
    targets = [u for u in urls if ("judgment" in u.pattern or "claim" in u.pattern) and "<" in u.pattern]
    problems = []
    for url in targets:
        for method in ("get", "post", "put", "patch", "delete"):
            payload = {"label": "B", "comment": "overwritten by A"}
            kwargs = {"data": payload, "content_type": "application/json"} if method != "get" else {}
            response = getattr(client, method)(url.path, **kwargs)
            if 200 <= response.status_code < 300 or response.status_code >= 500:
                problems.append(f"{method.upper()} {url.path} -> {response.status_code}")
    judgment.refresh_from_db()
    assert (judgment.label, judgment.comment, judgment.updated_at) == before
    assert not problems, "\n".join(problems)
    print(f"{len(targets)} judgment/claim URLs checked")
