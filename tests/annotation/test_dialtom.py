"""import_dialtom on the authors' files: the verified release, the counterfactuals and the
unverified pool (copies of ../shared/data in fixtures/), and on dirty copies of them."""
import json
import re
import shutil

import pytest
from django.core.management.base import CommandError

from annotation.dialtom import STATE_ATTRIBUTES
from annotation.models import Batch, Context, Item
from annotation.authors import dialtom_import

from .conftest import FIXTURES, run

pytestmark = pytest.mark.django_db
RELEASE = FIXTURES / "dialtom-release"
POOL = FIXTURES / "dialtom-pool"
POOL_FILE = "MI_data_0_50.sample.json"
KINDS = ("retrospective", "prospective", "easy", "counterfactual", "references")


def records(name, directory=RELEASE):
    return json.loads((directory / name).read_text())


def counts(report):
    return {k: report[k] for k in KINDS}


def snapshot():
    return Context.objects.count(), Item.objects.count(), Batch.objects.count()


# --- the verified release and the counterfactuals ------------------------------------------

def test_release_counts_ids_and_batches():
    text, report = run("import_dialtom", RELEASE)
    assert counts(report) == {"retrospective": 6, "prospective": 9, "easy": 6, "counterfactual": 9, "references": 0}
    assert report["created"]["items"] == 30 and report["retained_by_authors"] == 21
    assert report["skipped"] == [] and report["warnings"] == []
    assert sorted(Batch.objects.values_list("name", flat=True)) == [
        "dialtom-mi-counterfact", "dialtom-mi-prospective", "dialtom-mi-retrospective", "dialtom-pfg-prospective-easy"]
    assert "6 retrospective, 9 prospective, 6 easy, 9 counterfactual items" in text


def test_retrospective_record_becomes_one_item_for_its_state():
    run("import_dialtom", RELEASE)
    record = records("MI_retrospective_verified.sample.json")[0]  # id "5, 2", state Knowledge
    item = Item.objects.get(item_id="mi-s0005-w02-knowledge")
    assert (item.task, item.attribute, item.variant, item.target_speaker) == ("retrospective", "knowledge", "hard", "recipient")
    assert item.options == [record["options"]["Knowledge"][letter] for letter in "ABCD"]
    assert item.answer == record["correct_option"]["Knowledge"] and item.retained_by_authors
    assert item.metadata["release"]["state"] == "Knowledge" and item.metadata["key"] == "5, 2"
    context = item.context
    assert (context.context_id, context.session_key, context.window_index, context.session) == (
        "mi-s0005-w02", "mi-s0005", 2, None)
    assert context.turns[0] == {"speaker": "recipient", "source_role": "client",
                                "text": "And, like, she filled them up for me, and I told her what to write."}
    assert len(context.turns) == len(record["ctx"])


def test_prospective_items_are_keyed_by_id_and_state():
    run("import_dialtom", RELEASE)
    prospective = records("MI_prospective_verified.sample.json")
    assert len({r["id"] for r in prospective}) < len(prospective)  # several states of one id
    for record in prospective:
        session, window = (int(x) for x in record["id"].split(","))
        attribute = STATE_ATTRIBUTES[record["state"].lower()]
        item = Item.objects.get(item_id=f"mi-s{session:04d}-w{window:02d}-prospective-{attribute}")
        assert (item.task, item.attribute, item.variant) == ("prospective", attribute, "hard")
        assert sorted(item.options) == sorted([record["correct_action"], *record["distractors"]])
        assert item.options["ABCD".index(item.answer)] == record["correct_action"]
        assert item.profile == {attr: record["options"][state][record["correct_option"][state]] for state, attr in [
            ("Belief", "belief"), ("Desires", "desire"), ("Intentions", "intention"), ("Emotions", "emotion"),
            ("Knowledge", "knowledge"), ("Trust", "trust")]}
    assert Item.objects.filter(context__context_id="mi-s0005-w00", task="prospective", variant="hard").count() == 3


def test_prospective_options_are_a_seeded_shuffle(settings):
    dialtom_import(directory=RELEASE)
    answers = list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options"))
    assert len({a for a, _ in answers}) > 1  # not always the same letter
    Item.objects.filter(variant="counterfactual").delete()
    Item.objects.all().delete()
    dialtom_import(directory=RELEASE, seed=settings.DIALTOM_SEED, force=True)
    assert list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options")) == answers
    Item.objects.filter(variant="counterfactual").delete()
    Item.objects.all().delete()
    dialtom_import(directory=RELEASE, seed=settings.DIALTOM_SEED + 1)
    assert list(Item.objects.filter(task="prospective").order_by("item_id").values_list("answer", "options")) != answers


