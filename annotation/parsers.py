"""Readers of the published corpus formats and of the studio's JSONL formats.

Pure Python, no database: each reader turns a file into plain records and reports bad
input as `InputError` (`file:line: field: reason`). The services decide what to write.

Corpora (see docs/data.md):
- AnnoMI's CSV ("full": one row per utterance *per annotator*, deduplicated on
  `transcript_id, utterance_id`; "simple": one row per utterance), `interlocutor`
  therapist/client.
- ESConv's JSON list of conversations, `dialog` of `{speaker: seeker|supporter, content}`.
- PersuasionForGood's `full_dialog.csv` (`,Unit,Turn,B4,B2`): one sentence a row,
  `B4` 0 = persuader, 1 = persuadee, `B2` the dialogue id.

A turn is what segmentation never splits: in AnnoMI and ESConv one utterance (a row, a
message); in PersuasionForGood, which stores one sentence a row, the consecutive sentences
of one speaker joined with a space (spec: segmentation rule).
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

INITIATOR, RECIPIENT = "initiator", "recipient"


class InputError(Exception):
    """Bad input, located: `str(error)` is `file:line: field: reason`."""

    def __init__(self, path: str | Path, line: int | str, field: str, reason: str):
        self.path, self.line, self.field, self.reason = str(path), line, field, reason
        super().__init__(f"{self.path}:{line}: {field}: {reason}")


@dataclass
class ParsedTurn:
    speaker: str  # initiator | recipient
    source_role: str  # the corpus's own name: therapist, seeker, persuader, ...
    text: str

    @property
    def n_words(self) -> int:
        return count_words(self.text)


@dataclass
class ParsedSession:
    source_id: str
    session_id: str
    turns: list[ParsedTurn] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    # PFG: a row is a sentence, and the sentences of one speaker in a row make up a turn.
    join_same_speaker: bool = False

    @property
    def n_words(self) -> int:
        return sum(t.n_words for t in self.turns)

    def add_utterance(self, *, speaker: str, source_role: str, text: str) -> None:
        """Append an utterance as a turn (or, with `join_same_speaker`, extend the speaker's turn)."""
        text = " ".join(text.split())
        if not text:
            return
        if self.join_same_speaker and self.turns and self.turns[-1].speaker == speaker:
            self.turns[-1].text = f"{self.turns[-1].text} {text}"
        else:
            self.turns.append(ParsedTurn(speaker=speaker, source_role=source_role, text=text))


def count_words(text: str) -> int:
    """Words are whitespace-separated tokens (spec, segmentation rule)."""
    return len(text.split())


# --- helpers -------------------------------------------------------------------------

def _read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, 0, "file", "no such file") from None
    except IsADirectoryError:
        raise InputError(path, 0, "file", "is a directory, not a file") from None


def read_text(path: str | Path, *, encoding: str = "utf-8") -> str:
    """The whole file decoded; a decoding error names the line it happened on."""
    raw = _read_bytes(path)
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(path, line, "encoding", f"not valid {encoding} (byte 0x{raw[exc.start]:02x}); "
                         "convert the file to UTF-8 or pass --encoding") from None
    except LookupError:
        raise InputError(path, 0, "encoding", f"unknown encoding {encoding!r}") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(path, 1, "file", "the file is empty")
    return text


