"""Work in one snapshot on several connections at once, as `pg_dump --jobs` does.

A transaction at REPEATABLE READ exports its snapshot (`pg_export_snapshot()`); work handed to
`SharedSnapshot.submit` runs on a thread of its own, on that thread's own connection, in a
transaction that imports the snapshot (`SET TRANSACTION SNAPSHOT`) before its first statement:
it sees exactly what the exporting transaction sees, while the exporter goes on with other work.
The exporter's transaction must stay open until every submitted piece has started; leaving the
`with` block waits for them all, and closes their connections.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import connection, transaction


class SharedSnapshot:
    """`with SharedSnapshot(cursor) as shared: future = shared.submit(fn, ...)`; `cursor`: of the
    exporting transaction, already at REPEATABLE READ (PostgreSQL). `prepare(cursor)`: what each
    imported transaction runs first (the exporter's own SET LOCALs, so both sides read alike)."""

    def __init__(self, cursor, *, workers: int = 1, prepare: Callable[[object], None] | None = None):
        cursor.execute("SELECT pg_export_snapshot()")
        (self.token,) = cursor.fetchone()
        self.prepare = prepare
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="snapshot")

    def submit(self, function, /, *args, **kwargs) -> Future:
        return self._pool.submit(self._run, function, args, kwargs)

    def _run(self, function, args, kwargs):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor.execute("SET TRANSACTION SNAPSHOT %s", [self.token])
                if self.prepare is not None:
                    self.prepare(cursor)
                return function(*args, **kwargs)
        finally:
            connection.close()  # this thread's own connection: a pool thread is not a request

    def __enter__(self) -> SharedSnapshot:
        return self

    def __exit__(self, *exc) -> bool:
        self._pool.shutdown(wait=True)
        return False