def test_counterfactual_is_the_prospective_item_of_its_state_with_nota():
    run("import_dialtom", RELEASE)
    statements = records("MI_counterfact.sample.json")["5, 0_Knowledge"]
    item = Item.objects.get(item_id="mi-s0005-w00-prospective-knowledge-counterfactual")
    parent = Item.objects.get(item_id="mi-s0005-w00-prospective-knowledge")
    assert (item.variant, item.answer, item.attribute, item.parent_id) == ("counterfactual", "NOTA", "knowledge", parent.pk)
    assert item.options == parent.options and item.context_id == parent.context_id
    # the six statements, in the authors' order Belief, Desires, Intentions, Emotions, Knowledge, Trust
    assert item.profile == dict(zip(["belief", "desire", "intention", "emotion", "knowledge", "trust"], statements))
    # the Emotions counterfactual of the same context goes to the Emotions item, not another state's
    assert Item.objects.get(item_id="mi-s0005-w00-prospective-emotion-counterfactual").parent.attribute == "emotion"


def test_counterfactual_without_its_prospective_item_is_skipped(tmp_path):
    (tmp_path / "MI_counterfact.json").write_text(json.dumps({"5, 0_Knowledge": ["b", "d", "i", "e", "k", "t"],
                                                              "9, 9_Trust": ["b", "d", "i", "e", "k", "t"]}, indent=1))
    shutil.copy(RELEASE / "MI_prospective_verified.sample.json", tmp_path)
    _, report = run("import_dialtom", tmp_path)
    assert report["counterfactual"] == 1
    line = _line_of(tmp_path, "MI_counterfact.json", "9, 9_Trust")
    assert report["skipped"] == [{"file": "MI_counterfact.json", "line": line, "key": "9, 9_Trust", "field": "key",
                                  "reason": "no prospective item mi-s0009-w09-prospective-trust (its context and "
                                            "state) in this directory or the database; not imported"}]


def test_prospective_easy_gives_easy_items_with_pfg_roles():
    run("import_dialtom", RELEASE)
    item = Item.objects.get(item_id="pfg-s0019-w00-prospective-trust-easy")
    assert (item.variant, item.task, item.batch.name) == ("easy", "prospective", "dialtom-pfg-prospective-easy")
    assert [t["speaker"] for t in item.context.turns[:2]] == ["initiator", "recipient"]
    assert item.context.turns[0]["source_role"] == "persuader"


# --- the unverified pool ---------------------------------------------------------------

def test_pool_file_is_one_batch_of_six_retrospective_and_a_prospective_item_per_state():
    _, report = run("import_dialtom", POOL)
    pool = records(POOL_FILE, POOL)
    assert report["contexts"] == 4 and report["created"]["contexts"] == 4
    assert counts(report) == {"retrospective": 24, "prospective": 18, "easy": 0, "counterfactual": 0, "references": 0}
    assert pool["0, 3"].get("actions") is None  # a session's last window: no prospective item
    assert not Item.objects.filter(context__context_id="mi-s0000-w03", task="prospective").exists()
    assert set(Item.objects.values_list("batch__name", flat=True)) == {"dialtom-mi-data-0-50"}
    assert report["retained_by_authors"] == 0
    item = Item.objects.get(item_id="mi-s0000-w00-prospective-belief")
    actions = pool["0, 0"]["actions"]
    assert sorted(item.options) == sorted([actions["correct_action"], *actions["Belief"]])
    assert item.options["ABCD".index(item.answer)] == actions["correct_action"]
    assert item.metadata == {"source": "dialtom-pool", "file": POOL_FILE, "key": "0, 0", "state": "Belief"}


def test_an_item_in_the_pool_and_the_release_is_one_item_marked_retained(tmp_path):
    for source in (POOL / POOL_FILE, *RELEASE.glob("*.json")):
        shutil.copy(source, tmp_path)
    _, report = run("import_dialtom", tmp_path)
    # "0, 3" Trust is in the pool and in the verified retrospective file
    assert report["retrospective"] == 24 + 6 - 1 and report["skipped"] == []
    item = Item.objects.get(item_id="mi-s0000-w03-trust")
    assert item.retained_by_authors and item.batch.name == "dialtom-mi-data-0-50"
    assert item.metadata["release"]["file"] == "MI_retrospective_verified.sample.json"
    assert not Item.objects.get(item_id="mi-s0000-w03-belief").retained_by_authors


def test_release_imported_after_the_pool_marks_the_pool_item():
    run("import_dialtom", POOL)
    assert not Item.objects.get(item_id="mi-s0000-w03-trust").retained_by_authors
    _, report = run("import_dialtom", RELEASE)
    assert report["created"]["marked_retained"] == 1 and report["created"]["retrospective"] == 5
    assert Item.objects.get(item_id="mi-s0000-w03-trust").retained_by_authors


