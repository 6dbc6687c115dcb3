"""PostgreSQL drops the app's connections (a restart, a failover, an idle-connection reaper).

We do not restart the shared server: `pg_terminate_backend` kills every connection to
this worktree's test database, which is what the app sees when PostgreSQL restarts.
gunicorn runs with persistent connections (CONN_MAX_AGE=60); CONN_HEALTH_CHECKS makes
the next request notice the dead connection and open a new one, so no request fails and
nothing needs restarting. The negative control runs the same with health checks off and
sees the 500 — so the test can tell the difference.
"""
import http.client

import psycopg
import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from tests.factories import UserFactory

from .helpers import Gunicorn, database_url, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)


def _session_for(user) -> str:
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return session.session_key


def _get(port: int, path: str, session_key: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", path, headers={"Cookie": f"sessionid={session_key}"})
    status = conn.getresponse().status
    conn.close()
    return status


def terminate_app_connections() -> int:
    """Kill every backend on the test database but the test's own; returns how many."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        mine = cursor.fetchone()[0]
    with psycopg.connect(database_url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [mine],
        ).fetchall()
    return len(rows)


def _run(settings_module: str) -> list[int]:
    user = UserFactory(username="pg-fault-verifier")
    key = _session_for(user)
    env = subprocess_env(DJANGO_SETTINGS_MODULE=settings_module, CONN_MAX_AGE="60")
    statuses = []
    with Gunicorn(env=env, workers=1, threads=1) as server:
        statuses.append(_get(server.port, "/", key))  # opens the persistent connection
        statuses.append(_get(server.port, "/", key))
        assert terminate_app_connections() >= 1, "the app held no connection to kill"
        statuses += [_get(server.port, "/", key) for _ in range(3)]
    return statuses


def test_the_app_survives_postgresql_dropping_its_connections():
    statuses = _run("dialtom_site.settings.test")
    assert statuses == [200] * 5, statuses


def test_without_health_checks_the_first_request_after_the_drop_fails():
    """Negative control: the same fault, health checks off: the first request fails, the
    ones after recover (Django closes the broken connection at the end of the request)."""
    statuses = _run("tests.reliability.settings_no_health_checks")
    assert statuses[:2] == [200, 200]
    assert statuses[2] == 500, statuses
    assert statuses[3:] == [200, 200]
