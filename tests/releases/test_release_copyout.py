"""The files written by PostgreSQL (releases.copyout: the items files from the items' records,
results.csv, judgments.csv) are byte for byte the files the portable Python path writes, on
awkward text and awkward numbers."""
import filecmp
import json

import pytest
from django.db.models import Q
from django.utils import timezone

from aggregation.models import ItemResult
from annotation.models import Batch, Context, Domain, Item
from releases import copyout, export, services
from releases.models import ItemRecord, Release
from verification.models import Judgment

pytestmark = pytest.mark.django_db

AWKWARD = {
    "mi-trust": 'mi-trust, "quoted"',
    "mi-belief": "mi-belief\nsecond line",
    "mi-emotion": "mi-emotion\rcarriage",
    "esc-desire": "esc-désir ✓ 情 \\ back\tslash \x08\x0c\x0b",
    "esc-prospective-1": ",leading comma",
}
POSTERIORS = [1e-05, 0.1234567895, 1.0, 0.0, 1 / 3, 0.99999999951]
SECONDS = [None, 12.3455, 0.0001, 1e-07, 2.0005, 123456.789]


def _awkward(world):
    # the items' own fields: quotes, commas, line ends, control characters, unicode, JSON escapes
    Item.objects.filter(item_id="mi-trust").update(
        question='Does the "client", trust\r\nthe counselor?\t\x07 \\ / ✓',
        options=['A, "one"', "B\nsecond line", "C\u2028sep \x1f", "D 情 😀"],
        metadata={"state": "Trust", "key": "s1, w2"}, retained_by_authors=True,
    )
    Item.objects.filter(item_id="esc-prospective-1").update(
        options=["Supporter: yes, \"fine\"\nSeeker: thanks\r", "no role line\nSupporter: ok", "Seeker: Ĳ\x0bnext", "d"],
        profile={"trust": "leans on\nher", "belief": 'it "works"', "émotion": "✓"}, metadata={"state": None},
    )
    context = Context.objects.get(items__item_id="mi-belief")
    Context.objects.filter(pk=context.pk).update(turns=[
        {"speaker": "initiator", "text": 'So, "what"\r\nbrings you'},
        {"speaker": "recipient", "text": "tab\there, é, 😀, \\"}, {"speaker": "nobody", "text": ""}, {"speaker": None},
    ])
    Batch.objects.filter(pk=world.batch_a.pk).update(name='batch "a",\nnew line ✓')
    for old, new in AWKWARD.items():
        Item.objects.filter(item_id=old).update(item_id=new)
    for result, posterior in zip(ItemResult.objects.order_by("pk"), POSTERIORS * 10):
        ItemResult.objects.filter(pk=result.pk).update(posterior=posterior)
    for judgment, seconds in zip(Judgment.objects.order_by("pk"), SECONDS * 10):
        Judgment.objects.filter(pk=judgment.pk).update(seconds_spent=seconds)


def _both(tmp_path, monkeypatch, *, version="v1"):
    release = Release.objects.create(version=version)
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # the report's and the manifest's time
    portable, copied = tmp_path / version / "portable", tmp_path / version / "copied"
    portable.mkdir(parents=True)
    copied.mkdir()
    services._write_release(release=release, directory=portable, portable=True)
    # the COPY path never falls back to Python
    monkeypatch.setattr(export, "write_csv", lambda *a, **k: pytest.fail("results written by Python"))
    monkeypatch.setattr(services, "_write_items", lambda *a, **k: pytest.fail("items written by Python"))
    services._write_release(release=release, directory=copied)
    return portable, copied


def _same(portable, copied):
    names = sorted(p.name for p in portable.iterdir())
    assert names == sorted(p.name for p in copied.iterdir())
    for name in names:
        assert filecmp.cmp(portable / name, copied / name, shallow=False), name


def test_every_release_file_is_the_same_either_way(world, tmp_path, monkeypatch):
    _awkward(world)
    portable, copied = _both(tmp_path, monkeypatch)
    _same(portable, copied)
    text = (copied / "results.csv").read_bytes().decode()
    assert '"mi-trust, ""quoted"""' in text and '"mi-emotion\rcarriage","batch ""a"",\nnew line ✓"' in text
    assert "1e-05" in text and ",1.0," in text
    judgments = (copied / "judgments.csv").read_bytes().decode()
    assert ",12.346\n" in judgments and ",0.0\n" in judgments and ",1e-07" not in judgments