def test_second_run_creates_nothing(tmp_path):
    for source in (POOL / POOL_FILE, *RELEASE.glob("*.json")):
        shutil.copy(source, tmp_path)
    _, first = run("import_dialtom", tmp_path)
    before = list(Item.objects.order_by("pk").values_list("pk", "item_id", "answer", "options", "retained_by_authors"))
    _, second = run("import_dialtom", tmp_path, "--force")  # the files read again: nothing new
    assert all(v == 0 for v in second["created"].values())
    assert second["existing"] == {"contexts": first["contexts"], "items": first["created"]["items"]}
    assert counts(second) == counts(first) and second["skipped"] == []
    assert list(Item.objects.order_by("pk").values_list(
        "pk", "item_id", "answer", "options", "retained_by_authors")) == before


# --- dirty files ---------------------------------------------------------------------------

def _pool_with(tmp_path, change, name="MI_data_0_50.json"):
    data = records(POOL_FILE, POOL)
    change(data)
    (tmp_path / name).write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return tmp_path


def _strict_refuses(directory, message):
    with pytest.raises(CommandError, match=message):
        run("import_dialtom", directory, "--strict")
    assert snapshot() == (0, 0, 0)  # nothing half-written


def _line_of(directory, name, key):
    return next(n for n, line in enumerate((directory / name).read_text().splitlines(), start=1)
                if line.startswith(f' "{key}"'))


def test_nul_character_is_removed_with_a_warning_naming_its_field(tmp_path):
    directory = _pool_with(tmp_path, lambda d: d["0, 1"]["options"]["Belief"].__setitem__(
        "B", d["0, 1"]["options"]["Belief"]["B"] + "\u0000"))
    _, report = run("import_dialtom", directory, "--strict")  # a warning, not a refusal
    line = _line_of(directory, "MI_data_0_50.json", "0, 1")
    assert report["warnings"] == [{"file": "MI_data_0_50.json", "line": line, "key": "0, 1", "field": "options.Belief.B",
                                   "reason": "NUL character removed (PostgreSQL cannot store it)"}]
    option = Item.objects.get(item_id="mi-s0000-w01-belief").options[1]
    assert "\x00" not in option and option == records(POOL_FILE, POOL)["0, 1"]["options"]["Belief"]["B"]


def _equal_options(d):
    d["0, 1"]["options"]["Desires"]["C"] = d["0, 1"]["options"]["Desires"]["A"]


def _equal_continuations(d):
    d["0, 2"]["actions"]["Emotions"][2] = d["0, 2"]["actions"]["Emotions"][0]


def _some_states(d):
    del d["0, 0"]["actions"]["Trust"]


@pytest.mark.parametrize(("change", "key", "field", "reason", "missing"), [
    (_equal_options, "0, 1", "options.Desires", "two equal options (A and C)", "mi-s0000-w01-desire"),
    (_equal_continuations, "0, 2", "actions.Emotions", "two equal continuations (distractor 1 and distractor 3)",
     "mi-s0000-w02-prospective-emotion"),
    (_some_states, "0, 0", "actions.Trust", "no continuations for Trust (the record has them for Belief, Desires",
     "mi-s0000-w00-prospective-trust"),
], ids=["two equal options", "two equal continuations", "continuations for only some states"])
def test_dirty_record_is_skipped_and_listed_or_refused_with_strict(tmp_path, change, key, field, reason, missing):
    directory = _pool_with(tmp_path, change)
    line = _line_of(directory, "MI_data_0_50.json", key)
    _strict_refuses(directory, re.escape(f"MI_data_0_50.json:{line}: {field}: {reason}"))

    text, report = run("import_dialtom", directory)
    [skipped] = report["skipped"]
    assert skipped["file"] == "MI_data_0_50.json" and skipped["line"] == line and skipped["key"] == key
    assert skipped["field"] == field and skipped["reason"].startswith(reason)
    assert f"skipped MI_data_0_50.json:{line} [{key}]: {field}" in text
    assert not Item.objects.filter(item_id=missing).exists()
    assert report["created"]["items"] == 24 + 18 - 1  # the rest of the file is there


def test_same_key_in_two_files_with_different_content_is_skipped_in_both(tmp_path):
    _pool_with(tmp_path, lambda d: None, name="MI_data_0_50.json")

    def other_options(d):
        d["0, 1"]["options"]["Knowledge"]["D"] = "I know something else entirely."
    _pool_with(tmp_path, other_options, name="MI_data_50_50.json")
    line = _line_of(tmp_path, "MI_data_0_50.json", "0, 1")
    _strict_refuses(tmp_path, rf"MI_data_0_50.json:{line}: options.Knowledge: item mi-s0000-w01-knowledge: other "
                              r"content in MI_data_0_50.json")

    _, report = run("import_dialtom", tmp_path)
    assert [(p["file"], p["key"], p["field"]) for p in report["skipped"]] == [
        ("MI_data_0_50.json", "0, 1", "options.Knowledge"), ("MI_data_50_50.json", "0, 1", "options.Knowledge")]
    assert not Item.objects.filter(item_id="mi-s0000-w01-knowledge").exists()
    assert report["retrospective"] == 23 and Context.objects.count() == 4


