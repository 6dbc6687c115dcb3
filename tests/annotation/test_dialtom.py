"""import_dialtom on the authors' sample release files (fixtures/dialtom-release)."""
import json
import shutil

import pytest
from django.core.management.base import CommandError

from annotation.models import Batch, Context, Item
from annotation.services import STATE_ATTRIBUTES, dialtom_import

from .conftest import FIXTURES, run

pytestmark = pytest.mark.django_db
RELEASE = FIXTURES / "dialtom-release"


def records(name):
    return json.loads((RELEASE / name).read_text())


def test_counts_ids_and_batches():
    text, report = run("import_dialtom", RELEASE)
    assert {k: report[k] for k in ("retrospective", "prospective", "easy", "counterfactual")} == {
        "retrospective": 6, "prospective": 6, "easy": 6, "counterfactual": 0}
    assert report["contexts"] == 17  # "4, 1" of MI is in both the retrospective and the prospective file
    assert Item.objects.count() == 18 and Context.objects.count() == 17
    assert sorted(Batch.objects.values_list("name", flat=True)) == [
        "dialtom-mi-prospective", "dialtom-mi-retrospective", "dialtom-pfg-prospective-easy"]
    assert "6 retrospective, 6 prospective, 6 easy, 0 counterfactual" in text


def test_retrospective_record_becomes_one_item_for_its_state():
    run("import_dialtom", RELEASE)
    record = records("MI_retrospective_verified.sample.json")[0]  # id "5, 2", state Knowledge
    item = Item.objects.get(item_id="mi-s0005-w02-knowledge")
    assert (item.task, item.attribute, item.variant, item.target_speaker) == ("retrospective", "knowledge", "hard", "recipient")
    assert item.options == [record["options"]["Knowledge"][letter] for letter in "ABCD"]
    assert item.answer == record["correct_option"]["Knowledge"]
    assert item.metadata["release_id"] == "5, 2" and item.metadata["state"] == "Knowledge"
    context = item.context
    assert (context.context_id, context.session_key, context.window_index, context.session) == (
        "mi-s0005-w02", "mi-s0005", 2, None)
    assert context.turns[0] == {"speaker": "recipient", "source_role": "client",
                                "text": "And, like, she filled them up for me, and I told her what to write."}
    assert context.turns[1]["speaker"] == "initiator"
    assert len(context.turns) == len(record["ctx"])


def test_prospective_options_are_a_seeded_shuffle_with_the_answer_on_the_true_continuation(settings):
    run("import_dialtom", RELEASE)
    for record in records("MI_prospective_verified.sample.json"):
        session, window = (int(x) for x in record["id"].split(","))
        attribute = STATE_ATTRIBUTES[record["state"].lower()]
        item = Item.objects.get(item_id=f"mi-s{session:04d}-w{window:02d}-prospective-{attribute}")
        assert (item.task, item.attribute, item.variant) == ("prospective", attribute, "hard")
        assert sorted(item.options) == sorted([record["correct_action"], *record["distractors"]])
        assert item.options["ABCD".index(item.answer)] == record["correct_action"]
        assert item.profile == {attr: record["options"][state][record["correct_option"][state]] for state, attr in [
            ("Belief", "belief"), ("Desires", "desire"), ("Intentions", "intention"), ("Emotions", "emotion"),
            ("Knowledge", "knowledge"), ("Trust", "trust")]}
    answers = list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options"))
    assert len({a for a, _ in answers}) > 1  # not always the same letter

    # The same seed gives the same order, another seed may not
    Item.objects.all().delete()
    dialtom_import(directory=RELEASE, seed=settings.DIALTOM_SEED)
    assert list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options")) == answers
    Item.objects.all().delete()
    dialtom_import(directory=RELEASE, seed=settings.DIALTOM_SEED + 1)
    assert list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options")) != answers


