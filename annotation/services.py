"""Writes of the annotation app: corpus ingestion, segmentation, JSONL imports, the
authors' release import and the demo data set.

Every function is all-or-nothing (one transaction) and reports bad input as
`parsers.InputError` (`file:line: field: reason`); the management commands turn that into
a CommandError. Each returns a JSON-serialisable report of what it did.
"""
from __future__ import annotations

import itertools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from . import continuations, dialtom, selectors
from .models import (
    ATTRIBUTE_CODES,
    DOMAINS,
    NOTA,
    OPTION_LETTERS,
    Attribute,
    Batch,
    Context,
    ContinuationReveal,
    Domain,
    Item,
    Session,
    Speaker,
    Task,
    Turn,
    Variant,
)
from .parsers import CORPUS_PARSERS, InputError, count_words, iter_jsonl
from .segmentation import segment_windows
from .bulk import bulk_insert

CHUNK_SIZE = 2000
TASKS, VARIANTS, ATTRIBUTES, SPEAKERS = (tuple(c.values) for c in (Task, Variant, Attribute, Speaker))


def _chunked(iterable: Iterable, size: int):
    iterator = iter(iterable)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# --- corpus ingestion ------------------------------------------------------------------

@transaction.atomic
def domains_ensure() -> None:
    """Make sure the three domains exist (a data migration creates them; a `flush` or a
    transactional test's reset removes them). Cheap when they are there."""
    if Domain.objects.count() >= len(DOMAINS):
        return
    for code, name, corpus, initiator, recipient in DOMAINS:
        Domain.objects.get_or_create(
            code=code, defaults={"name": name, "corpus": corpus, "initiator_role": initiator, "recipient_role": recipient}
        )


def corpus_ingest(*, corpus: str, path: str | Path, encoding: str = "utf-8") -> dict:
    """Read a corpus file in its published format into sessions and turns.

    Idempotent: a session already ingested (same domain and source id) is skipped; if the
    file now says something else about it (other turn or word count) that is an error.
    """
    domains_ensure()
    if corpus not in CORPUS_PARSERS:
        raise ValueError(f"unknown corpus {corpus!r} (expected one of {', '.join(CORPUS_PARSERS)})")
    domain_code, parse = CORPUS_PARSERS[corpus]
    domain = Domain.objects.get(code=domain_code)
    parsed = [p for p in parse(path, encoding=encoding) if p.turns]
    existing = {
        s.source_id: s
        for s in Session.objects.filter(domain=domain, source_id__in=[p.source_id for p in parsed]).only(
            "source_id", "session_id", "n_turns", "n_words")
    }
    new = []
    for p in parsed:
        before = existing.get(p.source_id)
        if before is None:
            new.append(p)
        elif (before.n_turns, before.n_words) != (len(p.turns), p.n_words):
            raise InputError(path, "-", "session", (
                f"{before.session_id} was ingested before with {before.n_turns} turns and {before.n_words} words; "
                f"this file gives {len(p.turns)} turns and {p.n_words} words"))
    sessions = Session.objects.bulk_create([
        Session(session_id=p.session_id, domain=domain, source_id=p.source_id, metadata=p.metadata,
                n_turns=len(p.turns), n_words=p.n_words)
        for p in new
    ], batch_size=CHUNK_SIZE)
    turns = (
        {"session_id": session.pk, "index": index, "speaker": t.speaker, "source_role": t.source_role,
         "text": t.text, "n_words": t.n_words}
        for session, p in zip(sessions, new, strict=True)
        for index, t in enumerate(p.turns)
    )
    n_turns = 0
    for chunk in _chunked(turns, 5000):
        n_turns += bulk_insert(Turn, chunk)
    return {
        "corpus": corpus,
        "domain": domain_code,
        "file": str(path),
        "created": {"sessions": len(sessions), "turns": n_turns},
        "skipped": {"sessions": len(parsed) - len(new)},
        "domains": selectors.corpus_stats(),
    }


# --- segmentation ----------------------------------------------------------------------

@transaction.atomic
def contexts_segment(*, min_words: int | None = None, max_words: int | None = None,
                     domain: str | None = None) -> dict:
    """Cut every ingested session that has no windows yet into contexts (spec rule).

    Idempotent: sessions whose windows exist (segmented or imported) are left alone.
    """
    min_words = min_words or settings.DIALTOM_SEGMENT_MIN_WORDS
    max_words = max_words or settings.DIALTOM_SEGMENT_MAX_WORDS
    if min_words < 1 or max_words < min_words:
        raise ValueError(f"bounds must satisfy 1 <= min_words <= max_words (got {min_words}, {max_words})")
    todo = {s.pk: s for s in selectors.unsegmented_sessions(domain=domain).only("pk", "session_id", "domain_id")}
    n_sessions_total = Session.objects.filter(**({"domain_id": domain} if domain else {})).count()
    rows = (
        Turn.objects.filter(session_id__in=list(todo)).order_by("session_id", "index")
        .values_list("session_id", "index", "speaker", "source_role", "text", "n_words")
        .iterator(chunk_size=5000)
    )

    def contexts():
        for session_pk, turns in itertools.groupby(rows, key=lambda row: row[0]):
            session = todo[session_pk]
            turns = list(turns)
            windows = segment_windows([t[5] for t in turns], min_words=min_words, max_words=max_words)
            for window_index, (start, stop) in enumerate(windows):
                window = turns[start:stop]
                yield {
                    "context_id": f"{session.session_id}-w{window_index:02d}", "domain_id": session.domain_id,
                    "session_key": session.session_id, "session_id": session.pk, "window_index": window_index,
                    "first_turn": window[0][1], "last_turn": window[-1][1],
                    "turns": [{"speaker": t[2], "text": t[4], "source_role": t[3]} for t in window],
                    "n_words": sum(t[5] for t in window),
                    "metadata": {"source": "segmentation", "min_words": min_words, "max_words": max_words},
                }

    created = 0
    for chunk in _chunked(contexts(), CHUNK_SIZE):
        created += bulk_insert(Context, chunk)
    return {
        "min_words": min_words,
        "max_words": max_words,
        "created": {"sessions": len(todo), "contexts": created},
        "skipped": {"sessions": n_sessions_total - len(todo)},
        "domains": selectors.segmentation_stats(max_words=max_words),
    }


