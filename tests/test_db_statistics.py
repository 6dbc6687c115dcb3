"""analyze_own_tables: the studio's tables analyzed, never the catalogs every database shares (a
whole-database ANALYZE inside the 4M summaries rebuild held their lock for half an hour, and every
ANALYZE on the server, the test databases' included, waited behind it)."""
import pytest
from django.db import connection, transaction

from dialtom_site.db.statistics import analyze_own_tables

pytestmark = pytest.mark.django_db


def _locks() -> dict[str, bool]:
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT c.relname, c.relisshared FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE l.pid = pg_backend_pid() AND l.mode = 'ShareUpdateExclusiveLock'
        """)
        return dict(cursor.fetchall())


def test_only_the_studios_own_tables_are_analyzed():
    with transaction.atomic():
        analyzed = analyze_own_tables(connection)
        locks = _locks()  # an ANALYZE's locks are held until its transaction ends: they show what it read
    assert analyzed > 20
    assert "verification_judgment" in locks and "annotation_item" in locks
    assert not any(shared for shared in locks.values()), sorted(name for name, shared in locks.items() if shared)
    assert not any(name.startswith("pg_") for name in locks)
