"""A build reads no item's versions when the records are known up to date (`records.records_current`):
the import's follow-up made them all, and since then no statement changed an item, a context or a
domain (logged by PostgreSQL's triggers, in the changing transaction) and no one but a maker wrote
the records. Anything else, and the build checks and remakes what changed, as before."""

import io
import json
import threading

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from annotation.models import Context, Domain, Item
from releases import records, services
from releases.models import ContextRecord, ItemRecord, RecordsChange, RecordsWhole
from tests.releases.records_helpers import made_by_builds, maker_holding
from tests.releases.test_release_copyout import _both, _same


def _versions() -> dict:
    return {("item", pk): v for pk, v in ItemRecord.objects.values_list("item_id", "versions")} | {
        ("context", pk): v for pk, v in ContextRecord.objects.values_list("context_id", "versions")}


def _edit_item():
    Item.objects.filter(item_id="mi-trust").update(options=["edited A", "B", "C", "D"])


def _edit_context():
    context = Context.objects.get(items__item_id="mi-belief")
    Context.objects.filter(pk=context.pk).update(turns=[{"speaker": "initiator", "text": "edited"}])


def _edit_domain():
    Domain.objects.filter(code="esc").update(recipient_role="help-seeker")


def _changed_records(before: dict) -> set:
    return {key for key, versions in _versions().items() if before.get(key) != versions}


@pytest.mark.django_db
def test_none_is_checked_until_something_changes(world, tmp_path, monkeypatch):
    assert not services.release_records_up_to_date()  # never made whole
    services.release_records_refresh()
    assert services.release_records_up_to_date() and RecordsWhole.objects.count() == 1 and not RecordsChange.objects.exists()
    made = made_by_builds(monkeypatch)
    _same(*_both(tmp_path, monkeypatch))
    assert made == []
    monkeypatch.undo()
    made = made_by_builds(monkeypatch)
    Item.objects.filter(item_id="mi-trust").update(question="Edited?")
    assert not services.release_records_up_to_date() and list(RecordsChange.objects.values_list("source", flat=True)) == ["annotation_item"]
    _same(*_both(tmp_path, monkeypatch, version="v2"))
    assert made == [1]  # the edited item's record: the build checked them all again


@pytest.mark.django_db
@pytest.mark.parametrize("edit, table", [(_edit_item, "annotation_item"), (_edit_context, "annotation_context"),
                                         (_edit_domain, "annotation_domain")])
def test_a_change_to_what_the_records_are_made_of_is_logged_with_it_and_its_records_made_again(
        world, tmp_path, monkeypatch, edit, table):
    services.release_records_refresh()
    before = _versions()
    with pytest.raises(RuntimeError), transaction.atomic():  # rolled back: its log too
        edit()
        raise RuntimeError
    assert services.release_records_up_to_date()
    edit()
    assert list(RecordsChange.objects.values_list("source", flat=True)) == [table] and not services.release_records_up_to_date()
    made = made_by_builds(monkeypatch)
    _same(*_both(tmp_path, monkeypatch))
    assert made[0] == len(_changed_records(before)) > 0
    services.release_records_refresh()  # the follow-up of the next import: whole again, the log emptied
    assert services.release_records_up_to_date() and not RecordsChange.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("by_hand", [
    "DELETE FROM releases_itemrecord WHERE item_id = (SELECT min(item_id) FROM releases_itemrecord)",
    "UPDATE releases_contextrecord SET versions = ''",
    "TRUNCATE releases_itemrecord",
])
def test_records_written_by_anyone_but_a_maker_are_no_longer_known_whole(world, tmp_path, monkeypatch, by_hand):
    services.release_records_refresh()
    with connection.cursor() as cursor:
        cursor.execute(by_hand)
    assert not services.release_records_up_to_date() and not RecordsWhole.objects.exists()
    made = made_by_builds(monkeypatch)
    _same(*_both(tmp_path, monkeypatch))  # the build checked: a missing record made, a stale one's versions
    assert len(made) == 1


@pytest.mark.django_db
def test_a_table_rewritten_without_a_trigger_firing_is_noticed(world, tmp_path, monkeypatch):
    """ALTER … TYPE (as VACUUM FULL and CLUSTER) rewrites a table and fires no trigger: its file changes."""
    services.release_records_refresh()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE annotation_domain ALTER COLUMN recipient_role TYPE text USING recipient_role || ''")
    assert not RecordsChange.objects.exists() and RecordsWhole.objects.exists()
    assert not services.release_records_up_to_date()
    made = made_by_builds(monkeypatch)
    _same(*_both(tmp_path, monkeypatch))
    assert len(made) == 1


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_while_the_records_are_made_stays_logged(world, tmp_path, monkeypatch):
    """The maker empties the log before it reads a row: an item edited and committed while the
    maker is at work (here: as it makes the records of the items it found stale) is not in what it
    made, and its log entry outlives it."""
    services.release_records_refresh()
    _edit_item()  # logged: the next making of all the records has an item to make
    before = _versions()

    def edit_late():
        try:
            Item.objects.filter(item_id="esc-desire").update(options=["late A", "B", "C", "D"])
        finally:
            connection.close()  # this thread's own

    def items_then_a_late_edit(rows):
        edit = threading.Thread(target=edit_late)  # its own connection: committed at once
        edit.start()
        edit.join(30)
        yield from make_items(rows)

    kinds = list(records._KINDS)
    make_items = kinds[1][6]
    assert make_items is records._items
    kinds[1] = (*kinds[1][:6], items_then_a_late_edit, *kinds[1][7:])
    monkeypatch.setattr(records, "_KINDS", tuple(kinds))
    with maker_holding() as maker:  # commits as the block ends
        assert maker["made"] == 1
    monkeypatch.undo()
    assert Item.objects.get(item_id="esc-desire").options[0] == "late A"
    assert RecordsWhole.objects.count() == 1
    assert list(RecordsChange.objects.values_list("source", flat=True)) == ["annotation_item"] and not services.release_records_up_to_date()
    made = made_by_builds(monkeypatch)
    _same(*_both(tmp_path, monkeypatch))
    assert made == [1]
    late = Item.objects.get(item_id="esc-desire").pk
    assert _changed_records(before) == {("item", Item.objects.get(item_id="mi-trust").pk), ("item", late)}


@pytest.mark.django_db
def test_the_command_makes_every_record_and_says_a_build_will_check_none(world):
    out = io.StringIO()
    call_command("release_records", "--json", stdout=out)
    lines = out.getvalue().splitlines()
    report = json.loads(lines[-1])
    assert report == {"made": ItemRecord.objects.count() + ContextRecord.objects.count(), "up_to_date": True}
    assert report["made"] > 0 and lines[0].endswith("every record up to date: a build checks none")
    _edit_item()
    assert not services.release_records_up_to_date()
    out = io.StringIO()
    call_command("release_records", stdout=out)
    assert out.getvalue() == "1 records made; every record up to date: a build checks none\n"