# --- JSONL imports ---------------------------------------------------------------------

class _Record:
    """Typed access to one JSONL record; a bad field raises InputError at its line."""

    def __init__(self, path, line: int, data: dict):
        self.path, self.line, self.data = path, line, data

    def fail(self, field: str, reason: str):
        raise InputError(self.path, self.line, field, reason)

    def text(self, name: str, *, required: bool = True, max_length: int | None = None) -> str:
        value = self.data.get(name)
        if value is None or value == "":
            if required:
                self.fail(name, "missing")
            return ""
        if not isinstance(value, str) or not value.strip():
            self.fail(name, "must be a non-empty string")
        if max_length and len(value) > max_length:
            self.fail(name, f"longer than {max_length} characters")
        return value

    def choice(self, name: str, choices, *, required: bool = True, default: str = "") -> str:
        value = self.text(name, required=required and not default) or default
        if value and value not in choices:
            self.fail(name, f"unknown value {value!r} (expected {', '.join(choices)})")
        return value

    def extras(self, known: set[str]) -> dict:
        return {k: v for k, v in self.data.items() if k not in known}


def _run_streaming_import(path, *, validate: Callable[[_Record], dict], resolve: Callable[[list], dict],
                          check_db: Callable[[list], None], write: Callable[[list, dict], None],
                          chunk_size: int) -> None:
    """Validate records one by one; every `chunk_size` records, resolve references and write.

    Runs inside the caller's transaction, so any error leaves nothing written. Clashes
    with rows already there (duplicate ids) are left to the database's unique constraints
    on the happy path; when one fires, or when a record is bad, `check_db` looks at the
    pending chunk to name the earliest bad line.
    """
    pending: list[tuple[int, dict]] = []

    def flush():
        resolved = resolve(pending)
        try:
            with transaction.atomic():  # a savepoint: the IntegrityError must not spoil the transaction
                write(pending, resolved)
        except IntegrityError:
            check_db(pending)
            raise
        pending.clear()

    try:
        for line, data in iter_jsonl(path):
            pending.append((line, validate(_Record(path, line, data))))
            if len(pending) >= chunk_size:
                flush()
        flush()
    except InputError:
        check_db(pending)
        raise


CONTEXT_FIELDS = {"context_id", "domain", "session_id", "window_index", "turns"}


@transaction.atomic
def contexts_import(*, path: str | Path, chunk_size: int = CHUNK_SIZE) -> dict:
    """Import `contexts.jsonl` (spec section 1). Unknown extra fields go to `metadata`."""
    domains_ensure()
    domains = set(Domain.objects.values_list("code", flat=True))
    written_after = Context.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    created: Counter = Counter()

    def validate(r: _Record) -> dict:
        context_id = r.text("context_id", max_length=160)
        domain = r.choice("domain", sorted(domains))
        session_id = r.text("session_id", max_length=120)
        window_index = r.data.get("window_index")
        if window_index is None:
            r.fail("window_index", "missing")
        if isinstance(window_index, bool) or not isinstance(window_index, int) or window_index < 0:
            r.fail("window_index", "must be an integer >= 0")
        if window_index > dialtom.MAX_INT:
            r.fail("window_index", f"out of range (at most {dialtom.MAX_INT})")
        turns = r.data.get("turns")
        if turns is None:
            r.fail("turns", "missing")
        if not isinstance(turns, list) or not turns:
            r.fail("turns", "must be a non-empty list")
        for n, turn in enumerate(turns):
            if not isinstance(turn, dict):
                r.fail(f"turns[{n}]", "must be an object with speaker and text")
            if turn.get("speaker") not in SPEAKERS:
                r.fail(f"turns[{n}].speaker", f"unknown speaker {turn.get('speaker')!r} (expected initiator or recipient)")
            if not isinstance(turn.get("text"), str) or not turn["text"].strip():
                r.fail(f"turns[{n}].text", "missing or empty")
        return {"context_id": context_id, "domain": domain, "session_id": session_id,
                "window_index": window_index, "turns": turns, "metadata": r.extras(CONTEXT_FIELDS)}

    def resolve(pending) -> dict:
        keys = {row["session_id"] for _, row in pending}
        return dict(Session.objects.filter(session_id__in=keys).order_by().values_list("session_id", "pk"))

    def check_db(pending) -> None:
        if not pending:
            return
        ids = [row["context_id"] for _, row in pending]
        keys = {row["session_id"] for _, row in pending}
        # Rows of earlier chunks are in the database already (same transaction): a clash with
        # one of them (pk above `written_after`) is a duplicate earlier in this file.
        taken = dict(Context.objects.filter(context_id__in=ids).order_by().values_list("context_id", "pk"))
        windows = {(key, index): pk for key, index, pk in Context.objects.filter(session_key__in=keys).order_by().values_list(
            "session_key", "window_index", "pk")}
        chunk_ids, chunk_windows = set(), set()

        def where(pk):
            return "already earlier in this file" if pk is None or pk > written_after else "already in the database"

        for line, row in pending:
            window = (row["session_id"], row["window_index"])
            if row["context_id"] in taken or row["context_id"] in chunk_ids:
                raise InputError(path, line, "context_id",
                                 f"duplicate id {row['context_id']!r} ({where(taken.get(row['context_id']))})")
            if window in windows or window in chunk_windows:
                raise InputError(path, line, "window_index",
                                 f"window {row['window_index']} of {row['session_id']} is {where(windows.get(window))}")
            chunk_ids.add(row["context_id"])
            chunk_windows.add(window)

    def write(pending, sessions: dict) -> None:
        bulk_insert(Context, [
            {"context_id": row["context_id"], "domain_id": row["domain"], "session_key": row["session_id"],
             "session_id": sessions.get(row["session_id"]), "window_index": row["window_index"],
             "turns": row["turns"], "n_words": sum(count_words(t["text"]) for t in row["turns"]),
             "metadata": row["metadata"]}
            for _, row in pending
        ])
        created.update(row["domain"] for _, row in pending)
        touched.update(row["session_id"] for _, row in pending)

    touched: set[str] = set()
    _run_streaming_import(path, validate=validate, resolve=resolve, check_db=check_db, write=write,
                          chunk_size=chunk_size)
    continuation_reveals_refresh(session_keys=touched)
    return {"file": str(path), "created": sum(created.values()), "by_domain": dict(sorted(created.items()))}


