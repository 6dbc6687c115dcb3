"""Hostile bytes to every URL, for every role: none may answer 500 (issue 12, break 6).

schemathesis (test_api_fuzz.py) generates from the OpenAPI schema and never sent these:
- a NUL byte (PostgreSQL cannot store or compare one: a raw `ValueError` deep in psycopg)
  in the query string, in each path parameter, in a form body and in a JSON body;
- lone surrogates (`\\ud800`: not encodable as UTF-8) in JSON strings and keys, and their
  broken UTF-8 bytes in the query string;
- JSON nested 100,000 deep (`RecursionError` in the json module) and just past the limit.
The URL list comes from the resolver (urlwalk.py), so every URL merged later is fuzzed too.
Each request is checked for "no 5xx"; the first three kinds must also be refused with a
400 that says why wherever they reach the app (a NUL anywhere; JSON on the API).
"""
import re
import time

import pytest
from django.conf import settings
from django.test import Client
from django.urls import resolve

from accounts.models import Role
from tests.factories import UserFactory

from .urlwalk import all_urls

NUL = "%00"
MAX_DEPTH = settings.DIALTOM_JSON_MAX_DEPTH
DEEP_JSON = "[" * 100_000 + "]" * 100_000
JSON_BODIES = (
    DEEP_JSON,
    "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
    '{"batch": "\\u0000", "choice": "A\\u0000", "comment": "\\u0000", "name": "x\\u0000"}',
    '{"\\ud800": 1, "batch": "\\ud800", "choice": "\\udfff", "comment": "\\ud800", "name": "\\ud800"}',
)
# Query parameters the views read (and a few they might): a NUL must never reach a query.
QUERY_NAMES = ("batch", "reference_set", "format", "q", "page", "status", "run", "version", "name", "next", "o", "p")
ROLES = ("anonymous", "verifier", "crowd_worker", "staff", "release_reader")


def _client(user):
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _methods(url):
    """The methods a URL's view answers: for a class-based view, the handlers it has (a
    405 is decided before any input is read, so the others would test nothing)."""
    methods = ("get", "post", "put", "patch") if url.is_api else ("get", "post")
    view = resolve(url.path.split("?")[0]).func
    cls = getattr(view, "cls", None) or getattr(view, "view_class", None)
    if cls is None:
        return methods
    return tuple(m for m in methods if hasattr(cls, m)) or ("get",)


def _reads_query(url) -> bool:
    """The admin reads the query string on its change lists only (search, filters, ordering):
    its other pages get the NUL requests, not a full render with broken UTF-8 each."""
    return not url.path.startswith("/admin/") or bool(re.fullmatch(r"/admin/\w+/\w+/", url.path))


def _hostile_paths(objects):
    """Every URL again, with each string path parameter replaced by a NUL."""
    def hostile(_conv="str"):
        return NUL

    poisoned = {
        "user": objects["user"],
        "by_name": {key: hostile for key in objects["by_name"]} | {"token": hostile, "url": hostile},
        "by_segment": {key: hostile for key in objects["by_segment"]},
    }
    urls, _ = all_urls(poisoned)
    return [u for u in urls if NUL in u.path]


def _requests(urls, poisoned_urls):
    """(method, url, path, kwargs, must_be_400_because) for one role."""
    for url in urls:
        query_nul = "&".join(f"{name}={NUL}" for name in QUERY_NAMES)
        yield "get", url, f"{url.path}?{query_nul}", {}, "NUL"
        if _reads_query(url):
            yield "get", url, f"{url.path}?batch=%ED%A0%80&reference_set=%F0%90&q=%C0%80", {}, None
        yield "post", url, url.path, {"data": {name: "\x00" for name in ("username", "password", *QUERY_NAMES)}}, "NUL"
        if url.is_api:
            for method in _methods(url):
                if method == "get":
                    continue
                for body in JSON_BODIES:
                    yield method, url, url.path, {"data": body, "content_type": "application/json"}, "JSON"
    for url in poisoned_urls:
        for method in _methods(url):
            yield method, url, url.path, {}, "NUL"