def test_a_text_holding_any_byte_is_written_by_the_database_too(world, tmp_path, monkeypatch):
    Item.objects.filter(item_id="mi-trust").update(item_id="mi-\x01trust\x02")
    portable, copied = _both(tmp_path, monkeypatch)
    _same(portable, copied)
    assert "mi-\x01trust" in (copied / "results.csv").read_text(encoding="utf-8")


def test_release_round_is_half_away_from_zero_on_the_shortest_text():
    assert export.release_round(12.3455, 3) == 12.346  # Python's round() gives 12.345 (binary value below)
    assert export.release_round(1e-05, 9) == 1e-05 and export.release_round(2 / 3, 9) == 0.666666667


def test_an_items_record_is_made_again_when_its_rows_change(world, tmp_path, monkeypatch):
    portable, copied = _both(tmp_path, monkeypatch)
    _same(portable, copied)
    made = dict(ItemRecord.objects.values_list("item_id", "versions"))
    assert len(made) == len((copied / "items.jsonl").read_bytes().splitlines()) > 0  # one a released item
    # an edited question, a domain's role name: those items' records are made again, no other
    Item.objects.filter(item_id="mi-trust").update(question="Edited?")
    Domain.objects.filter(code="esc").update(recipient_role="help-seeker")
    monkeypatch.undo()  # Python may write the portable files again
    portable, copied = _both(tmp_path, monkeypatch, version="v2")
    _same(portable, copied)
    assert '"question":"Edited?"' in (copied / "items.jsonl").read_text(encoding="utf-8")
    changed = {pk for pk, versions in ItemRecord.objects.values_list("item_id", "versions") if made[pk] != versions}
    edited = Item.objects.filter(pk__in=made).filter(Q(context__domain__code="esc") | Q(item_id="mi-trust"))
    assert changed == set(edited.values_list("pk", flat=True)) and len(changed) < len(made)