ITEM_FIELDS = {"item_id", "context_id", "task", "attribute", "target_speaker", "question", "options", "answer",
               "variant", "batch", "profile"}
BATCH_NAME = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")


def _validate_options(r: _Record) -> list[str]:
    options = r.data.get("options")
    if options is None:
        r.fail("options", "missing")
    if not isinstance(options, list):
        r.fail("options", "must be a list of 4 strings")
    if len(options) != 4:
        r.fail("options", f"expected exactly 4 options, got {len(options)}")
    for n, option in enumerate(options):
        if not isinstance(option, str) or not option.strip():
            r.fail(f"options[{n}]", "must be a non-empty string")
    if len({o.strip() for o in options}) != 4:
        r.fail("options", "options must be pairwise different")
    return options


def _validate_answer(r: _Record, variant: str) -> str:
    answer = r.data.get("answer")
    if answer is None or answer == "":
        r.fail("answer", "missing")
    if variant == Variant.COUNTERFACTUAL:
        if answer != NOTA:
            r.fail("answer", f"a counterfactual item's answer is NOTA (got {answer!r})")
    elif answer not in OPTION_LETTERS:
        r.fail("answer", f"unknown letter {answer!r} (expected A, B, C or D)")
    return answer


@transaction.atomic
def items_import(*, path: str | Path, chunk_size: int = CHUNK_SIZE) -> dict:
    """Import `items.jsonl` (spec section 2), streaming in chunks inside one transaction.

    Batches are created by name. Unknown extra fields go to `metadata`.
    """
    written_after = Item.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    batches: dict[str, int] = {}
    new_batches: list[str] = []
    created: dict[str, Counter] = defaultdict(Counter)

    def validate(r: _Record) -> dict:
        item_id = r.text("item_id", max_length=200)
        context_id = r.text("context_id", max_length=160)
        task = r.choice("task", TASKS)
        variant = r.choice("variant", VARIANTS, default=Variant.HARD)
        attribute = r.data.get("attribute") or ""
        attribute = ATTRIBUTE_CODES.get(attribute, attribute)
        if not attribute:
            r.fail("attribute", "missing (a retrospective item asks about one; a prospective item names the "
                                "state its distractors were made for)")
        if attribute not in ATTRIBUTES:
            r.fail("attribute", f"unknown attribute {attribute!r} (expected {', '.join(ATTRIBUTES)})")
        target_speaker = r.choice("target_speaker", SPEAKERS, required=False)
        question = r.text("question")
        options = _validate_options(r)
        answer = _validate_answer(r, variant)
        profile = r.data.get("profile")
        if task == Task.PROSPECTIVE and profile is None:
            r.fail("profile", "missing (a prospective item shows the mental-state profile)")
        if profile is not None and (not isinstance(profile, dict) or not profile):
            r.fail("profile", "must be a non-empty object")
        batch = r.text("batch", required=False)
        if batch and not BATCH_NAME.match(batch):
            r.fail("batch", f"{batch!r} is not a valid batch name (letters, digits, - and _, up to 100)")
        return {"item_id": item_id, "context_id": context_id, "task": task, "attribute": attribute,
                "variant": variant, "target_speaker": target_speaker, "question": question, "options": options,
                "answer": answer, "profile": profile or {}, "batch": batch, "metadata": r.extras(ITEM_FIELDS)}

    def resolve(pending) -> dict:
        contexts = {cid: (pk, domain) for cid, pk, domain in Context.objects.filter(
            context_id__in={row["context_id"] for _, row in pending}).order_by().values_list(
            "context_id", "pk", "domain_id")}
        for line, row in pending:
            if row["context_id"] not in contexts:
                raise InputError(path, line, "context_id",
                                 f"unknown context {row['context_id']!r} (import its contexts first)")
        return contexts

    def check_db(pending) -> None:
        if not pending:
            return
        contexts = {cid: (pk, domain) for cid, pk, domain in Context.objects.filter(
            context_id__in={row["context_id"] for _, row in pending}).order_by().values_list(
            "context_id", "pk", "domain_id")}
        # Rows of earlier chunks are in the database already (same transaction): a clash with
        # one of them (pk above `written_after`) is a duplicate earlier in this file.
        taken = dict(Item.objects.filter(item_id__in=[row["item_id"] for _, row in pending]).order_by()
                     .values_list("item_id", "pk"))
        context_ids = {pk: cid for cid, (pk, _) in contexts.items()}
        keys = {(context_ids[cpk], task, attribute, variant): pk for cpk, task, attribute, variant, pk in
                Item.objects.filter(context_id__in=list(context_ids)).order_by().values_list(
                    "context_id", "task", "attribute", "variant", "pk")}
        chunk_ids, chunk_keys = set(), set()

        def where(pk):
            return "already earlier in this file" if pk is None or pk > written_after else "already in the database"

        for line, row in pending:
            key = (row["context_id"], row["task"], row["attribute"], row["variant"])
            if row["context_id"] not in contexts:
                raise InputError(path, line, "context_id",
                                 f"unknown context {row['context_id']!r} (import its contexts first)")
            if row["item_id"] in taken or row["item_id"] in chunk_ids:
                raise InputError(path, line, "item_id",
                                 f"duplicate id {row['item_id']!r} ({where(taken.get(row['item_id']))})")
            if key in keys or key in chunk_keys:
                raise InputError(path, line, "context_id", (
                    f"a {row['variant']} {row['task']} {row['attribute']} item for {row['context_id']} "
                    f"is {where(keys.get(key))}"))
            chunk_ids.add(row["item_id"])
            chunk_keys.add(key)

    def write(pending, contexts: dict) -> None:
        for name in {row["batch"] for _, row in pending if row["batch"]} - batches.keys():
            batch, was_created = Batch.objects.get_or_create(
                name=name, defaults={"overlap": settings.DIALTOM_DEFAULT_OVERLAP,
                                     "lease_minutes": settings.DIALTOM_LEASE_MINUTES})
            batches[name] = batch.pk
            if was_created:
                new_batches.append(name)
        bulk_insert(Item, [
            {"item_id": row["item_id"], "context_id": contexts[row["context_id"]][0], "task": row["task"],
             "attribute": row["attribute"], "variant": row["variant"], "target_speaker": row["target_speaker"],
             "question": row["question"], "options": row["options"], "answer": row["answer"],
             "profile": row["profile"], "batch_id": batches.get(row["batch"]), "metadata": row["metadata"]}
            for _, row in pending
        ])
        for _, row in pending:
            created[contexts[row["context_id"]][1]][row["task"]] += 1
            touched.add(contexts[row["context_id"]][0])

    touched: set[int] = set()  # contexts with new items: their sessions' reveals are found again
    _run_streaming_import(path, validate=validate, resolve=resolve, check_db=check_db, write=write,
                          chunk_size=chunk_size)
    continuation_reveals_refresh(
        session_keys=set(Context.objects.filter(pk__in=touched).order_by().values_list("session_key", flat=True))
    )
    return {
        "file": str(path),
        "created": sum(sum(c.values()) for c in created.values()),
        "by_domain": {d: dict(sorted(c.items())) for d, c in sorted(created.items())},
        "batches_created": sorted(new_batches),
    }


