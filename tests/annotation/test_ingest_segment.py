"""ingest_corpus and segment_contexts on the fixture corpora, on PostgreSQL."""
import json

import pytest
from django.core.management.base import CommandError

from annotation.models import Context, Session, Turn
from annotation.segmentation import segment_windows

from .conftest import FIXTURES, run

pytestmark = pytest.mark.django_db


def test_ingest_reports_per_domain_and_is_idempotent():
    text, report = run("ingest_corpus", "annomi", FIXTURES / "annomi_full.csv")
    assert report["created"] == {"sessions": 3, "turns": 127}
    assert report["domains"]["mi"]["sessions"] == 3
    assert report["domains"]["mi"]["turns"] == 127
    assert report["domains"]["mi"]["mean_words_per_session"] == pytest.approx(
        sum(Session.objects.values_list("n_words", flat=True)) / 3, abs=0.05)
    assert "annomi: 3 sessions and 127 turns created" in text

    # When run again on the same file, nothing changes
    turns_before = list(Turn.objects.values_list("pk", "text"))
    _, again = run("ingest_corpus", "annomi", FIXTURES / "annomi_full.csv")
    assert again["created"] == {"sessions": 0, "turns": 0}
    assert again["skipped"] == {"sessions": 3}
    assert list(Turn.objects.values_list("pk", "text")) == turns_before


def test_ingest_all_three_corpora(ingested):
    sessions = {d: Session.objects.filter(domain=d).count() for d in ("mi", "esc", "pfg")}
    assert sessions == {"mi": 3, "esc": 3, "pfg": 3}
    session = Session.objects.get(session_id="esc-c0002")
    # ESConv: one message, one turn, even when the seeker sends two in a row.
    assert list(session.turns.values_list("speaker", "text")[:2]) == [("recipient", "hi"), ("recipient", "are you there?")]
    assert list(session.turns.values_list("speaker", flat=True)) == [
        "recipient", "recipient", "initiator", "recipient", "recipient", "initiator", "initiator", "recipient"]
    assert session.n_turns == 8 and session.metadata["problem_type"] == "breakup with partner"
    pfg = Session.objects.get(source_id="20180904-045349_715_live")
    assert pfg.session_id == "pfg-20180904-045349_715_live"
    assert pfg.turns.first().source_role == "persuader"
    # PFG: a row is a sentence; the sentences of one speaker in a row are one turn.
    speakers = list(pfg.turns.values_list("speaker", flat=True))
    assert all(a != b for a, b in zip(speakers, speakers[1:]))


def test_ingest_refuses_a_changed_session(tmp_path):
    run("ingest_corpus", "esconv", FIXTURES / "esconv.json")
    changed = json.loads((FIXTURES / "esconv.json").read_text())
    changed[0]["dialog"][0]["content"] += " and more words"
    path = tmp_path / "esconv.json"
    path.write_text(json.dumps(changed))
    with pytest.raises(CommandError, match=r"esc-c0000 was ingested before with 12 turns and \d+ words"):
        run("ingest_corpus", "esconv", path)


def test_ingest_bad_file_writes_nothing(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(",Unit,Turn,B4,B2\n0,Hi,0,0,d1\n1,Hello,0,7,d1\n")
    with pytest.raises(CommandError, match=r"bad.csv:3: B4: unknown role '7'"):
        run("ingest_corpus", "pfg", path)
    assert not Session.objects.exists()


def test_segmentation_follows_the_rule_on_every_fixture_session(ingested):
    _, report = run("segment_contexts")
    assert report["min_words"] == 150 and report["max_words"] == 200
    for session in Session.objects.all():
        counts = list(session.turns.values_list("n_words", flat=True))
        expected = segment_windows(counts, min_words=150, max_words=200)
        contexts = list(session.contexts.all())
        assert [(c.first_turn, c.last_turn + 1) for c in contexts] == expected
        assert [c.context_id for c in contexts] == [f"{session.session_id}-w{i:02d}" for i in range(len(expected))]
        # the windows together give back the session's turns, in order, each once
        texts = [t["text"] for c in contexts for t in c.turns]
        assert texts == list(session.turns.values_list("text", flat=True))
    stats = report["domains"]
    assert stats["mi"]["contexts"] == Context.objects.filter(domain="mi").count() > 3
    assert stats["esc"]["sessions"] == 3
    assert sum(s["over_max"] for s in stats.values()) == Context.objects.filter(n_words__gt=200).count()
    assert set(stats["pfg"]) == {"sessions", "contexts", "mean_words_per_session", "mean_words_per_context", "over_max"}


def test_segmentation_windows_by_hand_with_overridden_bounds(tmp_path):
    # Given a dialogue whose turns have 4, 4, 4, 3, 9, 2 words
    texts = ["one two three four", "one two three four", "one two three four", "a b c",
             "one two three four five six seven eight nine", "last words"]
    dialog = [{"speaker": "seeker" if i % 2 == 0 else "supporter", "content": t} for i, t in enumerate(texts)]
    path = tmp_path / "esconv.json"
    path.write_text(json.dumps([{"dialog": dialog}]))
    run("ingest_corpus", "esconv", path)
    # When segmented with windows of 10 to 12 words
    _, report = run("segment_contexts", "--min-words", "10", "--max-words", "12")
    # Then: [4,4,4]=12 closes; [3,9]=12 closes; the tail [2] joins it -> 14 words, over max
    contexts = list(Context.objects.order_by("window_index"))
    assert [(c.first_turn, c.last_turn, c.n_words) for c in contexts] == [(0, 2, 12), (3, 5, 14)]
    assert report["domains"]["esc"] == {"sessions": 1, "contexts": 2, "mean_words_per_session": 26.0,
                                        "mean_words_per_context": 13.0, "over_max": 1}
    assert contexts[0].turns[0] == {"speaker": "recipient", "text": texts[0], "source_role": "seeker"}


def test_segmentation_is_idempotent(ingested):
    _, first = run("segment_contexts")
    before = list(Context.objects.values_list("pk", "context_id", "n_words"))
    _, second = run("segment_contexts", "--min-words", "50")
    assert second["created"]["contexts"] == 0
    assert second["skipped"]["sessions"] == 9
    assert list(Context.objects.values_list("pk", "context_id", "n_words")) == before
    assert first["created"]["contexts"] == len(before)


def test_segmentation_settings_are_the_default(ingested, settings):
    settings.DIALTOM_SEGMENT_MIN_WORDS = 100
    settings.DIALTOM_SEGMENT_MAX_WORDS = 120
    _, report = run("segment_contexts", "--domain", "pfg")
    assert (report["min_words"], report["max_words"]) == (100, 120)
    assert not Context.objects.exclude(domain="pfg").exists()
    assert all(c.n_words >= 100 for c in Context.objects.all())
