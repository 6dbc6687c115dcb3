"""Hostile import files: every importer answers a bad file with a clean CommandError that
names the file, and writes nothing (all or nothing).

The table below is run against each import command that exists (`import_contexts`,
`import_items`, `import_dialtom`, `import_judgments`, and any `import_*` added later
that reads a JSONL or CSV path): truncated records, huge lines, wrong types, NUL bytes
(raw and escaped), lone surrogates, deep nesting, a BOM, non-UTF-8 bytes, binary junk,
over-long ids, empty files. A file may also be accepted when it is valid (BOM, CRLF),
but never may an importer crash with anything other than CommandError or leave rows.
"""
import json

import pytest
from django.core.management import CommandError, call_command, get_commands

from tests.factories import BatchFactory, ContextFactory, ItemFactory

from ..reliability.helpers import ensure_domains

CONTEXT = {"context_id": "mi-s0099-w00", "domain": "mi", "session_id": "mi-s0099", "window_index": 0,
           "turns": [{"speaker": "initiator", "text": "Hello"}, {"speaker": "recipient", "text": "Hi"}]}
ITEM = {"item_id": "mi-s0099-w00-trust", "context_id": "mi-s0001-w00", "task": "retrospective",
        "attribute": "trust", "target_speaker": "recipient", "question": "Trust?",
        "options": ["a", "b", "c", "d"], "answer": "C", "variant": "hard", "batch": "hostile-b01"}