def test_prospective_easy_gives_easy_items_with_pfg_roles():
    run("import_dialtom", RELEASE)
    item = Item.objects.get(item_id="pfg-s0019-w00-prospective-trust-easy")
    assert (item.variant, item.task, item.batch.name) == ("easy", "prospective", "dialtom-pfg-prospective-easy")
    assert [t["speaker"] for t in item.context.turns[:2]] == ["initiator", "recipient"]
    assert item.context.turns[0]["source_role"] == "persuader"


def test_reimport_changes_nothing():
    run("import_dialtom", RELEASE)
    before = list(Item.objects.values_list("pk", "item_id", "answer", "options"))
    _, report = run("import_dialtom", RELEASE)
    assert report["created"]["items"] == 0 and report["created"]["contexts"] == 0
    assert report["skipped"] == {"contexts": 17, "items": 18}
    assert list(Item.objects.values_list("pk", "item_id", "answer", "options")) == before


def _release_with(tmp_path, name, change):
    shutil.copy(RELEASE / "LICENSE", tmp_path / "LICENSE")
    data = records(name)
    change(data)
    (tmp_path / name).write_text(json.dumps(data, indent=1))
    return tmp_path


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d[1]["ctx"].__setitem__(0, "narrator: Once upon a time"), r":\d+: ctx\[0\]: expected \"role: text\""),
    (lambda d: d[2].__setitem__("id", "five"), r":\d+: id: expected \"session, window\""),
    (lambda d: d[0]["correct_option"].__setitem__("Knowledge", "F"), r":\d+: correct_option.Knowledge: unknown letter 'F'"),
    (lambda d: d[0].__setitem__("state", "Humour"), r":\d+: state: unknown state 'Humour'"),
])
def test_bad_release_records(tmp_path, change, expected):
    directory = _release_with(tmp_path, "MI_retrospective_verified.sample.json", change)
    with pytest.raises(CommandError, match="MI_retrospective_verified.sample.json" + expected):
        run("import_dialtom", directory)
    assert not Item.objects.exists() and not Context.objects.exists()


def test_error_line_points_at_the_record(tmp_path):
    directory = _release_with(tmp_path, "MI_prospective_verified.sample.json",
                              lambda d: d[3].__setitem__("distractors", d[3]["distractors"][:2]))
    text = (directory / "MI_prospective_verified.sample.json").read_text()
    id_line = next(n for n, line in enumerate(text.splitlines(), start=1) if '"id": "7, 1"' in line)
    line = id_line - 1  # the record's "{" is on the line before its first key
    with pytest.raises(CommandError, match=rf"MI_prospective_verified.sample.json:{line}: distractors: expected exactly 3"):
        run("import_dialtom", directory)


def test_conflicting_context_is_refused(tmp_path):
    run("import_dialtom", RELEASE)
    directory = _release_with(tmp_path, "MI_retrospective_verified.sample.json",
                              lambda d: d[0]["ctx"].__setitem__(0, "client: Something else entirely."))
    with pytest.raises(CommandError, match="context mi-s0005-w02 is already in the database with other turns"):
        run("import_dialtom", directory)


def test_empty_directory(tmp_path):
    with pytest.raises(CommandError, match="no release files"):
        run("import_dialtom", tmp_path)


def test_esc_files_use_the_supporter_and_seeker_roles(tmp_path):
    # Given an ESC file in the release format (the samples have none: made from an MI record)
    record = records("MI_retrospective_verified.sample.json")[1]  # "2, 1", Intentions
    record["ctx"] = [line.replace("counselor:", "supporter:").replace("client:", "seeker:") for line in record["ctx"]]
    (tmp_path / "ESC_retrospective_verified.json").write_text(json.dumps([record]))
    _, report = run("import_dialtom", tmp_path, "--batch", "esc-pilot")
    item = Item.objects.get(item_id="esc-s0002-w01-intention")
    assert item.batch.name == "esc-pilot" and report["by_domain"]["esc"]["retrospective"] == 1
    assert {t["source_role"] for t in item.context.turns} == {"supporter", "seeker"}
    assert item.context.turns[0]["speaker"] == ("initiator" if record["ctx"][0].startswith("supporter") else "recipient")
    assert "seeker's intention" in item.question