def test_the_parquet_file_is_the_same_in_row_groups_of_any_size(world, tmp_path, monkeypatch):
    _awkward(world)
    monkeypatch.setattr(export, "ROW_GROUP", 2)  # several row groups, and a short last one
    _same(*_both(tmp_path, monkeypatch))
    import pyarrow.parquet as pq

    portable = pq.ParquetFile(tmp_path / "v1" / "portable" / "items.parquet")
    assert portable.metadata.num_row_groups == -(-portable.metadata.num_rows // 2) > 1


def test_files_written_in_pieces_are_whole_and_hashed_in_order(world, tmp_path, monkeypatch):
    _awkward(world)
    # lines read two at a time, files written and hashed a few bytes at a time
    monkeypatch.setattr(copyout, "LINES_AT_ONCE", 2)
    monkeypatch.setattr(export.HashingFile, "BUFFER", 7)
    portable, copied = _both(tmp_path, monkeypatch)
    _same(portable, copied)
    files = json.loads((copied / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert {name: entry["sha256"] for name, entry in files.items()} == {
        name: export.sha256_file(copied / name) for name in files}
    counted = json.loads((portable / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert {name: entry["rows"] for name, entry in files.items()} == {name: entry["rows"] for name, entry in counted.items()}
    assert files["judgments.csv"]["rows"] > 2  # several pieces


@pytest.mark.django_db(transaction=True)
def test_results_and_report_are_written_beside_in_the_same_snapshot(world, tmp_path, monkeypatch):
    """Outside a transaction the build writes results.csv and the report on a second connection
    (dialtom_site.db.snapshot) while it writes the items files: the same bytes as Python's files,
    and the second connection sees the snapshot of the first, not a change committed meanwhile."""
    import threading

    import psycopg
    from django.db import connection

    from releases import copyout, selectors

    _awkward(world)
    result = selectors.audited_item_results(pairs=selectors.current_batch_runs()).order_by("pk").first()
    seen = {}
    changed = threading.Event()
    write_items, write_results = copyout.write_items, copyout.write_results

    def items_then_change(*args, **kwargs):
        out = write_items(*args, **kwargs)
        params = connection.get_connection_params()
        with psycopg.connect(**{k: v for k, v in params.items() if k in ("dbname", "user", "host", "port", "password")},
                             autocommit=True) as other:  # committed while the build's snapshot is open
            other.execute("UPDATE aggregation_itemresult SET posterior = 0.5 WHERE id = %s", [result.pk])
        changed.set()
        return out

    def results_after_change(cursor, **kwargs):
        seen["thread"] = threading.current_thread().name
        assert changed.wait(30)
        return write_results(cursor, **kwargs)

    _, copied = _both(tmp_path, monkeypatch, version="v-before")
    monkeypatch.setattr(copyout, "write_items", items_then_change)
    monkeypatch.setattr(copyout, "write_results", results_after_change)
    beside = tmp_path / "beside"
    beside.mkdir()
    services._write_release(release=Release.objects.get(version="v-before"), directory=beside)
    assert seen["thread"].startswith("snapshot")
    _same(copied, beside)  # results.csv and the report as they were before the change
    assert ItemResult.objects.get(pk=result.pk).posterior == 0.5
    assert ",0.5," not in (beside / "results.csv").read_text()


@pytest.mark.django_db(transaction=True)
def test_the_records_are_made_in_the_builds_snapshot_while_the_other_files_are_written(world, tmp_path, monkeypatch):
    """The first build after an import makes the items' records in its own transaction, while the
    second connection already writes results.csv (it reads no record): the items files are made
    of those records (the same bytes as Python's), and the records stay, committed with the build."""
    import threading

    from releases import records

    _awkward(world)
    assert not ItemRecord.objects.exists()
    results_started = threading.Event()
    write_results, refresh = copyout.write_results, records.records_refresh

    def results_noting_it_started(cursor, **kwargs):
        results_started.set()
        return write_results(cursor, **kwargs)

    def refresh_once_results_started(**kwargs):
        # built one after the other, results.csv would wait for the records: this would time out
        assert results_started.wait(30), "results.csv was not written beside the records"
        return refresh(**kwargs)

    release = Release.objects.create(version="v1")
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)
    portable, copied = tmp_path / "portable", tmp_path / "copied"
    portable.mkdir()
    copied.mkdir()
    services._write_release(release=release, directory=portable, portable=True)
    monkeypatch.setattr(copyout, "write_results", results_noting_it_started)
    monkeypatch.setattr(records, "records_refresh", refresh_once_results_started)
    services._write_release(release=release, directory=copied)
    _same(portable, copied)
    assert ItemRecord.objects.count() == len((copied / "items.jsonl").read_bytes().splitlines()) > 0


def test_the_files_are_in_code_point_order_whatever_the_databases_collation(world, tmp_path, monkeypatch):
    """The official PostgreSQL image makes its databases in en_US.utf8, which sorts `a_1` before
    `A-1`; a release is in code-point order (Python's `sorted()`, SQLite's) on any server, both ways."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_collation WHERE collname = 'en-x-icu'")
        if cursor.fetchone() is None:
            pytest.skip("this PostgreSQL has no ICU collation")
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the fixture's deferred checks, done before the ALTER
        cursor.execute('ALTER TABLE annotation_item ALTER COLUMN item_id TYPE varchar(200) COLLATE "en-x-icu"')
    ids = ["ab", "a-b", "A-1", "a_1", "B-2", "b-1", "Zed", "zeta"]
    for item, new in zip(Item.objects.order_by("pk"), ids * 10):
        Item.objects.filter(pk=item.pk).update(item_id=f"{new}-{item.pk}")
    by_database = list(Item.objects.order_by("item_id").values_list("item_id", flat=True))
    assert by_database != sorted(by_database)  # the column's own collation is not code-point order
    portable, copied = _both(tmp_path, monkeypatch)
    _same(portable, copied)
    for name in ("items.jsonl", "results.csv", "judgments.csv"):
        lines = (copied / name).read_text(encoding="utf-8").splitlines()
        ids_in_file = [json.loads(line)["item_id"] for line in lines] if name == "items.jsonl" else \
            [line.split(",")[0] for line in lines[1:]]
        assert len(set(ids_in_file)) >= 4 and ids_in_file == sorted(ids_in_file), (name, ids_in_file)
