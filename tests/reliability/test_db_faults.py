"""PostgreSQL drops the app's connections (a restart, a failover, an idle-connection reaper).

We do not restart the shared server: `pg_terminate_backend` kills every connection to
this worktree's test database, which is what the app sees when PostgreSQL restarts.
gunicorn runs with persistent connections (CONN_MAX_AGE=60); CONN_HEALTH_CHECKS makes
the next request notice the dead connection and open a new one, so no request fails and
nothing needs restarting. The negative control runs the same with health checks off and
sees the 500 — so the test can tell the difference (and that a retry with the same
idempotency key then stores the judgment once).
"""
import http.client
import json
import uuid

import psycopg
import pytest

from bench.load.fixture import load_fixture
from verification.models import Judgment

from .helpers import Gunicorn, database_url, ensure_domains, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)


def _call(port: int, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request(method, path, body=json.dumps(body) if body else None,
                 headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    if response.status == 503:
        assert int(response.getheader("Retry-After")) > 0 and response.getheader("Content-Type") == "application/json"
    return response.status, (json.loads(data) if data and response.getheader("Content-Type", "").startswith("application/json") else None)


def terminate_app_connections() -> int:
    """Kill every backend on the test database but the test's own; returns how many."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        mine = cursor.fetchone()[0]
    with psycopg.connect(database_url(), autocommit=True) as conn:
        rows = conn.execute(
            # waits until each has gone (5 s at most): the app's health check looks at its
            # socket, and a backend told to stop takes a moment to say FATAL and close it
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [mine],
        ).fetchall()
    return len(rows)


def _run(settings_module: str) -> list[int]:
    """progress, next-item | connections killed | submit, next-item, progress."""
    ensure_domains()
    (token,) = load_fixture(batch="pg-fault", n_verifiers=1, n_items=4, overlap=1)
    env = subprocess_env(DJANGO_SETTINGS_MODULE=settings_module, CONN_MAX_AGE="60")
    statuses = []
    with Gunicorn(env=env, workers=1, threads=1) as server:
        status, _ = _call(server.port, "GET", "/api/v1/progress/", token)  # opens the persistent connection
        statuses.append(status)
        status, item = _call(server.port, "GET", "/api/v1/next-item/?batch=pg-fault", token)
        statuses.append(status)
        assert terminate_app_connections() >= 1, "the app held no connection to kill"
        body = {"claim": item["claim"], "choice": "A", "idempotency_key": str(uuid.uuid4())}
        status, _ = _call(server.port, "POST", "/api/v1/judgments/", token, body)
        statuses.append(status)
        if status >= 500:  # negative control: the client retries, as the form and the API docs say
            status, _ = _call(server.port, "POST", "/api/v1/judgments/", token, body)
            statuses.append(status)
        statuses.append(_call(server.port, "GET", "/api/v1/next-item/?batch=pg-fault", token)[0])
        statuses.append(_call(server.port, "GET", "/api/v1/progress/", token)[0])
    return statuses


def test_the_app_survives_postgresql_dropping_its_connections():
    statuses = _run("dialtom_site.settings.test")
    assert statuses == [200, 200, 201, 200, 200], statuses
    assert Judgment.objects.filter(batch__name="pg-fault").count() == 1


def test_without_health_checks_the_first_request_after_the_drop_fails():
    """Negative control: the same fault, health checks off: the first request fails, the
    ones after recover (Django closes the broken connection at the end of the request).
    It fails as a JSON 503 with Retry-After, not an HTML 500 (issue 20, break 5): a client
    that retries 503s stores its answer on the retry."""
    statuses = _run("tests.reliability.settings_no_health_checks")
    assert statuses == [200, 200, 503, 201, 200, 200], statuses
    assert Judgment.objects.filter(batch__name="pg-fault").count() == 1
