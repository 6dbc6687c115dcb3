"""Helpers for the annotation tests: the fixture files and a command runner."""
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run(command: str, *args, **options) -> tuple[str, dict]:
    """Run a management command with --json; returns (whole output, the last line's JSON)."""
    out = io.StringIO()
    call_command(command, *map(str, args), "--json", stdout=out, **options)
    text = out.getvalue()
    return text, json.loads(text.strip().splitlines()[-1])


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def ingested(db):
    """The three fixture corpora ingested."""
    run("ingest_corpus", "annomi", FIXTURES / "annomi_full.csv")
    run("ingest_corpus", "esconv", FIXTURES / "esconv.json")
    run("ingest_corpus", "pfg", FIXTURES / "pfg_full_dialog.csv")