# --- which dialogues show another window's continuation --------------------------------

def continuation_reveals_refresh(*, session_keys: Iterable[str] | None = None) -> int:
    """Find again, for the contexts of these sessions (None: every session), which dialogue
    shows which window's true continuation (`ContinuationReveal`, read by the context rule):
    exact normalised-text containment within a session (`continuations.reveals_among`).
    Returns how many pairs the sessions hold. Safe to run twice."""
    contexts = Context.objects.order_by()
    if session_keys is not None:
        session_keys = sorted(set(session_keys))
        if not session_keys:
            return 0
        contexts = contexts.filter(session_key__in=session_keys)
    dialogues = {pk: (key, turns) for pk, key, turns in contexts.values_list("pk", "session_key", "turns")}
    answers: dict[int, set[str]] = defaultdict(set)
    rows = Item.objects.filter(context_id__in=list(dialogues), task=Task.PROSPECTIVE, answer__in=OPTION_LETTERS)
    for context_pk, options, answer in rows.order_by().values_list("context_id", "options", "answer"):
        if isinstance(options, list) and len(options) == len(OPTION_LETTERS):
            answers[context_pk].add(options[OPTION_LETTERS.index(answer)])
    found = continuations.reveals_among(dialogues=dialogues, continuations=answers)
    with transaction.atomic():
        ContinuationReveal.objects.filter(dialogue_id__in=list(dialogues)).delete()
        for chunk in _chunks_of(sorted(found), CHUNK_SIZE):
            ContinuationReveal.objects.bulk_create([ContinuationReveal(dialogue_id=d, continuation_of_id=t) for d, t in chunk])
    return len(found)


# --- the DialToM authors' files --------------------------------------------------------

def _kind(item) -> str:
    task, variant = (item["task"], item["variant"]) if isinstance(item, dict) else item
    if task == Task.RETROSPECTIVE:
        return "retrospective"
    return {Variant.EASY: "easy", Variant.COUNTERFACTUAL: "counterfactual"}.get(variant, "prospective")


KINDS = ("retrospective", "prospective", "easy", "counterfactual")
_KIND_SQL = ("CASE WHEN task = 'retrospective' THEN 'retrospective' WHEN variant = 'easy' THEN 'easy' "
             "WHEN variant = 'counterfactual' THEN 'counterfactual' ELSE 'prospective' END")
