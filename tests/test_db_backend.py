"""dialtom_site/db/base.py (issue 23, part 5): the health check polls the socket, no `SELECT 1`."""
import time
from unittest import mock

import psycopg
import pytest
from django.db import connections

connection = connections["default"]  # the wrapper itself, not the proxy


def _other_connection():
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


@pytest.mark.django_db(transaction=True)
def test_the_health_check_sends_nothing_and_a_terminated_backend_is_replaced():
    connection.ensure_connection()
    assert connection.vendor == "postgresql" and type(connection).__module__ == "dialtom_site.db.base"
    first = connection.connection
    pid = first.info.backend_pid
    # a healthy idle connection: usable, and finding out sends nothing
    with mock.patch.object(type(first), "cursor", side_effect=AssertionError("a round trip")), \
            mock.patch.object(type(first), "execute", side_effect=AssertionError("a round trip")):
        assert connection.is_usable()

    with _other_connection() as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not connection.is_usable()

    # what a request does first (CONN_HEALTH_CHECKS): the dead connection is dropped, a new one made
    connection.health_check_enabled, connection.health_check_done = True, False
    connection.close_if_health_check_failed()
    assert connection.connection is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


@pytest.mark.django_db(transaction=True)
def test_session_pooling_asks_for_generic_plans():
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"