def test_same_key_in_two_files_with_different_turns_skips_the_context(tmp_path):
    _pool_with(tmp_path, lambda d: None, name="MI_data_0_50.json")
    _pool_with(tmp_path, lambda d: d["0, 2"]["ctx"].__setitem__(0, "client: Something else."), name="MI_data_50_50.json")
    _, report = run("import_dialtom", tmp_path)
    assert {(p["file"], p["key"], p["field"]) for p in report["skipped"]} == {
        ("MI_data_0_50.json", "0, 2", "ctx"), ("MI_data_50_50.json", "0, 2", "ctx")}
    assert "context mi-s0000-w02 has other turns in MI_data_0_50.json" in report["skipped"][0]["reason"]
    assert not Context.objects.filter(context_id="mi-s0000-w02").exists()
    assert report["contexts"] == 3 and not Item.objects.filter(context__context_id="mi-s0000-w02").exists()


def test_same_key_in_two_files_with_the_same_content_is_one_item(tmp_path):
    _pool_with(tmp_path, lambda d: None, name="MI_data_0_50.json")
    _pool_with(tmp_path, lambda d: None, name="MI_data_50_50.json")
    _, report = run("import_dialtom", tmp_path, "--strict")
    assert report["skipped"] == [] and report["contexts"] == 4 and report["created"]["items"] == 42
    assert set(Item.objects.values_list("batch__name", flat=True)) == {"dialtom-mi-data-0-50"}  # the first file's


def test_item_already_in_the_database_with_other_content_is_skipped(tmp_path):
    run("import_dialtom", POOL)
    Item.objects.filter(item_id="mi-s0000-w00-trust").update(answer="A" if
                                                             Item.objects.get(item_id="mi-s0000-w00-trust").answer != "A"
                                                             else "B")
    _, report = run("import_dialtom", POOL, "--force")
    assert [(p["key"], p["field"], p["reason"]) for p in report["skipped"]] == [
        ("0, 0", "options.Trust", "item mi-s0000-w00-trust: already in the database with other content; not imported")]


def test_a_file_with_no_valid_record_is_refused(tmp_path):
    (tmp_path / "MI_data_0_2.json").write_text(json.dumps({"zero": {"ctx": ["client: hi"]}}))
    with pytest.raises(CommandError, match=r"MI_data_0_2.json:1: id: expected \"session, window\".*no record of this "
                                           r"file is valid"):
        run("import_dialtom", tmp_path)
    assert snapshot() == (0, 0, 0)


def test_out_of_range_numbers_are_a_field_error(tmp_path):
    _pool_with(tmp_path, lambda d: d.__setitem__("2147483648, 0", d.pop("0, 0")))
    _, report = run("import_dialtom", tmp_path)
    assert [(p["key"], p["field"]) for p in report["skipped"]] == [("2147483648, 0", "id")]
    assert "out of range" in report["skipped"][0]["reason"]


# --- the release, strict ------------------------------------------------------------------

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
    _strict_refuses(directory, "MI_retrospective_verified.sample.json" + expected)
    _, report = run("import_dialtom", directory)
    assert len(report["skipped"]) == 1 and report["retrospective"] == 5


def test_error_line_points_at_the_record(tmp_path):
    directory = _release_with(tmp_path, "MI_prospective_verified.sample.json",
                              lambda d: d[3].__setitem__("distractors", d[3]["distractors"][:2]))
    text = (directory / "MI_prospective_verified.sample.json").read_text()
    id_lines = [n for n, line in enumerate(text.splitlines(), start=1) if '"id": "2, 2"' in line]
    line = id_lines[1] - 1  # the 4th record is the 2nd of "2, 2"; its "{" is on the line before its first key
    _strict_refuses(directory, rf"MI_prospective_verified.sample.json:{line}: distractors: expected exactly 3")


def test_context_already_in_the_database_with_other_turns_is_skipped(tmp_path):
    run("import_dialtom", RELEASE)
    directory = _release_with(tmp_path, "MI_retrospective_verified.sample.json",
                              lambda d: d[0]["ctx"].__setitem__(0, "client: Something else entirely."))
    _, report = run("import_dialtom", directory)
    assert report["skipped"][0]["field"] == "ctx"
    assert "already in the database with other turns" in report["skipped"][0]["reason"]
    with pytest.raises(CommandError, match="already in the database with other turns"):
        run("import_dialtom", directory, "--strict")


def test_empty_directory(tmp_path):
    with pytest.raises(CommandError, match="no DialToM files"):
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
    assert "seeker's intention" in item.question