def _csv_rows(path: str | Path, *, encoding: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    text = read_text(path, encoding=encoding)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(path, 1, "header", f"missing column(s) {', '.join(missing)}")
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as exc:
        raise InputError(path, reader.line_num, "csv", str(exc)) from None


def _natural_key(value: str):
    return (0, int(value), "") if value.strip().lstrip("-").isdigit() else (1, 0, value)


def _numbered(prefix: str, value: str) -> str:
    value = value.strip()
    return f"{prefix}{int(value):04d}" if value.isdigit() else f"{prefix}{value}"


# --- AnnoMI --------------------------------------------------------------------------

ANNOMI_SPEAKERS = {"therapist": INITIATOR, "client": RECIPIENT}
ANNOMI_SESSION_FIELDS = ("topic", "mi_quality", "video_title", "video_url")


def parse_annomi(path: str | Path, *, encoding: str = "utf-8") -> list[ParsedSession]:
    """AnnoMI full or simple CSV -> sessions `mi-t0005` (transcript 5), in transcript order."""
    required = ("transcript_id", "utterance_id", "interlocutor", "utterance_text")
    utterances: dict[str, dict[str, tuple[str, str]]] = {}
    meta: dict[str, dict] = {}
    for line, row in _csv_rows(path, encoding=encoding, required=required):
        transcript, utterance = (row["transcript_id"] or "").strip(), (row["utterance_id"] or "").strip()
        if not transcript:
            raise InputError(path, line, "transcript_id", "empty")
        if not utterance:
            raise InputError(path, line, "utterance_id", "empty")
        role = (row["interlocutor"] or "").strip().lower()
        if role not in ANNOMI_SPEAKERS:
            raise InputError(path, line, "interlocutor", f"unknown speaker {role!r} (expected therapist or client)")
        seen = utterances.setdefault(transcript, {})
        if utterance in seen:  # the full CSV repeats an utterance once per annotator
            continue
        seen[utterance] = (role, row["utterance_text"] or "")
        if transcript not in meta:
            meta[transcript] = {k: row[k] for k in ANNOMI_SESSION_FIELDS if row.get(k)}
    sessions = []
    for transcript in sorted(utterances, key=_natural_key):
        session = ParsedSession(source_id=transcript, session_id=_numbered("mi-t", transcript),
                                metadata={"corpus": "AnnoMI", **meta[transcript]})
        for utterance in sorted(utterances[transcript], key=_natural_key):
            role, text = utterances[transcript][utterance]
            session.add_utterance(speaker=ANNOMI_SPEAKERS[role], source_role=role, text=text)
        sessions.append(session)
    return sessions


# --- PersuasionForGood ---------------------------------------------------------------

PFG_SPEAKERS = {0: (INITIATOR, "persuader"), 1: (RECIPIENT, "persuadee")}


def parse_pfg(path: str | Path, *, encoding: str = "utf-8") -> list[ParsedSession]:
    """PFG full_dialog.csv -> sessions `pfg-<B2>`, in order of first appearance."""
    sessions: dict[str, ParsedSession] = {}
    for line, row in _csv_rows(path, encoding=encoding, required=("Unit", "B4", "B2")):
        dialogue = (row["B2"] or "").strip()
        if not dialogue:
            raise InputError(path, line, "B2", "empty dialogue id")
        try:
            role = int(float(row["B4"]))
        except (TypeError, ValueError):
            role = None
        if role not in PFG_SPEAKERS:
            raise InputError(path, line, "B4", f"unknown role {row['B4']!r} (expected 0 = persuader, 1 = persuadee)")
        session = sessions.get(dialogue)
        if session is None:
            session = sessions[dialogue] = ParsedSession(
                source_id=dialogue, session_id=f"pfg-{dialogue}", metadata={"corpus": "PersuasionForGood"},
                join_same_speaker=True)
        speaker, source_role = PFG_SPEAKERS[role]
        session.add_utterance(speaker=speaker, source_role=source_role, text=row["Unit"] or "")
    return list(sessions.values())


# --- ESConv --------------------------------------------------------------------------

ESCONV_SPEAKERS = {"supporter": INITIATOR, "seeker": RECIPIENT}
ESCONV_SESSION_FIELDS = ("experience_type", "emotion_type", "problem_type", "situation", "survey_score")


def _is_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def string_fields(value, path: str = ""):
    """`(field path, string)` of every string in a JSON value: `options.Belief.A`, `ctx[3]`.

    Keys are visited too (a key is a string the database may have to store)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            yield sub, key
            yield from string_fields(item, sub)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from string_fields(item, f"{path}[{n}]")


def _check_storable(path, line: int, record) -> None:
    """Refuse strings PostgreSQL cannot store (NUL) or UTF-8 cannot encode (lone surrogates),
    naming the field they are in."""
    for field_path, text in string_fields(record):
        if "\x00" in text:
            raise InputError(path, line, field_path or "record", "contains a NUL character (\\u0000)")
        if _is_lone_surrogate(text):
            raise InputError(path, line, field_path or "record",
                             "contains a lone surrogate (an invalid \\ud800-\\udfff escape)")


def remove_nul(value):
    """`(value without NUL characters, [field paths where one was removed])`: PostgreSQL
    cannot store NUL in text; the readers of the authors' files drop it and say where."""
    found: list[str] = []

    def clean(node, path):
        if isinstance(node, str):
            if "\x00" in node:
                found.append(path or "record")
                return node.replace("\x00", "")
            return node
        if isinstance(node, dict):
            return {clean(k, f"{path}.{k}" if path else str(k)): clean(v, f"{path}.{k}" if path else str(k))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [clean(v, f"{path}[{n}]") for n, v in enumerate(node)]
        return node

    cleaned = clean(value, "")
    return cleaned, list(dict.fromkeys(found))


def lone_surrogate_field(value) -> str | None:
    """The first field holding a lone surrogate (UTF-8 cannot encode it), or None."""
    for field_path, text in string_fields(value):
        if _is_lone_surrogate(text):
            return field_path or "record"
    return None


def _json_error(path, text: str, exc: json.JSONDecodeError) -> InputError:
    return InputError(path, exc.lineno, "json", f"invalid JSON ({exc.msg}, column {exc.colno})")


def iter_json_list(path: str | Path, *, encoding: str = "utf-8", check_storable: bool = True,
                   text: str | None = None) -> Iterator[tuple[int, object]]:
    """The elements of a file holding one JSON list, each with the line it starts on.

    `check_storable=False` leaves NUL characters and lone surrogates to the caller."""
    text = read_text(path, encoding=encoding) if text is None else text
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    pos = ws.match(text, 0).end()
    if pos >= len(text) or text[pos] != "[":
        raise InputError(path, text.count("\n", 0, pos) + 1, "json", "expected a JSON list of records")
    pos = ws.match(text, pos + 1).end()
    line, counted = 1, 0
    if pos < len(text) and text[pos] == "]":
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _json_error(path, text, exc) from None
        except RecursionError:
            raise InputError(path, line, "json", "nested too deeply") from None
        if check_storable and "\\u" in text[pos:end]:
            _check_storable(path, line, value)
        yield line, value
        pos = ws.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = ws.match(text, pos + 1).end()
            continue
        if pos < len(text) and text[pos] == "]":
            if text[ws.match(text, pos + 1).end():]:
                raise InputError(path, text.count("\n", 0, pos) + 1, "json", "extra data after the list")
            return
        raise InputError(path, text.count("\n", 0, pos) + 1, "json", "invalid JSON (expected ',' or ']')")


def iter_json_object(path: str | Path, *, encoding: str = "utf-8",
                     text: str | None = None) -> Iterator[tuple[int, str, object]]:
    """`(line, key, value)` of a file holding one JSON object, in file order, each with the
    line its key is on. A key given twice is yielded twice (the caller decides). NUL
    characters and lone surrogates are left to the caller."""
    text = read_text(path, encoding=encoding) if text is None else text
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    pos = ws.match(text, 0).end()
    if pos >= len(text) or text[pos] != "{":
        raise InputError(path, text.count("\n", 0, pos) + 1, "json", "expected a JSON object of records")
    pos = ws.match(text, pos + 1).end()
    line, counted = 1, 0
    if pos < len(text) and text[pos] == "}":
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        if pos >= len(text) or text[pos] != '"':
            raise InputError(path, line, "json", "invalid JSON (expected a key in double quotes)")
        try:
            key, end = decoder.raw_decode(text, pos)
            colon = ws.match(text, end).end()
            if colon >= len(text) or text[colon] != ":":
                raise InputError(path, line, "json", "invalid JSON (expected ':' after the key)")
            value, end = decoder.raw_decode(text, ws.match(text, colon + 1).end())
        except json.JSONDecodeError as exc:
            raise _json_error(path, text, exc) from None
        except RecursionError:
            raise InputError(path, line, "json", "nested too deeply") from None
        yield line, key, value
        pos = ws.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = ws.match(text, pos + 1).end()
            continue
        if pos < len(text) and text[pos] == "}":
            if text[ws.match(text, pos + 1).end():]:
                raise InputError(path, text.count("\n", 0, pos) + 1, "json", "extra data after the object")
            return
        raise InputError(path, text.count("\n", 0, pos) + 1, "json", "invalid JSON (expected ',' or '}')")


def parse_esconv(path: str | Path, *, encoding: str = "utf-8") -> list[ParsedSession]:
    """ESConv.json -> sessions `esc-c0000` (position in the list: ESConv has no ids)."""
    sessions = []
    for position, (line, conversation) in enumerate(iter_json_list(path, encoding=encoding)):
        if not isinstance(conversation, dict):
            raise InputError(path, line, "conversation", "must be a JSON object")
        dialog = conversation.get("dialog")
        if not isinstance(dialog, list) or not dialog:
            raise InputError(path, line, "dialog", "missing or not a non-empty list")
        session = ParsedSession(
            source_id=str(position), session_id=_numbered("esc-c", str(position)),
            metadata={"corpus": "ESConv",
                      **{k: conversation[k] for k in ESCONV_SESSION_FIELDS if k in conversation}},
        )
        for n, utterance in enumerate(dialog):
            if not isinstance(utterance, dict):
                raise InputError(path, line, f"dialog[{n}]", "must be a JSON object")
            role = str(utterance.get("speaker", "")).strip().lower()
            if role not in ESCONV_SPEAKERS:
                raise InputError(path, line, f"dialog[{n}].speaker",
                                 f"unknown speaker {role!r} (expected seeker or supporter)")
            content = utterance.get("content")
            if not isinstance(content, str):
                raise InputError(path, line, f"dialog[{n}].content", "missing or not a string")
            session.add_utterance(speaker=ESCONV_SPEAKERS[role], source_role=role, text=content)
        sessions.append(session)
    return sessions


CORPUS_PARSERS = {"annomi": ("mi", parse_annomi), "esconv": ("esc", parse_esconv), "pfg": ("pfg", parse_pfg)}


# --- JSONL ---------------------------------------------------------------------------

def jsonl_record(raw: bytes | str, *, source: str | Path, number: int) -> dict | None:
    """One line of a JSONL file: its record, or None for a blank line.

    The one rule for every JSONL reader (imports, uploads of predictions, inferences,
    counterfactuals): raises InputError for bytes that are not UTF-8, a line that is not
    JSON (or nested too deeply), a record that is not an object, and escapes PostgreSQL
    text cannot store.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(source, number, "encoding",
                             f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    else:
        text = raw
    if number == 1:
        text = text.removeprefix("\ufeff")
    if not text.strip():
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, number, "json", f"invalid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(source, number, "json", "nested too deeply") from None
    if not isinstance(record, dict):
        raise InputError(source, number, "record", "must be a JSON object")
    if "\\u" in text:  # escapes PostgreSQL text cannot store: NUL, lone surrogates
        _check_storable(source, number, record)
    return record


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Stream a JSONL file: `(line number, record)`, blank lines skipped, one line in memory.

    Raises InputError for a bad line (see `jsonl_record`) and a file with no records at all.
    """
    seen_any = False
    if not Path(path).is_file():
        raise InputError(path, 0, "file", "no such file")
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            record = jsonl_record(raw, source=path, number=number)
            if record is None:
                continue
            seen_any = True
            yield number, record
    if not seen_any:
        raise InputError(path, 1, "file", "the file is empty (no records)")
