"""import_contexts and import_items: good files, and every kind of bad file (nothing written)."""
import copy
import json

import pytest
from django.core.management.base import CommandError

from annotation.models import Batch, Context, Item
from annotation.parsers import InputError
from annotation.services import contexts_import, items_import

from .conftest import run, write_jsonl

pytestmark = pytest.mark.django_db

TURNS = [{"speaker": "initiator", "text": "So what brings you here today?"},
         {"speaker": "recipient", "text": "My doctor said I should cut down on drinking.", "source_role": "client"}]


def context(n: int, **extra) -> dict:
    return {"context_id": f"mi-s0012-w{n:02d}", "domain": "mi", "session_id": "mi-s0012", "window_index": n,
            "turns": TURNS, **extra}


def retro(n: int = 0, attribute: str = "trust", **extra) -> dict:
    return {"item_id": f"mi-s0012-w{n:02d}-{attribute}", "context_id": f"mi-s0012-w{n:02d}",
            "task": "retrospective", "attribute": attribute, "target_speaker": "recipient",
            "question": "How much does the client trust the counselor at this point?",
            "options": ["Fully", "Somewhat", "Not at all", "Cannot tell"], "answer": "C", "variant": "hard",
            "batch": "mi-b01", **extra}


def prosp(n: int = 0, **extra) -> dict:
    return {"item_id": f"mi-s0012-w{n:02d}-prospective", "context_id": f"mi-s0012-w{n:02d}", "task": "prospective",
            "attribute": "trust",
            "profile": {"belief": "b", "desire": "d", "intention": "i", "emotion": "e", "knowledge": "k", "trust": "t"},
            "question": "Which continuation is most consistent with this profile?",
            "options": ["one", "two", "three", "four"], "answer": "A", "variant": "hard", "batch": "mi-b01", **extra}


@pytest.fixture
def contexts(tmp_path):
    path = write_jsonl(tmp_path / "contexts.jsonl", [context(0), context(1, source="generator-v2")])
    run("import_contexts", path)


def snapshot():
    return (list(Context.objects.values_list("context_id", flat=True)),
            list(Item.objects.values_list("item_id", flat=True)), list(Batch.objects.values_list("name", flat=True)))


def test_import_contexts(tmp_path):
    path = write_jsonl(tmp_path / "contexts.jsonl", [context(0), context(1, source="generator-v2")])
    text, report = run("import_contexts", path)
    assert report["created"] == 2 and report["by_domain"] == {"mi": 2}
    c = Context.objects.get(context_id="mi-s0012-w01")
    assert (c.domain_id, c.session_key, c.window_index, c.n_words) == ("mi", "mi-s0012", 1, 15)
    assert c.turns == TURNS and c.session is None
    assert c.metadata == {"source": "generator-v2"}  # unknown fields are kept


def test_import_items(tmp_path, contexts):
    records = [retro(0), retro(0, "belief", answer="A", is_gold=True), prosp(0), retro(1, batch="mi-b02"),
               prosp(1, variant="counterfactual", answer="NOTA"), retro(1, "desire", batch=None),
               prosp(0, item_id="mi-s0012-w00-prospective-belief", attribute="belief")]
    text, report = run("import_items", write_jsonl(tmp_path / "items.jsonl", records))
    assert report["created"] == 7
    assert report["by_domain"] == {"mi": {"prospective": 3, "retrospective": 4}}
    # a context holds one prospective item per attribute (the state its distractors target)
    assert sorted(Item.objects.filter(task="prospective", context__context_id="mi-s0012-w00").values_list(
        "attribute", flat=True)) == ["belief", "trust"]
    assert report["batches_created"] == ["mi-b01", "mi-b02"]
    item = Item.objects.get(item_id="mi-s0012-w00-belief")
    assert (item.task, item.attribute, item.variant, item.answer, item.batch.name) == (
        "retrospective", "belief", "hard", "A", "mi-b01")
    assert item.options == ["Fully", "Somewhat", "Not at all", "Cannot tell"]
    assert item.metadata == {"is_gold": True}
    assert Item.objects.get(item_id="mi-s0012-w00-prospective").profile["trust"] == "t"
    assert Item.objects.get(item_id="mi-s0012-w01-prospective").variant == "counterfactual"
    assert Item.objects.get(item_id="mi-s0012-w01-desire").batch is None
    assert Batch.objects.get(name="mi-b02").items.count() == 1