def _j(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _jsonl_cases(good: dict, id_field: str) -> dict[str, bytes]:
    deep = b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    return {
        "empty": b"",
        "only_whitespace": b"\n\n   \n",
        "truncated_record": _j(good)[: len(_j(good)) // 2],
        "truncated_utf8_sequence": _j(good)[:-3] + "é".encode()[:1],
        "not_an_object": b"[1, 2, 3]\n",
        "a_bare_string": b'"hello"\n',
        "null_record": b"null\n",
        "missing_fields": b"{}\n",
        "wrong_type_id": _j({**good, id_field: 12345}),
        "wrong_type_nested": _j({**good, "options": "abcd", "turns": "hello"}),
        "null_values": _j({k: None for k in good}),
        "list_where_string": _j({**good, id_field: ["a", "b"]}),
        "nul_byte_escaped": _j({**good, id_field: "bad\u0000id", "question": "q\u0000"}),
        "nul_byte_raw": _j(good).replace(b'"', b'"\x00', 1),
        "lone_surrogate": _j(good).replace(good[id_field].encode(), b"x\\ud800y", 1),
        "huge_line": _j({**good, "question": "w " * 1_000_000}),
        "over_long_id": _j({**good, id_field: "x" * 10_000}),
        "deep_nesting": deep,
        "non_utf8": _j(good).replace(b"Hello", "Héllo".encode("latin-1")).replace(b"Trust?", "Trüst?".encode("latin-1")),
        "utf16": json.dumps(good).encode("utf-16"),
        "binary_junk": bytes(range(256)) * 8,
        "good_then_bad": _j(good) + b"{not json}\n",
        "duplicate_records": _j(good) * 2,
        "bom": b"\xef\xbb\xbf" + _j(good),
        "crlf": _j(good).replace(b"\n", b"\r\n"),
        "html_and_sql": _j({**good, id_field: "<script>alert(1)</script>'; DROP TABLE annotation_item; --"}),
    }


def _csv_cases() -> dict[str, bytes]:
    good = b"item_id,worker,label\nmi-s0001-w00-trust-hard,outside01,C\n"
    return {
        "empty": b"",
        "header_only": b"item_id,worker,label\n",
        "no_header": b"mi-s0001-w00-trust-hard,outside01,C\n",
        "wrong_header": b"a,b,c\n1,2,3\n",
        "missing_column": b"item_id,worker\nmi-s0001-w00-trust-hard,outside01\n",
        "short_row": good + b"mi-s0001-w00-trust-hard\n",
        "long_row": good + b"mi-s0001-w00-trust-hard,outside02,C,extra,extra\n",
        "bad_label": b"item_id,worker,label\nmi-s0001-w00-trust-hard,outside01,Z\n",
        "unknown_item": b"item_id,worker,label\nno-such-item,outside01,A\n",
        "nul_byte": good.replace(b"outside01", b"out\x00side01"),
        "huge_field": b"item_id,worker,label\n" + b"x" * 300_000 + b",w,A\n",
        "unterminated_quote": b'item_id,worker,label\n"mi-s0001-w00-trust-hard,outside01,C\n',
        "non_utf8": b"item_id,worker,label\nmi-s0001-w00-trust-hard,w\xe9\xff,C\n",
        "binary_junk": bytes(range(256)) * 8,
        "over_long_worker": b"item_id,worker,label\nmi-s0001-w00-trust-hard," + b"w" * 5000 + b",C\n",
        "html_worker": b"item_id,worker,label\nmi-s0001-w00-trust-hard,<script>alert(1)</script>,C\n",
        "bom": b"\xef\xbb\xbf" + good,
        "crlf": good.replace(b"\n", b"\r\n"),
    }


def _dialtom_cases() -> dict[str, bytes]:
    good = [{"id": "(0, 0)", "ctx": ["client: hi", "therapist: hello"], "state": "Trust",
             "options": {"Trust": {"A": "a", "B": "b", "C": "c", "D": "d"}}, "correct_option": {"Trust": "A"},
             "topic": "t", "task_desc": "d"}]
    return {
        "empty": b"",
        "truncated": json.dumps(good).encode()[:40],
        "object_not_list": b'{"id": 1}',
        "list_of_numbers": b"[1, 2, 3]",
        "wrong_types": json.dumps([{**good[0], "ctx": "a string", "options": [1, 2]}]).encode(),
        "missing_fields": b"[{}]",
        "nul_byte_escaped": json.dumps([{**good[0], "id": "(0,\u0000 0)"}]).encode(),
        "deep_nesting": b"[" * 100_000 + b"]" * 100_000,
        "non_utf8": json.dumps(good).encode().replace(b"hello", "h\xe9llo".encode("latin-1")),
        "binary_junk": bytes(range(256)) * 8,
        "html": json.dumps([{**good[0], "ctx": ["client: <script>alert(1)</script>", "therapist: <b>x</b>"]}]).encode(),
    }


def _suites():
    available = get_commands()
    suites = {
        "import_contexts": ("jsonl", lambda: _jsonl_cases(CONTEXT, "context_id")),
        "import_items": ("jsonl", lambda: _jsonl_cases(ITEM, "item_id")),
        "import_judgments": ("csv", _csv_cases),
        "import_dialtom": ("dir", _dialtom_cases),
    }
    params = []
    for command, (kind, cases) in suites.items():
        if command not in available:
            params.append(pytest.param(command, kind, "-", None, marks=pytest.mark.skip(reason=f"{command} not merged yet")))
            continue
        for name, content in cases().items():
            params.append(pytest.param(command, kind, name, content, id=f"{command}-{name}"))
    return params


def _counts():
    from django.apps import apps

    return {
        m._meta.label: m._default_manager.count()
        for app in ("annotation", "verification", "aggregation", "accounts")
        for m in apps.get_app_config(app).get_models()
    }


@pytest.mark.parametrize("command, kind, case, content", _suites())
def test_hostile_file_gets_a_clean_error_and_writes_nothing(command, kind, case, content, tmp_path, db):
    ensure_domains()
    # Something for the good-looking records to point at.
    ItemFactory(context=ContextFactory(context_id="mi-s0001-w00"), batch=BatchFactory(name="hostile-b01"))
    if kind == "dir":
        path = tmp_path / "release"
        path.mkdir()
        (path / "MI_retrospective_verified.json").write_bytes(content)
        named = "MI_retrospective_verified.json"
    else:
        path = tmp_path / f"hostile-{case}.{'csv' if kind == 'csv' else 'jsonl'}"
        path.write_bytes(content)
        named = path.name
    before = _counts()
    try:
        call_command(command, str(path), "--json", stdout=open("/dev/null", "w"), stderr=open("/dev/null", "w"))
    except CommandError as exc:
        message = str(exc)
        assert message.strip(), "an empty error message"
        assert "Traceback" not in message
        assert len(message) < 20_000, "the error message must be readable, not the whole file"
        assert named in message or path.name in message or "line" in message.lower(), message
        assert _counts() == before, "a failed import left rows behind"
        return
    except SystemExit as exc:  # argparse-level refusal is clean too
        assert exc.code != 0
        assert _counts() == before
        return
    # Accepted: only files that are valid (a BOM, CRLF, duplicates the importer may skip, ...).
    assert case in {"bom", "crlf", "duplicate_records", "html_and_sql", "html", "html_worker", "only_whitespace", "huge_line",
                    "header_only", "empty"} or case.startswith("good"), f"{case} was accepted"