# What the first pass learns, in temporary tables of this transaction (dropped at its end),
# so that memory does not grow with the number of records: a row per context or item met.
# On SQLite (`make demo`) the same tables and queries, in its dialect: `_staging_sql` says
# where the two differ (one statement an execute, no ON COMMIT DROP, no DISTINCT ON, no COPY).
_STAGING_TABLES = ("dialtom_seen", "dialtom_bad", "dialtom_first")
_STAGING_SQL = """
CREATE TEMP TABLE dialtom_seen (
    seq {serial} PRIMARY KEY, kind text NOT NULL, id text NOT NULL, digest bytea NOT NULL,
    file integer NOT NULL, line integer NOT NULL, key text NOT NULL, field text NOT NULL,
    context_id text NOT NULL, task text NOT NULL, attribute text NOT NULL, variant text NOT NULL,
    batch text NOT NULL, release jsonb
){on_commit_drop};
CREATE TEMP TABLE dialtom_bad (kind text NOT NULL, id text NOT NULL, reason text NOT NULL,
                               PRIMARY KEY (kind, id)){on_commit_drop}
"""
_FIRST_SQL = {
    # one row per valid id, where it is first met
    "postgresql": """
            CREATE TEMP TABLE dialtom_first ON COMMIT DROP AS
            SELECT DISTINCT ON (s.kind, s.id) {columns}
            FROM dialtom_seen s
            WHERE NOT EXISTS (SELECT 1 FROM dialtom_bad b WHERE b.kind = s.kind AND b.id = s.id)
            ORDER BY s.kind, s.id, s.seq""",
    "sqlite": """
            CREATE TEMP TABLE dialtom_first AS
            SELECT {columns}
            FROM dialtom_seen s
            WHERE NOT EXISTS (SELECT 1 FROM dialtom_bad b WHERE b.kind = s.kind AND b.id = s.id)
              AND s.seq = (SELECT min(f.seq) FROM dialtom_seen f WHERE f.kind = s.kind AND f.id = s.id)""",
}
_PREFIX_SQL = {"postgresql": "split_part(id, '-', 1)", "sqlite": "substr(id, 1, instr(id, '-') - 1)"}


def _staging_sql(statement: str | dict) -> list[str]:
    """The statements of `statement` (a dict: one per database) for this connection, one an item."""
    postgres = connection.vendor == "postgresql"
    if isinstance(statement, dict):
        statement = statement["postgresql" if postgres else "sqlite"]
    statement = statement.replace("{serial}", "serial" if postgres else "integer")
    statement = statement.replace("{on_commit_drop}", " ON COMMIT DROP" if postgres else "")
    return [s for s in statement.split(";") if s.strip()]


def _staging_run(cursor, statement: str | dict) -> None:
    for sql in _staging_sql(statement):
        cursor.execute(sql)


class _RowsIn:
    """Rows into a staging table: COPY on PostgreSQL, executemany elsewhere."""

    def __init__(self, cursor, table: str, columns: tuple[str, ...]):
        self.cursor, self.table, self.columns, self.rows = cursor, table, columns, []

    def __enter__(self):
        if connection.vendor == "postgresql":
            self._copy = self.cursor.copy(f"COPY {self.table} ({', '.join(self.columns)}) FROM STDIN")
            self.write_row = self._copy.__enter__().write_row
        else:
            self.write_row = self.rows.append
        return self

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            return self._copy.__exit__(*exc)
        if exc[0] is None and self.rows:
            marks = ", ".join(["%s"] * len(self.columns))
            self.cursor.executemany(f"INSERT INTO {self.table} ({', '.join(self.columns)}) VALUES ({marks})", self.rows)
        return False


def _rows_streamed(name: str, sql: str):
    """The rows of a query, streamed by a server-side cursor on PostgreSQL; a plain cursor elsewhere."""
    if connection.vendor == "postgresql":
        with connection.connection.cursor(name=name) as rows:
            rows.itersize = 2000
            rows.execute(sql)
            yield from rows
        return
    with connection.cursor() as rows:
        rows.execute(sql)
        yield from rows
JSON_COLUMNS = {"context": {1}, "item": {1 + dialtom.ITEM_COMPARED.index(c) for c in ("options", "profile")}}
_SEEN_COLUMNS = ("kind", "id", "digest", "file", "line", "key", "field", "context_id", "task", "attribute", "variant",
                 "batch", "release")


def _where(place: tuple) -> str:
    return f"{place[0]}:{place[1]} ({place[2]!r})"


def _chunks_of(values, size: int = 5000):
    iterator = iter(values)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _problem(file_name: str, line: int, key: str, field: str, reason: str) -> dialtom.Problem:
    return dialtom.Problem(file_name, line, key, field, reason)