def _bad(name):
    """Records whose line 2 (or the file) is bad, and the error the import must give."""
    good = [retro(0)]
    cases = {
        "invalid JSON": (good + ['{"item_id": "x", "options": [}'], ":2: json: invalid JSON"),
        "not an object": (good + ["[1, 2]"], ":2: record: must be a JSON object"),
        "missing field": (good + [{k: v for k, v in retro(0, "belief").items() if k != "question"}],
                          ":2: question: missing"),
        "3 options": (good + [retro(0, "belief", options=["a", "b", "c"])], ":2: options: expected exactly 4 options, got 3"),
        "5 options": (good + [retro(0, "belief", options=["a", "b", "c", "d", "e"])],
                      ":2: options: expected exactly 4 options, got 5"),
        "same options": (good + [retro(0, "belief", options=["a", "b", "a", "d"])],
                         ":2: options: options must be pairwise different"),
        "unknown letter": (good + [retro(0, "belief", answer="E")], ":2: answer: unknown letter 'E' (expected A, B, C or D)"),
        "NOTA not counterfactual": (good + [retro(0, "belief", answer="NOTA")], ":2: answer: unknown letter 'NOTA'"),
        "unknown attribute": (good + [retro(0, "humour")], ":2: attribute: unknown attribute 'humour'"),
        "unknown task": (good + [retro(0, "belief", task="future")], ":2: task: unknown value 'future'"),
        "duplicate id in file": (good + [retro(0, "trust", variant="easy")],
                                 ":2: item_id: duplicate id 'mi-s0012-w00-trust' (already earlier in this file)"),
        "same slot in file": (good + [retro(0, item_id="other-id")],
                              ":2: context_id: a hard retrospective trust item for mi-s0012-w00 is already earlier in this file"),
        "unknown context": (good + [retro(7)], ":2: context_id: unknown context 'mi-s0012-w07' (import its contexts first)"),
        "prospective without profile": (good + [{k: v for k, v in prosp(0).items() if k != "profile"}],
                                        ":2: profile: missing"),
        "bad batch name": (good + [retro(0, "belief", batch="no spaces allowed")], ":2: batch:"),
        "NUL in an option": (good + [retro(0, "belief", options=["a", "b\u0000", "c", "d"])],
                             ":2: options[1]: contains a NUL character"),
        "prospective without attribute": (good + [{k: v for k, v in prosp(0).items() if k != "attribute"}],
                                          ":2: attribute: missing"),
        "same prospective slot in file": (good + [prosp(0), prosp(0, item_id="other-id")],
                                          ":3: context_id: a hard prospective trust item for mi-s0012-w00 is already "
                                          "earlier in this file"),
    }
    return cases[name]


BAD_CASES = ["invalid JSON", "not an object", "missing field", "3 options", "5 options", "same options",
             "unknown letter", "NOTA not counterfactual", "unknown attribute", "unknown task", "duplicate id in file",
             "same slot in file", "unknown context", "prospective without profile", "bad batch name",
             "prospective without attribute", "same prospective slot in file", "NUL in an option"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_item_files_are_refused_whole(tmp_path, contexts, case):
    records, expected = _bad(case)
    path = write_jsonl(tmp_path / "items.jsonl", records)
    before = snapshot()
    with pytest.raises(CommandError) as error:
        run("import_items", path)
    assert str(error.value).startswith(f"{path}{expected}")
    assert snapshot() == before  # the good line 1 was not written either


def test_duplicate_id_against_the_database(tmp_path, contexts):
    run("import_items", write_jsonl(tmp_path / "first.jsonl", [retro(0)]))
    before = snapshot()
    path = write_jsonl(tmp_path / "again.jsonl", [retro(1), retro(0)])
    with pytest.raises(CommandError, match=r"again.jsonl:2: item_id: duplicate id 'mi-s0012-w00-trust' \(already in the database\)"):
        run("import_items", path)
    assert snapshot() == before


def test_wrong_encoding(tmp_path, contexts):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(retro(0)).encode() + b"\n" + json.dumps(retro(0, "belief", question="Qu\u00e9?"))
                     .replace("\\u00e9", "\u00e9").encode("latin-1") + b"\n")
    with pytest.raises(CommandError, match=r"latin1.jsonl:2: encoding: not valid UTF-8 \(byte 0xe9 at column \d+\)"):
        run("import_items", path)
    assert not Item.objects.exists()


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, contexts, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(CommandError, match=r"empty.jsonl:1: file: the file is empty \(no records\)"):
        run("import_items", path)


