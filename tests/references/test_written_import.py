"""The authors' written inferences (written_inference.csv + combined_written_data.json) become
accepted references of (context, state) units; bad rows are listed, --strict refuses them."""
import csv
import json
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Context, Item
from annotation.parsers import InputError
from references import selectors, similarity
from references import written as written_inferences
from references.models import (
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceSeat,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSetStatus,
    ReferenceSubmission,
)

pytestmark = pytest.mark.django_db

HERE = Path(__file__).parent / "fixtures" / "written"
SAMPLE_CSV = HERE / "written_inference.sample.csv"
SAMPLE_JSON = HERE / "combined_written_data.sample.json"
RELEASE = Path(__file__).parents[1] / "annotation" / "fixtures" / "dialtom-release"
HEADER = ["WorkerId", "dataset", "mental_state", "sub_id", "inferences", "wc"]


def run(csv_path=SAMPLE_CSV, json_path=SAMPLE_JSON, **kwargs):
    return written_inferences.written_inferences_import(inferences=csv_path, contexts=json_path, **kwargs)


def sample_rows() -> list[dict]:
    with SAMPLE_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def counts() -> dict:
    return {"references": Reference.objects.count(), "assignments": ReferenceAssignment.objects.count(),
            "contexts": Context.objects.count(), "workers": get_user_model().objects.filter(username__startswith="dialtom-w-").count(),
            "seats": ReferenceSeat.objects.count(), "sets": ReferenceSet.objects.count()}


def test_the_sample_imports_as_accepted_references_of_context_state_units():
    rows = sample_rows()

    report = run()

    assert report["references"] == len(rows) == 27
    assert report["units"] == len({(r["sub_id"], r["mental_state"]) for r in rows}) == 9
    assert report["contexts"] == 3 and report["workers"] == len({r["WorkerId"] for r in rows}) == 7
    pairs = {(r["WorkerId"], r["sub_id"]) for r in rows}
    assert report["created"] == {"references": 27, "assignments": len(pairs), "contexts": 3, "workers": 7}
    assert report["skipped"] == [] and report["warnings"] == []
    assert report["by_domain"] == {"mi": 27}
    # One closed set of the authors' references; each context asks for the states written for it
    written = ReferenceSet.objects.get(name="dialtom-written")
    assert (written.source, written.status, written.per_context) == ("authors", ReferenceSetStatus.CLOSED, 3)
    member = ReferenceSetContext.objects.get(reference_set=written, context__context_id="mi-s0005-w09")
    assert member.attributes == ["belief", "intention", "trust"]  # the states written for "5, 9"
    # A worker's rows on a context are one accepted assignment with exactly those attributes
    one = written_inferences.crowd_pseudonym("A18LFH7XW61JO9")
    assignment = ReferenceAssignment.objects.get(member=member, worker__username=one)
    assert assignment.status == AssignmentStatus.ACCEPTED and assignment.attributes == ["belief", "intention", "trust"]
    assert dict(assignment.references.values_list("attribute", "text"))["trust"].startswith("I view my counselor")
    assert ReferenceAssignment.objects.count() == report["created"]["assignments"] == ReferenceSubmission.objects.count()
    # k writers per unit, held as seats 0..2
    assert sorted(set(ReferenceSeat.objects.values_list("slot", flat=True))) == [0, 1, 2]
    assert ReferenceSeat.objects.count() == 27
    # The contexts are the release import's: same ids, turns from ctx with their speakers
    context = Context.objects.get(context_id="mi-s0010-w03")
    assert context.turns[0]["speaker"] in ("initiator", "recipient") and context.metadata["source"] == "dialtom-written"
    assert not Item.objects.exists()  # the written inferences bring contexts, not items


def test_workers_are_pseudonymous_crowd_accounts_that_cannot_log_in():
    run()
    users = get_user_model().objects.filter(username__startswith="dialtom-w-")
    assert users.count() == 7
    for user in users:
        assert user.is_crowd_worker and not user.is_active and not user.has_usable_password()
    names = {u.username for u in users}
    assert not any(r["WorkerId"] in name for r in sample_rows() for name in names)  # no platform id stored
    assert written_inferences.crowd_pseudonym("A18LFH7XW61JO9") in names


def test_a_second_run_creates_nothing():
    first = run()
    before = counts()

    assert run()["unchanged"] == [SAMPLE_CSV.name, SAMPLE_JSON.name] and counts() == before  # skipped unread
    again = run(force=True)

    assert counts() == before
    assert again["created"] == {"references": 0, "assignments": 0, "contexts": 0, "workers": 0}
    assert (again["references"], again["units"], again["skipped"]) == (first["references"], first["units"], [])