@pytest.fixture
def people(world):
    return {
        "anonymous": None,
        "verifier": world["verifier"],
        "crowd_worker": world["crowd_worker"],
        "staff": world["staff"],
        "release_reader": UserFactory(username="acl-reader", role=Role.RELEASE_READER),
    }


def fuzz_problems(user, urls, poisoned_urls):
    client = _client(user)
    problems, sent = [], 0
    for method, url, path, kwargs, reason in _requests(urls, poisoned_urls):
        if user is not None and "_auth_user_id" not in client.session:
            client.force_login(user)  # a POST to a logout URL logged it out
        response = getattr(client, method)(path, **kwargs)
        sent += 1
        where = f"{method.upper()} {path[:120]} {str(kwargs.get('data', ''))[:60]!r} [{url.pattern}] -> {response.status_code}"
        if response.status_code >= 500:
            problems.append(where + " (server error)")
        elif reason == "NUL" and response.status_code != 400:
            problems.append(where + " (a NUL byte was not refused with 400)")
        elif reason == "JSON" and response.status_code not in (400, 401, 403, 404, 405, 415):
            problems.append(where + " (hostile JSON accepted)")
    return problems, sent


def test_hostile_bytes_to_every_url_find_no_server_error(world, people):
    """Every role in one test: the URL walk (seconds) is done once."""
    found, skipped = all_urls(world["objects"])
    assert found and not skipped, skipped
    poisoned = _hostile_paths(world["objects"])
    assert len(poisoned) >= 5, "the walk found too few string path parameters to poison"
    problems = []
    for role in ROLES:
        started = time.monotonic()
        role_problems, sent = fuzz_problems(people[role], found, poisoned)
        print(f"{role}: {time.monotonic() - started:.1f}s")
        print(f"\n{role}: {sent} hostile requests to {len(found)} URLs (+{len(poisoned)} with a NUL in the path)")
        problems += [f"{role} {p}" for p in role_problems]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:100])


@pytest.mark.parametrize("path", [
    "/api/v1/next-item/?batch=%00",
    "/api/v1/releases/%00/",
    "/api/v1/references/?reference_set=%00",
    "/api/v1/gold-accuracy/?batch=%00",
])
def test_the_reported_nul_bytes_are_a_400_with_a_reason(path, world):
    """The four 500s the attack found, as they were sent."""
    response = _client(world["staff"]).get(path)
    assert response.status_code == 400
    assert response.json() == {"detail": "The request contains a NUL byte (%00), which no field accepts."}


@pytest.mark.parametrize("body, reason", [
    (DEEP_JSON, f"nested more than {MAX_DEPTH} levels"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels"),
    ('{"comment": "\\u0000"}', "NUL character"),
    ('{"comment": "\\ud800"}', "lone surrogate"),
    ('{"\\udfff": "x"}', "lone surrogate"),
    ('{"comment": "a\x00b"}', "JSON parse error"),
])
def test_hostile_json_is_a_400_with_a_reason(body, reason, world):
    response = _client(world["verifier"]).post("/api/v1/judgments/", body, content_type="application/json")
    assert response.status_code == 400
    assert reason in response.json()["detail"]


def test_nesting_within_the_limit_still_parses(world):
    """The limit refuses attacks, not ordinary bodies: a judgment nested as deep as allowed
    gets the serializer's own answer (the fields are wrong, not the JSON)."""
    body = '{"claim": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    response = _client(world["verifier"]).post("/api/v1/judgments/", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested more than" not in response.content.decode()


@pytest.mark.urls("tests.security.leaky_urls")
def test_the_fuzzer_finds_a_planted_server_error(world):
    """The fuzzer can fail: a view that crashes on any POST is reported."""
    found, _ = all_urls(world["objects"])
    problems, _ = fuzz_problems(world["verifier"], [u for u in found if u.path in ("/crash/", "/verify/")], [])
    assert any("/crash/" in p and "server error" in p for p in problems), problems
