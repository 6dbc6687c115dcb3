"""Writes of the annotation app: corpus ingestion, segmentation, JSONL imports, the
authors' release import and the demo data set.

Every function is all-or-nothing (one transaction) and reports bad input as
`parsers.InputError` (`file:line: field: reason`); the management commands turn that into
a CommandError. Each returns a JSON-serialisable report of what it did.
"""
from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from dialtom_site import jobs

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
from .bulk import bulk_insert, chunked

CHUNK_SIZE = 2000
# made after an import that wrote contexts or items: what a release holds of each (releases.records)
RELEASE_RECORDS_TASK = "releases.tasks.release_records_refresh_task"
TASKS, VARIANTS, ATTRIBUTES, SPEAKERS = (tuple(c.values) for c in (Task, Variant, Attribute, Speaker))


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
    for chunk in chunked(turns, 5000):
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
    for chunk in chunked(contexts(), CHUNK_SIZE):
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
    if touched:
        jobs.follow_up_on_commit(RELEASE_RECORDS_TASK)
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
    if touched:
        jobs.follow_up_on_commit(RELEASE_RECORDS_TASK)
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
        for chunk in chunked(sorted(found), CHUNK_SIZE):
            ContinuationReveal.objects.bulk_create([ContinuationReveal(dialogue_id=d, continuation_of_id=t) for d, t in chunk])
    return len(found)