def test_export_and_similarity_use_the_imported_units():
    run()
    by_unit = selectors.accepted_references_by_context(reference_set_id=ReferenceSet.objects.get().pk)
    assert len(by_unit) == 9 and {len(v) for v in by_unit.values()} == {3}
    rows = sample_rows()
    belief = [r["inferences"] for r in rows if (r["sub_id"], r["mental_state"]) == ("5, 9", "Belief")]
    assert sorted(by_unit[("mi-s0005-w09", "belief")]) == sorted(belief)
    scores = {s["attribute"]: s for s in similarity.similarity_scores(
        inferences=[{"context_id": "mi-s0005-w09", "attribute": "belief", "text": belief[0]}], references=by_unit)}
    assert scores["belief"]["rouge_l"] == pytest.approx(1.0) and scores["belief"]["n_references"] == 3
    exported = list(selectors.references_export_rows(reference_set=ReferenceSet.objects.get()))
    assert len(exported) == 27


@pytest.fixture
def dirty(tmp_path):
    """The sample's contexts (one spoiled) and rows with every fault a real file has, each on a known line."""
    data = json.loads(SAMPLE_JSON.read_text())
    data["MI"]["7, 1"] = {"ctx": ["narrator: once upon a time"]}  # no such role in MI
    data["XX"] = {}
    json_path = tmp_path / "combined_written_data.json"
    json_path.write_text(json.dumps(data, indent=1))  # "MI" on line 2, "XX" near the end
    good = ["W1", "MI", "Belief", "5, 9", "I believe the drinking is under control.", "8"]
    rows = [
        good,                                                                  # line 2: fine
        ["W1", "MI", "Belief", "5, 9", "I believe the drinking is under control.", "8"],  # 3: repeats line 2
        ["W1", "MI", "Belief", "5, 9", "I believe something else entirely here.", "6"],  # 4: another text
        ["W2", "MI", "Hopes", "5, 9", "I hope so.", "3"],                      # 5: unknown state
        ["W2", "MI", "Belief", "five, nine", "I believe it.", "3"],            # 6: bad sub_id
        ["W2", "MI", "Belief", "99, 1", "I believe it.", "3"],                 # 7: no such context
        ["W2", "MI", "Belief", "7, 1", "I believe it.", "3"],                  # 8: its context was skipped
        ["W2", "MI", "Belief", "5, 9", "   ", "0"],                            # 9: empty
        ["", "MI", "Belief", "5, 9", "I believe it.", "3"],                    # 10: no worker
        ["W3", "ZZ", "Belief", "5, 9", "I believe it.", "3"],                  # 11: unknown dataset
        ["W2", "MI", "Belief", "5, 9", "I believe my friends calm\x00 down.", "5"],  # 12: NUL removed, imported
        ["W3", "MI", "Belief", "5, 9", "I believe Donna helps.", "4"],         # 13: third writer, fine
        ["W4", "MI", "Belief", "5, 9", "I believe a fourth thing.", "4"],      # 14: k = 3 writers already
        ["W4", "MI", "Trust", "5, 9", "I view the counselor as\nsomeone who listens.", "7"],  # 15-16: fine, two lines
        ["W5", "MI", "Trust"],                                                  # 17: short row
    ]
    csv_path = write_csv(tmp_path / "written_inference.csv", rows)
    return csv_path, json_path


def test_dirty_rows_are_skipped_and_listed_by_file_line_and_field(dirty):
    csv_path, json_path = dirty

    report = run(csv_path, json_path)

    json_lines = json_path.read_text().splitlines()
    xx_line = json_lines.index(' "XX": {}') + 1
    listed = [(s["file"], s["line"], s["field"]) for s in report["skipped"]]
    assert listed == [
        ("combined_written_data.json", 2, "ctx[0]"),
        ("combined_written_data.json", xx_line, "dataset"),
        ("written_inference.csv", 3, "inferences"),
        ("written_inference.csv", 4, "inferences"),
        ("written_inference.csv", 5, "mental_state"),
        ("written_inference.csv", 6, "sub_id"),
        ("written_inference.csv", 7, "sub_id"),
        ("written_inference.csv", 8, "sub_id"),
        ("written_inference.csv", 9, "inferences"),
        ("written_inference.csv", 10, "WorkerId"),
        ("written_inference.csv", 11, "dataset"),
        ("written_inference.csv", 14, "WorkerId"),
        ("written_inference.csv", 17, "row"),
    ]
    assert [s["key"] for s in report["skipped"][:3]] == ["MI/7, 1", "XX", "MI/5, 9/Belief"]
    reasons = {s["line"]: s["reason"] for s in report["skipped"] if s["file"].endswith(".csv")}
    assert reasons[3] == "repeats line 2"
    assert reasons[4] == "worker W1 wrote another Belief inference for MI '5, 9' at line 2"
    assert "unknown state 'Hopes'" in reasons[5]
    assert "no context MI '99, 1'" in reasons[7]
    assert reasons[14] == "MI '5, 9' / Belief has 3 writers already (k)"
    assert report["warnings"] == [{"file": "written_inference.csv", "line": 12, "key": "MI/5, 9/Belief",
                                   "field": "inferences", "reason": "NUL character removed (PostgreSQL cannot store it)"}]
    # What could be imported was: W1, W2, W3 on belief; W4 on trust (its text keeps its line break)
    assert report["references"] == 4 and report["units"] == 2 and report["workers"] == 4
    texts = dict(Reference.objects.filter(attribute="belief").values_list("assignment__worker__username", "text"))
    assert texts[written_inferences.crowd_pseudonym("W2")] == "I believe my friends calm down."
    assert Reference.objects.get(attribute="trust").text == "I view the counselor as\nsomeone who listens."
    assert not Context.objects.filter(context_id="mi-s0007-w01").exists()


