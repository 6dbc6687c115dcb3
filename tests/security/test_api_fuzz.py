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

TOTAL_BUDGET = 120  # examples per role, shared among the operations


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


def _operations(app):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app)
    ops = []
    for result in schema.get_all_operations():
        ops.append(result.ok())
    return ops


def _fuzz(app, token: str, only: str | None = None) -> tuple[int, int, list[str]]:
    ops = [op for op in _operations(app) if only is None or op.path == only]
    per_op = max(3, min(20, TOTAL_BUDGET // max(1, 2 * len(ops))))
    failures: list[str] = []
    sent = 0
    for op in ops:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

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

            try:
                run()
            except Unsatisfiable:
                pass  # nothing invalid to send (e.g. no parameters at all in negative mode)
            except Exception as exc:  # a generation problem must not hide the 500s found so far
                failures.append(f"{op.method.upper()} {op.path}: {type(exc).__name__}: {exc}"[:500])
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
