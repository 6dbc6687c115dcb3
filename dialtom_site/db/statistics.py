"""Planner statistics on demand, for servers without autovacuum and after bulk loads."""
from __future__ import annotations


def analyze_own_tables(connection) -> int:
    """ANALYZE the tables of the connection's schema (the studio's own; not the catalogs every
    database of the server shares): an ANALYZE holds a lock on each table it read until its
    transaction ends, and one on the shared catalogs, held inside a long transaction, holds up
    every ANALYZE on the server, other databases' included. Returns the tables analyzed (0 off
    PostgreSQL)."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(relname) FROM pg_stat_user_tables WHERE schemaname = current_schema() ORDER BY relname")
        tables = [name for (name,) in cursor.fetchall()]
        if tables:
            cursor.execute(f"ANALYZE {', '.join(tables)}")
    return len(tables)