def test_strict_refuses_the_files_and_writes_nothing(dirty):
    csv_path, json_path = dirty
    with pytest.raises(InputError) as refused:
        run(csv_path, json_path, strict=True)
    assert str(refused.value).startswith("combined_written_data.json:2: ctx[0]: expected \"role: text\"")
    assert str(refused.value).endswith("(--strict: nothing imported)")
    assert counts() == {"references": 0, "assignments": 0, "contexts": 0, "workers": 0, "seats": 0, "sets": 0}


def test_a_clean_file_passes_strict():
    assert run(strict=True)["references"] == 27


def test_a_missing_column_refuses_the_file(tmp_path):
    bad = tmp_path / "written_inference.csv"
    bad.write_text("WorkerId,dataset,mental_state,inferences\nW1,MI,Belief,text\n")
    with pytest.raises(InputError, match=r"written_inference.csv:1: header: missing column\(s\) sub_id"):
        run(bad)
    assert counts()["references"] == 0


def test_a_context_already_stored_with_other_turns_refuses_everything(tmp_path):
    data = json.loads(SAMPLE_JSON.read_text())
    run()
    data["MI"]["5, 9"]["ctx"][0] = "counselor: something else was said here"
    changed = tmp_path / "combined_written_data.json"
    changed.write_text(json.dumps(data))
    before = counts()
    with pytest.raises(InputError, match="context mi-s0005-w09 is already in the database with other turns"):
        run(SAMPLE_CSV, changed, set_name="other")
    assert counts() == before


def test_the_command_reports_and_strict_refuses(dirty, tmp_path, capsys):
    call_command("import_written_inferences", str(HERE), "--json")
    out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(out[-1])["references"] == 27 and "27 references on 9 (context, state) units" in out[0]
    csv_path, _ = dirty
    with pytest.raises(CommandError, match=r"combined_written_data.json:2: ctx\[0\]"):
        call_command("import_written_inferences", str(csv_path.parent), "--strict", "--set", "strict-one")
    with pytest.raises(CommandError, match="no written_inference.csv"):
        call_command("import_written_inferences", str(tmp_path / "nowhere"))


def test_import_dialtom_reads_the_written_inferences_beside_the_release(tmp_path, capsys):
    for path in [*RELEASE.glob("*.json"), SAMPLE_CSV, SAMPLE_JSON]:
        shutil.copy(path, tmp_path / path.name)

    call_command("import_dialtom", str(tmp_path), "--json")
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    assert report["references"] == 27 and report["created"]["references"] == 27
    assert report["retrospective"] > 0 and "written_inference.sample.csv" in report["files"]
    assert Reference.objects.count() == 27 and Item.objects.exists()
    # a second run adds nothing; a directory of written inferences alone imports too
    call_command("import_dialtom", str(tmp_path), "--json")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["created"]["references"] == 0
    only = tmp_path / "only"
    only.mkdir()
    for path in (SAMPLE_CSV, SAMPLE_JSON):
        shutil.copy(path, only / path.name)
    call_command("import_dialtom", str(only), "--json", "--force")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["references"] == 27


def test_the_import_takes_a_fixed_number_of_queries_whatever_the_rows(django_assert_max_num_queries):
    with django_assert_max_num_queries(30):  # bulk writes: no query per row, assignment or context
        assert run()["created"]["references"] == 27


ALL_DOMAINS = Path(__file__).parent / "fixtures" / "written-all-domains"  # the authors' sample of MI, ESC and PFG


def test_every_domain_imports_and_pfg_agents_are_persuader_and_persuadee():
    """In combined_written_data.json the PFG turns read `agent 1:` / `agent 2:` (agent 1 opens
    and asks for the donation: the persuader); those contexts, and their references, import."""
    rows = list(csv.DictReader((ALL_DOMAINS / "written_inference.sample.csv").open(newline="")))

    report = run(ALL_DOMAINS / "written_inference.sample.csv", ALL_DOMAINS / "combined_written_data.sample.json")

    assert report["skipped"] == []
    assert report["references"] == len(rows) == 39
    assert report["by_domain"] == {"esc": 3, "mi": 27, "pfg": 9}
    pfg = Context.objects.get(context_id="pfg-s0036-w00")
    assert pfg.turns[0] == {"speaker": "initiator", "text": "Good morning! How are you today?", "source_role": "agent 1"}
    assert pfg.turns[1]["speaker"] == "recipient" and pfg.turns[1]["source_role"] == "agent 2"
    esc = Context.objects.get(context_id="esc-s0026-w01")
    assert {t["speaker"] for t in esc.turns} == {"initiator", "recipient"}
    assert ReferenceSetContext.objects.get(context=pfg).attributes == ["desire"]
