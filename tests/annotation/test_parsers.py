"""The corpus readers on small files in the published formats (no database)."""
import pytest

from annotation.parsers import InputError, iter_jsonl, parse_annomi, parse_esconv, parse_pfg

from .conftest import FIXTURES

ANNOMI_HEADER = "mi_quality,transcript_id,video_title,video_url,topic,utterance_id,interlocutor,timestamp,utterance_text,annotator_id\n"


def test_annomi_full_csv_counts_each_utterance_once_in_utterance_order():
    # Given the full CSV where transcript 1 is repeated, shuffled, by a second annotator
    sessions = parse_annomi(FIXTURES / "annomi_full.csv")
    # Then each utterance counts once
    assert [s.session_id for s in sessions] == ["mi-t0000", "mi-t0001", "mi-t0002"]
    assert [len(s.turns) for s in sessions] == [54, 37, 36]
    first = sessions[0].turns[0]
    assert (first.speaker, first.source_role) == ("initiator", "therapist")
    assert first.text.startswith("Thanks for filling it out.")
    assert sessions[0].turns[1].speaker == "recipient" and sessions[0].turns[1].text == "Sure."
    assert sessions[1].turns[0].text.startswith(sessions[1].turns[0].text[:20])
    assert sessions[0].metadata["topic"] == "reducing alcohol consumption"


def test_annomi_each_utterance_is_a_turn_even_two_of_one_speaker(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(ANNOMI_HEADER + "".join(
        f"high,7,T,u,topic,{n},{who},00:00:0{n},{text},1\n"
        for n, who, text in [(0, "therapist", "Hello there."), (1, "client", "Hi."), (2, "client", "I came because"),
                             (3, "therapist", "Go on.")]))
    (session,) = parse_annomi(path)
    assert session.session_id == "mi-t0007"
    assert [(t.speaker, t.text) for t in session.turns] == [
        ("initiator", "Hello there."), ("recipient", "Hi."), ("recipient", "I came because"), ("initiator", "Go on.")]
    assert session.n_words == 8


def test_pfg_sentences_of_one_speaker_form_a_turn(tmp_path):
    path = tmp_path / "pfg.csv"
    path.write_text(",Unit,Turn,B4,B2\n0,Hello!,0,0,d1\n1,How are you? ,0,0,d1\n2,Fine.,0,1,d1\n"
                    "3,Have you heard of Save the Children?,1,0,d1\n0,Hi,0,0,d2\n")
    one, two = parse_pfg(path)
    assert one.session_id == "pfg-d1" and two.session_id == "pfg-d2"
    assert [(t.speaker, t.source_role, t.text) for t in one.turns] == [
        ("initiator", "persuader", "Hello! How are you?"), ("recipient", "persuadee", "Fine."),
        ("initiator", "persuader", "Have you heard of Save the Children?")]


def test_pfg_fixture():
    sessions = parse_pfg(FIXTURES / "pfg_full_dialog.csv")
    assert [s.source_id for s in sessions] == [
        "20180904-045349_715_live", "20180904-154250_98_live", "20180904-024226_703_live"]
    assert all(t.speaker != u.speaker for s in sessions for t, u in zip(s.turns, s.turns[1:]))


def test_esconv_keeps_each_message_a_turn_and_the_situation():
    sessions = parse_esconv(FIXTURES / "esconv.json")
    assert [s.session_id for s in sessions] == ["esc-c0000", "esc-c0001", "esc-c0002"]
    assert [len(s.turns) for s in sessions] == [12, 6, 8]
    third = sessions[2]
    assert [t.speaker for t in third.turns] == [
        "recipient", "recipient", "initiator", "recipient", "recipient", "initiator", "initiator", "recipient"]
    assert [t.text for t in third.turns[:2]] == ["hi", "are you there?"]
    assert third.turns[0].source_role == "seeker"
    assert third.metadata["situation"] == "My partner left me last week."


@pytest.mark.parametrize(("reader", "content", "expected"), [
    (parse_annomi, b"transcript_id,utterance_id,utterance_text\n0,0,Hi\n", ":1: header: missing column(s) interlocutor"),
    (parse_annomi, ANNOMI_HEADER.encode() + b"h,0,T,u,t,0,doctor,0,Hi,1\n",
     ":2: interlocutor: unknown speaker 'doctor' (expected therapist or client)"),
    (parse_pfg, b",Unit,Turn,B4,B2\n0,Hi,0,2,d1\n", ":2: B4: unknown role '2'"),
    (parse_pfg, b",Unit,Turn,B4,B2\n0,Hi \xe9t\xe9,0,0,d1\n", ":2: encoding: not valid utf-8 (byte 0xe9)"),
    (parse_esconv, b'[{"dialog": [{"speaker": "seeker", "content": "hi"}]},\n {"dialog": [}]',
     ":2: json: invalid JSON"),
    (parse_esconv, b'[{"dialog": [{"speaker": "helper", "content": "hi"}]}]', ":1: dialog[0].speaker: unknown speaker"),
    (parse_esconv, b'{"dialog": []}', ":1: json: expected a JSON list"),
    (parse_esconv, b"  \n", ":1: file: the file is empty"),
])
def test_bad_corpus_files_are_located(tmp_path, reader, content, expected):
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(InputError) as error:
        reader(path)
    assert str(error.value).startswith(str(path) + expected)


def test_jsonl_reader_streams_records_with_line_numbers(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"a": 2}\n')
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_annomi_simple_csv(tmp_path):
    path = tmp_path / "AnnoMI-simple.csv"
    path.write_text("mi_quality,transcript_id,video_title,video_url,topic,utterance_id,interlocutor,timestamp,utterance_text\n"
                    "low,12,T,u,smoking cessation,0,therapist,00:00:01,Hi.\nlow,12,T,u,smoking cessation,1,client,00:00:02,Hello.\n")
    (session,) = parse_annomi(path)
    assert session.session_id == "mi-t0012" and session.metadata["mi_quality"] == "low"
    assert [t.speaker for t in session.turns] == ["initiator", "recipient"]


@pytest.mark.parametrize("reader", [parse_annomi, parse_pfg, parse_esconv, lambda p: list(iter_jsonl(p))])
def test_missing_file(tmp_path, reader):
    with pytest.raises(InputError, match=r"nope.csv:0: file: no such file"):
        reader(tmp_path / "nope.csv")
