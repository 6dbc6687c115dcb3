"""Backups: scripts/backup.sh dumps the database, scripts/restore.sh puts it back, row for row.

The test commits a fixture (contexts, items, claims, judgments with awkward text), dumps
the test database with the real script, restores it into a scratch database it creates
and drops itself, and compares every row of every table, and every sequence, exactly.
"""
import json
import os
import subprocess
import uuid
from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from tests.factories import BatchFactory, ContextFactory, ItemFactory, JudgmentFactory, ProspectiveItemFactory, UserFactory

from .helpers import ROOT, database_url, ensure_domains, scratch_name

pytestmark = pytest.mark.django_db(transaction=True)

NASTY = 'Ünïcödé — “quotes” \'single\' \\back\\slash\ttab\nnewline <b>html</b> & 🙂 ∑ 日本語'


def _fixture():
    from verification.models import Claim

    ensure_domains()
    batch = BatchFactory(name="backup-b01", overlap=2)
    verifiers = [UserFactory(username=f"bk-verifier{i}") for i in range(3)]
    for n in range(4):
        context = ContextFactory(
            context_id=f"mi-s9{n:03d}-w00",
            turns=[{"speaker": "initiator", "text": NASTY}, {"speaker": "recipient", "text": f"turn {n} {NASTY}"}],
            metadata={"nested": {"list": [1, 2.5, None, True, NASTY]}},
        )
        item = ItemFactory(context=context, batch=batch, options=[f"{NASTY} {x}" for x in "ABCD"])
        ProspectiveItemFactory(context=context, batch=batch)
        for v in verifiers[: 1 + n % 3]:
            claim = Claim.objects.create(
                item=item, verifier=v, batch=batch, status="answered", display_order="CADB",
                expires_at=timezone.now() + timedelta(minutes=20),
            )
            JudgmentFactory(
                item=item, verifier=v, batch=batch, claim=claim, label="ABCD"[n], comment=NASTY,
                implausible=["B", "D"], seconds_spent=1 / 3 + n, idempotency_key=uuid.uuid4(),
            )


def _snapshot(url: str) -> dict[str, list[str]]:
    """Every row of every table (as PostgreSQL's own text form, sorted) and every sequence."""
    snap: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='public' AND table_type='BASE TABLE'"
            " ORDER BY table_name"
        )]
        for table in tables:
            snap[table] = [r[0] for r in conn.execute(f'SELECT t::text FROM "{table}" t ORDER BY 1')]
        for (seq,) in conn.execute("SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema='public'"):
            snap[f"sequence:{seq}"] = [str(conn.execute(f'SELECT last_value, is_called FROM "{seq}"').fetchone())]
    return snap


def _run(*args: str, env_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": env_url}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def scratch_db():
    name = scratch_name("restore")
    admin = database_url("postgres")
    yield name, database_url(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_dump_and_restore_round_trip_every_row(tmp_path, scratch_db):
    # Given a committed fixture with judgments and awkward text
    _fixture()
    source = database_url()
    before = _snapshot(source)
    assert len(before["verification_judgment"]) == 7 and len(before["annotation_item"]) == 8

    # When it is dumped and restored into a brand-new database
    dump = tmp_path / "studio.dump"
    done = _run("scripts/backup.sh", str(dump), env_url=source)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["file"] == str(dump) and report["bytes"] == dump.stat().st_size > 0
    assert not list(tmp_path.glob("*.partial.*"))

    name, target = scratch_db
    restored = _run("scripts/restore.sh", str(dump), target, env_url=source)
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout.strip().splitlines()[-1])["judgments"] == 7

    # Then every row of every table, and every sequence, is the same
    after = _snapshot(target)
    assert after.keys() == before.keys()
    for table in before:
        assert after[table] == before[table], table


def test_restore_refuses_a_database_with_tables_unless_clean(tmp_path, scratch_db):
    _fixture()
    source = database_url()
    dump = tmp_path / "studio.dump"
    assert _run("scripts/backup.sh", str(dump), env_url=source).returncode == 0
    name, target = scratch_db
    assert _run("scripts/restore.sh", str(dump), target, env_url=source).returncode == 0

    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("DELETE FROM verification_judgment WHERE id IN (SELECT min(id) FROM verification_judgment)")

    refused = _run("scripts/restore.sh", str(dump), target, env_url=source)
    assert refused.returncode == 3 and "--clean" in refused.stderr

    replaced = _run("scripts/restore.sh", "--clean", str(dump), target, env_url=source)
    assert replaced.returncode == 0, replaced.stderr
    assert _snapshot(target)["verification_judgment"] == _snapshot(source)["verification_judgment"]


def test_a_truncated_dump_is_refused_before_anything_is_touched(tmp_path, scratch_db):
    _fixture()
    dump = tmp_path / "studio.dump"
    assert _run("scripts/backup.sh", str(dump), env_url=database_url()).returncode == 0
    broken = tmp_path / "broken.dump"
    broken.write_bytes(dump.read_bytes()[: dump.stat().st_size // 3])
    name, target = scratch_db
    failed = _run("scripts/restore.sh", str(broken), target, env_url=database_url())
    assert failed.returncode != 0
    with psycopg.connect(database_url("postgres")) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [name]).fetchone()[0] == 0
