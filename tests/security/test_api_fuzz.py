"""Hostile API input: schemathesis generates requests from the app's own OpenAPI schema
(/api/schema/) — valid ones and deliberately invalid ones — and sends them through the
WSGI app with a staff token and with a verifier token. No request may get a 5xx.

Bounded: the examples per operation shrink as operations are added, so the whole file
stays within ~60 s. Seeded (derandomized) so a failure reproduces.
"""
import time

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

TOTAL_BUDGET = 150  # examples per role, shared among the operations
SECONDS = 25  # per role; valid requests to every operation come first


@pytest.fixture
def wsgi_app(world):
    """The real WSGI app, in this test's transaction (as Django's test client does it)."""
    from dialtom_site.wsgi import application

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield application
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


_SCHEMAS: dict[str, list] = {}


def _operations(app, token: str):
    """The schema's operations (generated once per URLconf: drf-spectacular takes seconds).
    The schema is for authenticated clients only (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"])."""
    from django.conf import settings as django_settings

    key = str(django_settings.ROOT_URLCONF)
    if key not in _SCHEMAS:
        schema = schemathesis.openapi.from_wsgi(
            "/api/schema/?format=json", app, headers={"Authorization": f"Token {token}"}
        )
        _SCHEMAS[key] = [result.ok() for result in schema.get_all_operations()]
    return _SCHEMAS[key]


def _fuzz(app, token: str, only: str | None = None, seconds: float = SECONDS) -> tuple[int, int, list[str]]:
    """Valid requests to every operation first, then invalid ones, until the time is up."""
    ops = [op for op in _operations(app, token) if only is None or op.path == only]
    per_op = max(2, min(10, TOTAL_BUDGET // max(1, 2 * len(ops))))
    deadline = time.monotonic() + seconds
    failures: list[str] = []
    sent = 0
    not_reached = []
    timings: dict[str, float] = {}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for op in ops:
            if mode == GenerationMode.NEGATIVE and not len(op.body):
                continue  # invalid query strings are slow to generate and the matrix covers odd paths
            if time.monotonic() > deadline:
                not_reached.append(f"{op.method.upper()} {op.path} ({mode.value})")
                continue

            @settings(
                max_examples=per_op, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate],
            )
            @given(case=op.as_strategy(generation_mode=mode))
            def run(case):
                nonlocal sent
                sent += 1
                response = case.call(headers={"Authorization": f"Token {token}"}, app=app)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} ({mode.value}) -> {response.status_code}: "
                                    f"query={case.query} body={str(case.body)[:200]}")

            op_started = time.monotonic()
            try:
                run()
            except Unsatisfiable:
                pass  # nothing invalid to send (e.g. no parameters at all in negative mode)
            except Exception as exc:  # a generation problem must not hide the 500s found so far
                failures.append(f"{op.method.upper()} {op.path}: {type(exc).__name__}: {exc}"[:500])
            timings[f"{op.method.upper()} {op.path} {mode.value}"] = time.monotonic() - op_started
    slowest = sorted(timings.items(), key=lambda kv: -kv[1])[:5]
    print("\nslowest: " + ", ".join(f"{k} {v:.1f}s" for k, v in slowest))
    print(f"\n{len(ops)} operations x {per_op} examples; not reached in {seconds:.0f}s: {len(not_reached)}")
    return len(ops), sent, failures


@pytest.mark.parametrize("role", ["staff", "verifier"])
def test_schemathesis_finds_no_server_error(role, world, wsgi_app):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=world[role]).key
    started = time.monotonic()
    n_ops, sent, failures = _fuzz(wsgi_app, token)
    print(f"\n{role}: {n_ops} operations, {sent} generated requests, {time.monotonic() - started:.1f}s")
    assert not failures, "\n".join(failures[:30])


@pytest.mark.urls("tests.security.leaky_urls")
def test_the_fuzzer_finds_a_planted_server_error(world, wsgi_app):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=world["staff"]).key
    n_ops, sent, failures = _fuzz(wsgi_app, token, only="/api/v1/fragile/")
    assert any("/api/v1/fragile/" in f and "-> 500" in f for f in failures), failures