@transaction.atomic
def dialtom_import(*, directory: str | Path, seed: int | None = None, batch: str | None = None,
                   strict: bool = False) -> dict:
    """Import every file of the DialToM authors in a directory (docs/data.md): the unverified
    pool, the verified release and the counterfactuals, whatever mix it holds.

    One item per (context, task, attribute, variant), whichever files give it: an item in
    the pool and in the release is one item, marked `retained_by_authors`. A part that
    cannot be a valid item (two equal options, continuations missing for a state, a key
    given twice with different content, already in the database with other content, ...)
    is skipped and listed in the report's `skipped` (file, line, key, field, reason);
    `strict=True` refuses the import instead, writing nothing. NUL characters are removed
    and listed in `warnings`. A file none of whose records is valid is refused.

    Two passes over the files, one file in memory at a time: the first fingerprints every
    context and item into a temporary table (`dialtom_seen`), where SQL finds the ids given
    twice with other content or clashing with the database; the second re-reads each file
    and streams what is new into the tables (COPY). One transaction; a second run creates
    nothing. Context ids come from the record id "session, window": "5, 2" in MI ->
    `mi-s0005-w02`. Items go to one batch per file (pool items to their pool file's,
    `dialtom-mi-data-0-50`; release-only items to `dialtom-mi-retrospective`, ...) unless
    `batch` is given.
    """
    domains_ensure()
    seed = settings.DIALTOM_SEED if seed is None else seed
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "-", "directory", "not a directory")
    files = dialtom.source_files(directory)
    if not files:
        raise InputError(directory, "-", "files", "no DialToM files here ({MI,ESC,PFG}_data_{start}_{count}.json, "
                                                  "{MI,ESC,PFG}_{retrospective,prospective,prospective-easy}"
                                                  "_verified.json, {MI,ESC,PFG}_counterfact.json)")
    domains = {d.code: d for d in Domain.objects.all()}
    names = [f.path.name for f in files]
    skipped: list[dialtom.Problem] = []
    warnings: list[dialtom.Problem] = []
    counterfactuals: dict[str, tuple[dict, tuple]] = {}  # a few hundred: kept in memory

    with connection.cursor() as cursor:
        for table in _STAGING_TABLES:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        _staging_run(cursor, _STAGING_SQL)

        # Pass 1: problems of single records into the report, fingerprints into dialtom_seen.
        for index, file in enumerate(files):
            n_records = n_valid = 0
            first_problem = None
            with _RowsIn(cursor, "dialtom_seen", _SEEN_COLUMNS) as copy:
                for parsed in dialtom.read(file, domain=domains[file.domain], seed=seed):
                    n_records += 1
                    warnings.extend(parsed.warnings)
                    skipped.extend(parsed.skipped)
                    first_problem = first_problem or (parsed.skipped[0] if parsed.skipped else None)
                    place = (file.path.name, parsed.line, parsed.key)
                    if parsed.counterfactual is not None:
                        n_valid += 1
                        cf = parsed.counterfactual
                        item_id = f"{cf['parent_id']}-counterfactual"
                        before = counterfactuals.get(item_id)
                        if before is None:
                            counterfactuals[item_id] = (cf, place)
                        elif before[0]["profile"] != cf["profile"]:
                            counterfactuals[item_id] = ({**before[0], "conflict": place}, before[1])
                        continue
                    if parsed.context is None:
                        continue
                    n_valid += 1
                    context = parsed.context
                    copy.write_row(("context", context["context_id"], dialtom.context_digest(context["turns"]), index,
                                    parsed.line, parsed.key, "ctx", context["context_id"], "", "", "", "", None))
                    for item in parsed.items:
                        copy.write_row(("item", item["item_id"], dialtom.item_digest(item), index, parsed.line,
                                        parsed.key, item["field"], context["context_id"], item["task"],
                                        item["attribute"], item["variant"], batch or file.batch,
                                        json.dumps(item["release"]) if "release" in item else None))
            if n_records and not n_valid:
                raise InputError(file.path, first_problem.line, first_problem.field,
                                 f"{first_problem.reason} (no record of this file is valid)")
        _staging_run(cursor, "CREATE INDEX dialtom_seen_kind_id ON dialtom_seen (kind, id, seq); ANALYZE dialtom_seen")

        # An id given twice with other content: every version is skipped.
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT s.kind, s.id, 'other ' || CASE s.kind WHEN 'context' THEN 'turns' ELSE 'content' END || ' in ' ||
                   (SELECT f.file || ':' || f.line || ':' || f.key FROM dialtom_seen f
                    WHERE f.kind = s.kind AND f.id = s.id ORDER BY f.seq LIMIT 1)
            FROM dialtom_seen s GROUP BY s.kind, s.id HAVING count(DISTINCT s.digest) > 1""")
        # ... or already in the database with other content (compared here, by fingerprint).
        for kind, sql in (
            ("context", "SELECT c.context_id, c.turns, s.digest FROM annotation_context c JOIN "
                        "(SELECT DISTINCT id, digest FROM dialtom_seen WHERE kind = 'context') s ON s.id = c.context_id"),
            ("item", f"SELECT i.item_id, i.{', i.'.join(dialtom.ITEM_COMPARED)}, s.digest FROM annotation_item i JOIN "
                     "(SELECT DISTINCT id, digest FROM dialtom_seen WHERE kind = 'item') s ON s.id = i.item_id"),
        ):
            differ = []
            for row in _rows_streamed(f"dialtom_{kind}_check", sql):
                # Django reads jsonb as text on this connection: decode it as JSONField would
                row = [json.loads(v) if isinstance(v, str) and n in JSON_COLUMNS[kind] else v for n, v in enumerate(row)]
                mine = bytes(row[-1])
                if kind == "context":
                    theirs = dialtom.context_digest(row[1])
                else:
                    theirs = dialtom.item_digest(dict(zip(dialtom.ITEM_COMPARED, row[1:-1], strict=True)))
                if theirs != mine:
                    differ.append((kind, row[0], f"already in the database with other "
                                                 f"{'turns' if kind == 'context' else 'content'}"))
            for chunk in _chunks_of(differ):
                cursor.executemany("INSERT INTO dialtom_bad (kind, id, reason) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                                   chunk)
        # ... or whose slot (context, task, attribute, variant) is another item's in the database.
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT DISTINCT 'item', s.id, 'its slot (' || s.task || ' ' || s.attribute || ' ' || s.variant ||
                   ') is taken by item ' || i.item_id || ' in the database'
            FROM dialtom_seen s JOIN annotation_context c ON c.context_id = s.context_id
            JOIN annotation_item i ON i.context_id = c.id AND i.task = s.task AND i.attribute = s.attribute
                                  AND i.variant = s.variant AND i.item_id <> s.id
            WHERE s.kind = 'item' ON CONFLICT DO NOTHING""")
        # The places of what is skipped go to the report (the items of a skipped context
        # are not listed one by one: the context's line says it).
        cursor.execute("""
            SELECT s.file, s.line, s.key, s.field, s.kind, s.id, b.reason FROM dialtom_seen s
            JOIN dialtom_bad b ON b.kind = s.kind AND b.id = s.id ORDER BY s.seq""")
        for file_index, line, key, field_name, kind, id_, reason in cursor.fetchall():
            where, _, rest = reason.partition(" in ")
            if rest and ":" in rest:  # "other content in <file index>:<line>:<key>"
                f, ln, k = rest.split(":", 2)
                reason = f"{where} in {_where((names[int(f)], int(ln), k))}"
            what = f"context {id_} has {reason}" if kind == "context" else f"item {id_}: {reason}"
            skipped.append(_problem(names[file_index], line, key, field_name, f"{what}; not imported"
                                    if kind == "item" else f"{what}; none of its versions is imported"))
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT DISTINCT 'item', s.id, 'its context is skipped' FROM dialtom_seen s
            JOIN dialtom_bad b ON b.kind = 'context' AND b.id = s.context_id WHERE s.kind = 'item'
            ON CONFLICT DO NOTHING""")
        for item_id, (cf, place) in counterfactuals.items():
            if "conflict" in cf:
                skipped.extend(_problem(*p, "profile", f"item {item_id}: other profiles in {_where(place)} and "
                                                       f"{_where(cf['conflict'])}; not imported")
                               for p in (place, cf["conflict"]))
        if strict and skipped:
            first = skipped[0]
            raise InputError(first.file, first.line, first.field,
                             first.reason + (f" (and {len(skipped) - 1} more problem(s))" if len(skipped) > 1 else ""))

        # One row per valid id: where it is first met, its batch, the release's word on it.
        columns = """s.kind, s.id, s.file, s.batch, s.task, s.variant,
                   (SELECT r.release FROM dialtom_seen r WHERE r.kind = s.kind AND r.id = s.id AND r.release IS NOT NULL
                    ORDER BY r.seq LIMIT 1) AS release,
                   EXISTS (SELECT 1 FROM annotation_item i WHERE s.kind = 'item' AND i.item_id = s.id)
                   OR EXISTS (SELECT 1 FROM annotation_context c WHERE s.kind = 'context' AND c.context_id = s.id)
                   AS existing"""
        _staging_run(cursor, {vendor: sql.replace("{columns}", columns) for vendor, sql in _FIRST_SQL.items()})
        _staging_run(cursor, "CREATE INDEX dialtom_first_file ON dialtom_first (file, kind); ANALYZE dialtom_first")
        # An item already there that the release now holds is marked as retained by the authors.
        cursor.execute("""
            UPDATE annotation_item AS i SET retained_by_authors = true FROM dialtom_first f
            WHERE f.kind = 'item' AND f.id = i.item_id AND f.release IS NOT NULL AND NOT i.retained_by_authors""")
        n_marked = cursor.rowcount

        # Pass 2: each file again; what is new and first met in it is written (COPY).
        batch_pks: dict[str, int] = {}

        def batch_pk(name: str) -> int:
            if name not in batch_pks:
                batch_pks[name] = Batch.objects.get_or_create(
                    name=name, defaults={"overlap": settings.DIALTOM_DEFAULT_OVERLAP,
                                         "lease_minutes": settings.DIALTOM_LEASE_MINUTES})[0].pk
            return batch_pks[name]

        created: Counter = Counter()
        touched: set[str] = set()  # sessions with new contexts or items: their reveals are found again
        for index, file in enumerate(files):
            if file.kind == "counterfact":
                continue
            cursor.execute("SELECT kind, id, batch, release FROM dialtom_first WHERE file = %s AND NOT existing", [index])
            todo = {(kind, id_): (batch_name, json.loads(release) if isinstance(release, str) else release)
                    for kind, id_, batch_name, release in cursor.fetchall()}
            if not todo:
                continue
            new_contexts, new_items = [], []
            for parsed in dialtom.read(file, domain=domains[file.domain], seed=seed):
                context = parsed.context
                if context is None:
                    continue
                if todo.pop(("context", context["context_id"]), None) is not None:
                    touched.add(context["session_key"])
                    new_contexts.append({
                        "context_id": context["context_id"], "domain_id": context["domain"],
                        "session_key": context["session_key"], "window_index": context["window_index"],
                        "turns": context["turns"], "n_words": sum(count_words(t["text"]) for t in context["turns"]),
                        "metadata": {**context["metadata"], "file": file.path.name}})
                for item in parsed.items:
                    first = todo.pop(("item", item["item_id"]), None)
                    if first is None:
                        continue
                    touched.add(context["session_key"])
                    batch_name, release = first
                    metadata = {"source": "dialtom-pool" if file.kind == "pool" else "dialtom-release",
                                "file": file.path.name, "key": parsed.key.partition("_")[0],
                                "state": (release or {}).get("state") or item["field"].rpartition(".")[2]}
                    if release:
                        metadata["release"] = release
                    new_items.append({
                        **{k: item[k] for k in ("item_id", "task", "attribute", "variant", "target_speaker",
                                                "question", "options", "answer", "profile")},
                        "context_id": context["context_id"], "batch_id": batch_pk(batch_name),
                        "retained_by_authors": bool(release), "metadata": metadata})
            for chunk in _chunks_of(new_contexts, CHUNK_SIZE):
                bulk_insert(Context, chunk)
            created["contexts"] += len(new_contexts)
            context_pks = dict(Context.objects.filter(
                context_id__in={row["context_id"] for row in new_items}).order_by().values_list("context_id", "pk"))
            for row in new_items:
                row["context_id"] = context_pks[row["context_id"]]
                created[_kind(row)] += 1
            for chunk in _chunks_of(new_items, CHUNK_SIZE):
                bulk_insert(Item, chunk)

        # Totals over the valid ids (created now or there before).
        cursor.execute(f"""
            SELECT kind, {_staging_sql(_PREFIX_SQL)[0]}, {_KIND_SQL}, count(*), count(*) FILTER (WHERE release IS NOT NULL),
                   count(*) FILTER (WHERE existing)
            FROM dialtom_first GROUP BY 1, 2, 3""")
        totals: Counter = Counter()
        by_domain: dict[str, Counter] = defaultdict(Counter)
        existing: Counter = Counter()
        n_retained = 0
        for kind, domain_code, item_kind, n, n_release, n_existing in cursor.fetchall():
            if kind == "context":
                totals["contexts"] += n
                existing["contexts"] += n_existing
                continue
            totals[item_kind] += n
            by_domain[domain_code][item_kind] += n
            existing["items"] += n_existing
            n_retained += n_release
        # ON COMMIT DROP does not fire when the caller's transaction goes on (a savepoint here)
        for table in _STAGING_TABLES:
            cursor.execute(f"DROP TABLE {table}")

    # Counterfactuals: the prospective item of (context, state), now in the database.
    counterfactual_ok: list[str] = []
    wanted = {cf["parent_id"]: item_id for item_id, (cf, _) in counterfactuals.items() if "conflict" not in cf}
    parents = {row["item_id"]: row for row in Item.objects.filter(
        item_id__in=list(wanted), task=Task.PROSPECTIVE, variant=Variant.HARD).order_by().values(
        "pk", "item_id", "task", "attribute", "target_speaker", "question", "options", "context_id")}
    existing_cf = {row["item_id"]: row for row in Item.objects.filter(item_id__in=list(wanted.values())).order_by().values(
        "item_id", *dialtom.ITEM_COMPARED)}
    new_cf, cf_problems = [], []
    for parent_id, item_id in wanted.items():
        cf, place = counterfactuals[item_id]
        parent = parents.get(parent_id)
        if parent is None:
            cf_problems.append(_problem(*place, "key", f"no prospective item {parent_id} (its context and state) "
                                                       "in this directory or the database; not imported"))
            continue
        item = dialtom.counterfactual_item(parent=parent, profile=cf["profile"])
        before = existing_cf.get(item_id)
        if before is not None and dialtom.item_digest(before) != dialtom.item_digest(item):
            cf_problems.append(_problem(*place, "profile", f"item {item_id}: already in the database with other "
                                                           "content; not imported"))
            continue
        counterfactual_ok.append(item_id)
        if before is not None:
            existing["items"] += 1
            continue
        file = files[names.index(place[0])]
        new_cf.append({**{k: item[k] for k in ("item_id", "task", "attribute", "variant", "target_speaker", "question",
                                               "options", "answer", "profile")},
                       "context_id": parent["context_id"], "parent_id": parent["pk"],
                       "batch_id": batch_pk(batch or file.batch),
                       "metadata": {"source": "dialtom-counterfact", "file": place[0], "key": place[2]}})
    if strict and cf_problems:
        raise cf_problems[0].error()
    skipped.extend(cf_problems)
    bulk_insert(Item, new_cf)
    created["counterfactual"] += len(new_cf)
    reveals = continuation_reveals_refresh(session_keys=touched) if touched else 0
    totals["counterfactual"] = len(counterfactual_ok)
    for item_id in counterfactual_ok:
        by_domain[item_id.split("-", 1)[0]]["counterfactual"] += 1

    return {
        "directory": str(directory),
        "files": names,
        "contexts": totals["contexts"],
        **{k: totals[k] for k in KINDS},
        "references": 0,  # the written inferences: import_dialtom adds them (references.services)
        "retained_by_authors": n_retained,
        "created": {"contexts": created["contexts"], "items": sum(created[k] for k in KINDS),
                    **{k: created[k] for k in KINDS}, "references": 0, "marked_retained": n_marked},
        "existing": {"contexts": existing["contexts"], "items": existing["items"]},
        "skipped": [p.as_dict() for p in skipped],
        "warnings": [p.as_dict() for p in warnings],
        "by_domain": {d: {k: c[k] for k in KINDS} for d, c in sorted(by_domain.items())},
        "continuation_reveals": reveals,
    }


def contexts_ensure(contexts: dict[str, tuple[dict, dict]]) -> tuple[dict[str, int], int]:
    """Create the contexts not in the database yet, from `context_id -> (fields as made by
    dialtom.context_of, where)`; one already there with other turns raises InputError at its
    `where` ({"file", "line", "field"}). Returns (context_id -> pk, how many were created)."""
    existing = {}
    for chunk in _chunks_of(contexts):
        for context_id, pk, turns in Context.objects.filter(context_id__in=chunk).order_by().values_list(
                "context_id", "pk", "turns"):
            context, where = contexts[context_id]
            if dialtom.context_digest(turns) != dialtom.context_digest(context["turns"]):
                raise InputError(where["file"], where["line"], "ctx",
                                 f"context {context_id} is already in the database with other turns")
            existing[context_id] = pk
    new = Context.objects.bulk_create([
        Context(context_id=c["context_id"], domain_id=c["domain"], session_key=c["session_key"],
                window_index=c["window_index"], turns=c["turns"],
                n_words=sum(count_words(t["text"]) for t in c["turns"]), metadata=c["metadata"])
        for context_id, (c, _) in contexts.items() if context_id not in existing
    ])
    return {**existing, **{c.context_id: c.pk for c in new}}, len(new)
