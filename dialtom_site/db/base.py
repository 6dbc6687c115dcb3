"""Django's PostgreSQL backend with two changes (issue 23, part 5).

- The health check (`CONN_HEALTH_CHECKS`) runs at the start of every request on a kept
  connection. Django's sends `SELECT 1` and waits for it: a round trip per request, on the
  web processes' busiest path. Here it looks at the connection's socket instead: an idle
  connection has nothing to read unless the server (PostgreSQL, or PgBouncer) has closed it
  or said something on its own, typically the FATAL of `pg_terminate_backend` or of a
  restart. Anything to read, or a socket that is gone, and the connection is dropped and
  made again, as Django does when `SELECT 1` fails.
- A new connection in session pooling (`DATABASE_POOLING=session`: directly, or PgBouncer's
  session pool) asks for generic plans of prepared statements. Only the queue's two
  statements are prepared (`verification/statements.py`; Django binds every other query on
  the client); the claim statement's custom plans take ~30 ms of planning each, five runs
  per connection before PostgreSQL settles on the generic one (bench/claim_plan.py). In
  transaction pooling PgBouncer sets it on its server connections (`connect_query` in
  deploy/pgbouncer/pgbouncer.ini): a SET from the client would land on whichever server
  connection ran it.
"""
from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus



class DatabaseWrapper(base.DatabaseWrapper):
    def _configure_connection(self, connection):
        commit = super()._configure_connection(connection)
        mode = self.settings_dict.get("PLAN_CACHE_MODE", "force_generic_plan")
        if self.settings_dict.get("POOLING", "session") != "session" or mode == "auto":
            return commit
        with connection.cursor() as cursor:
            cursor.execute(f"SET plan_cache_mode = {mode}")  # one of three fixed words (settings)
        return True

    def is_usable(self) -> bool:
        """No round trip: an idle connection whose socket has something to read (EOF, the
        server's FATAL) is not usable."""
        conn = self.connection
        if conn is None or conn.closed or conn.broken:
            return False
        if conn.info.transaction_status not in (TransactionStatus.IDLE, TransactionStatus.INTRANS):
            return False
        try:
            readable, _, failed = select.select([conn.fileno()], [], [conn.fileno()], 0)
        except (OSError, ValueError):
            return False
        return not readable and not failed
