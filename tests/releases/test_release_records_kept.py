"""The release records (releases.records) are kept as the items arrive: an import queues their
making once it commits, a worker makes them, and the first release after it makes none. One
maker at a time: a build that starts while a maker holds the records waits for it and sees what
it made."""
import threading
import time

import pytest
from django.db import connection

from annotation.authors import dialtom_import
from annotation.models import Context, Item
from annotation.services import RELEASE_RECORDS_TASK, contexts_import, items_import
from dialtom_site import jobs
from releases import services
from releases.models import ContextRecord, ItemRecord, RecordsChange, RecordsWhole, Release, ReleaseStatus
from tests.annotation.conftest import FIXTURES, write_jsonl
from tests.releases.records_helpers import made_by_builds, maker_holding
from tests.annotation.test_imports import context, prosp, retro

RELEASE_FILES = FIXTURES / "dialtom-release"
TABLES = [ContextRecord._meta.db_table, ItemRecord._meta.db_table]


@pytest.mark.django_db
def test_every_import_that_writes_items_queues_their_records_and_one_that_writes_none_does_not(tmp_path, monkeypatch):
    queued = []
    monkeypatch.setattr(jobs, "follow_up_on_commit", lambda task, **kwargs: queued.append(task))
    dialtom_import(directory=RELEASE_FILES)
    assert queued == [RELEASE_RECORDS_TASK]
    dialtom_import(directory=RELEASE_FILES, force=True)  # read again: nothing new, nothing to make
    assert queued == [RELEASE_RECORDS_TASK]

    contexts_import(path=write_jsonl(tmp_path / "contexts.jsonl", [context(0), context(1)]))
    items_import(path=write_jsonl(tmp_path / "items.jsonl", [retro(0), prosp(1)]))
    assert queued == [RELEASE_RECORDS_TASK] * 3


def test_a_worker_makes_the_records_of_an_import_once_it_commits(celery_worker):
    """Through Redis and a real worker: the import's follow-up makes a record of every item and of
    every context, each from the row it was made of (a second run makes none), then vacuums them:
    their pages known all visible, their number known to the planner."""

    def vacuumed() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_class WHERE relname = ANY(%s) AND relallvisible > 0 AND reltuples > 0",
                           [TABLES])
            return cursor.fetchone()[0] == len(TABLES)

    assert not vacuumed()
    report = dialtom_import(directory=RELEASE_FILES)
    assert report["created"]["items"] > 0
    deadline = time.monotonic() + 60
    while not vacuumed() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert vacuumed()
    assert ItemRecord.objects.count() == Item.objects.count() > 0
    assert ContextRecord.objects.count() == Context.objects.filter(items__isnull=False).distinct().count() > 0
    assert services.release_records_refresh() == 0  # none missing, none stale


@pytest.mark.django_db
def test_the_first_release_after_the_records_were_made_checks_none(world, monkeypatch):
    made_before = services.release_records_refresh()
    assert made_before == ItemRecord.objects.count() + ContextRecord.objects.count() > 0
    made = made_by_builds(monkeypatch)
    release = services.release_build(release_id=services.release_create(build=False, acknowledge_warnings=True).pk)
    assert release.status == ReleaseStatus.READY and release.n_items > 0
    assert made == []  # known up to date (records.records_current): not one item's versions read


@pytest.mark.django_db(transaction=True)
def test_a_build_waits_for_a_maker_holding_the_records_and_sees_what_it_made(world, monkeypatch):
    """A maker (the import's follow-up) has made every record and not committed yet when a build
    starts. The build's REPEATABLE READ snapshot must come after that commit: taken before it, the
    build would find every record missing and fail to write them over rows it cannot see."""
    release = services.release_create(build=False, acknowledge_warnings=True)
    built = {}

    def build_release():
        try:
            built["release"] = services.release_build(release_id=release.pk)
        finally:
            connection.close()  # this thread's own

    build = threading.Thread(target=build_release)
    try:
        with maker_holding() as maker:  # commits as the block ends
            assert maker["made"] > 0
            made = made_by_builds(monkeypatch)
            build.start()
            with connection.cursor() as cursor:  # the build waits for the records' lock
                deadline = time.monotonic() + 30
                waiting = False
                while not waiting and time.monotonic() < deadline:
                    cursor.execute("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                                   "WHERE NOT l.granted AND c.relname = ANY(%s)", [TABLES])
                    waiting = cursor.fetchone()[0] > 0
                    time.sleep(0.05)
            assert waiting, "the build did not wait for the maker"
            assert Release.objects.get(pk=release.pk).status == ReleaseStatus.BUILDING
    finally:
        if build.ident is not None:  # started
            build.join(120)
    assert built["release"].status == ReleaseStatus.READY, built["release"].error
    assert made == []  # what the maker committed (every record, known up to date) was in the build's snapshot
    assert ItemRecord.objects.count() + ContextRecord.objects.count() == maker["made"]


@pytest.mark.django_db
def test_the_records_are_a_cache_postgresql_writes_no_wal_for_and_checks_no_key_of():
    """A crash empties the UNLOGGED records, and with them the mark that they are whole; the log of
    changes since they were made is kept."""
    cached = [*TABLES, RecordsWhole._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, relpersistence FROM pg_class WHERE relname = ANY(%s)",
                       [[*cached, RecordsChange._meta.db_table]])
        assert dict(cursor.fetchall()) == {**dict.fromkeys(cached, "u"), RecordsChange._meta.db_table: "p"}
        cursor.execute("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s)",
                       [TABLES])
        assert cursor.fetchone()[0] == 0