def test_the_earliest_bad_line_is_named_and_later_chunks_roll_back(tmp_path, contexts):
    # Given a file whose line 1 points at an unknown context (found when its chunk is checked)
    # and whose line 3 is not JSON
    path = write_jsonl(tmp_path / "items.jsonl", [retro(9), retro(0), "{oops"])
    with pytest.raises(Exception) as error:
        items_import(path=path, chunk_size=2)
    assert ":1: context_id: unknown context 'mi-s0012-w09'" in str(error.value)
    # And an error in a later chunk undoes the chunks already written
    path = write_jsonl(tmp_path / "items2.jsonl", [retro(0), retro(0, "belief"), retro(1), retro(1, answer="Z")])
    with pytest.raises(Exception, match=":4: answer: unknown letter 'Z'"):
        items_import(path=path, chunk_size=2)
    assert not Item.objects.exists() and not Batch.objects.exists()


@pytest.mark.parametrize(("record", "expected"), [
    ({k: v for k, v in context(2).items() if k != "turns"}, ":2: turns: missing"),
    (context(2, domain="law"), ":2: domain: unknown value 'law' (expected esc, mi, pfg)"),
    (context(2, turns=[{"speaker": "doctor", "text": "hi"}]), ":2: turns[0].speaker: unknown speaker 'doctor'"),
    (context(2, window_index=-1), ":2: window_index: must be an integer >= 0"),
    (context(2, window_index=2147483648), ":2: window_index: out of range (at most 2147483647)"),
    (context(2, turns=[{"speaker": "initiator", "text": "hi\u0000"}]), ":2: turns[0].text: contains a NUL character"),
    (dict(context(2), context_id="mi-s0012-w00"), ":2: context_id: duplicate id 'mi-s0012-w00' (already earlier in this file)"),
    (context(0, context_id="other"), ":2: window_index: window 0 of mi-s0012 is already earlier in this file"),
])
def test_bad_context_files(tmp_path, record, expected):
    path = write_jsonl(tmp_path / "contexts.jsonl", [context(0), record])
    with pytest.raises(CommandError) as error:
        run("import_contexts", path)
    assert str(error.value).startswith(f"{path}{expected}")
    assert not Context.objects.exists()


def test_context_duplicate_against_the_database(tmp_path, contexts):
    path = write_jsonl(tmp_path / "more.jsonl", [context(5), context(1)])
    with pytest.raises(CommandError, match=r"more.jsonl:2: context_id: duplicate id 'mi-s0012-w01' \(already in the database\)"):
        run("import_contexts", path)
    assert Context.objects.count() == 2


def test_imported_context_links_an_ingested_session(tmp_path):
    from .conftest import FIXTURES
    run("ingest_corpus", "annomi", FIXTURES / "annomi_full.csv")
    record = copy.deepcopy(context(0))
    record.update(context_id="mi-t0001-w00", session_id="mi-t0001")
    run("import_contexts", write_jsonl(tmp_path / "c.jsonl", [record]))
    assert Context.objects.get().session.source_id == "1"
    # and segmentation leaves that session alone: its windows come from elsewhere
    _, report = run("segment_contexts")
    assert not Context.objects.filter(session_key="mi-t0001").exclude(context_id="mi-t0001-w00").exists()
    assert report["skipped"]["sessions"] == 1


def test_duplicates_across_chunks_are_named_as_in_this_file(tmp_path, contexts):
    # Given a duplicate id two chunks apart (memory holds one chunk, not every id seen)
    path = write_jsonl(tmp_path / "items.jsonl", [retro(0), retro(0, "belief"), retro(1), retro(0, variant="easy")])
    with pytest.raises(InputError, match=r":4: item_id: duplicate id 'mi-s0012-w00-trust' \(already earlier in this file\)"):
        items_import(path=path, chunk_size=2)
    path = write_jsonl(tmp_path / "items2.jsonl", [retro(0), retro(0, "belief"), retro(0, item_id="other")])
    with pytest.raises(InputError, match=r":3: context_id: a hard retrospective trust item for mi-s0012-w00 is already earlier in this file"):
        items_import(path=path, chunk_size=2)
    path = write_jsonl(tmp_path / "c.jsonl", [context(4), context(5), context(6), context(4, window_index=9)])
    with pytest.raises(InputError, match=r":4: context_id: duplicate id 'mi-s0012-w04' \(already earlier in this file\)"):
        contexts_import(path=path, chunk_size=2)
    assert not Item.objects.exists() and Context.objects.count() == 2
