"""Writes of the crowd-worker reference workflow (issue 4).

The unit of work is (context, attribute) with k = `per_context` writers each; a claim
gives a worker a context and up to `attributes_per_worker` of its attributes that still
need writers, and the assignment holds one ReferenceSeat per attribute while it is live.

Lock order, everywhere: ReferenceSetContext (the queue row) → ReferenceAssignment →
ReferenceSeat / ReferenceDraft / SimilarityRun. The queue takes the context row with SKIP
LOCKED; the unique constraints on a live (worker, context) and on a seat's (context,
attribute, slot) and (context, attribute, worker) back the rules in SQL.
"""
import difflib
import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Attribute, Context, Speaker

from .models import (
    LIVE_ASSIGNMENT,
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceDraft,
    ReferenceSeat,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSetStatus,
    ReferenceSubmission,
)
from .selectors import contexts_stratified_sample

MAX_TEXT_CHARS = 5000
MAX_SECONDS = 24 * 3600
NEAR_IDENTICAL_RATIO = 0.9


class ReferenceWorkflowError(Exception):
    """A request the workflow refuses (wrong state, not yours, closed set). `str()` is for people."""


class ReferenceValidationError(ReferenceWorkflowError):
    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(errors.values()))


class InputFormatError(ValueError):
    """Bad uploaded input; `messages` are `file:line: field: reason`."""

    def __init__(self, messages: list[str]):
        self.messages = messages
        super().__init__("\n".join(messages))


# --- reference sets ------------------------------------------------------------------


def context_ids_parse(*, lines, filename: str) -> list[str]:
    """An uploaded list of context ids: one a line (or JSONL with `context_id`); # comments and blanks skipped."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    errors: list[str] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                line = json.loads(line).get("context_id", "")
            except (json.JSONDecodeError, AttributeError):
                errors.append(f"{filename}:{number}: context_id: not valid JSON")
                continue
            if not isinstance(line, str) or not line.strip():
                errors.append(f"{filename}:{number}: context_id: missing")
                continue
            line = line.strip()
        if line in seen:
            errors.append(f"{filename}:{number}: context_id: {line!r} repeats line {seen[line]}")
            continue
        seen[line] = number
        ids.append(line)
    known = set(Context.objects.filter(context_id__in=ids).values_list("context_id", flat=True))
    errors.extend(f"{filename}:{seen[c]}: context_id: unknown context {c!r}" for c in ids if c not in known)
    if not ids and not errors:
        errors.append(f"{filename}:1: context_id: the file lists no context")
    if errors:
        raise InputFormatError(sorted(errors, key=lambda m: int(m.split(":")[1])))
    return ids


@transaction.atomic
def reference_set_create(
    *,
    name: str,
    per_context: int,
    size: int | None = None,
    seed: int = 7,
    context_ids: list[str] | None = None,
    target_speaker: str = Speaker.RECIPIENT,
    lease_minutes: int = 30,
    min_chars: int = 20,
    attributes: list[str] | None = None,
    attributes_per_worker: int = 6,
    created_by=None,
) -> ReferenceSet:
    """A reference subset: `size` contexts stratified by domain (seeded), or the given context ids.

    Each context asks for `attributes` (default all six), each a (context, attribute) unit
    with `per_context` writers; a claim gives a worker up to `attributes_per_worker` of them.
    """
    if ReferenceSet.objects.filter(name=name).exists():
        raise ReferenceWorkflowError(f"name: a reference set called {name!r} exists already")
    if not re.fullmatch(r"[-a-zA-Z0-9_]+", name or ""):
        raise ReferenceWorkflowError("name: letters, digits, - and _ only")
    if per_context < 1:
        raise ReferenceWorkflowError("per_context: must be at least 1")
    if target_speaker not in Speaker.values:
        raise ReferenceWorkflowError(f"target_speaker: one of {', '.join(Speaker.values)}")
    attributes = attributes_clean(attributes)
    if not 1 <= attributes_per_worker <= len(Attribute.values):
        raise ReferenceWorkflowError(f"attributes_per_worker: from 1 to {len(Attribute.values)}")
    if context_ids is not None:
        pks_by_id = dict(Context.objects.filter(context_id__in=context_ids).values_list("context_id", "pk"))
        missing = [c for c in context_ids if c not in pks_by_id]
        if missing:
            raise ReferenceWorkflowError(f"context_id: unknown context {missing[0]!r}")
        pks = [pks_by_id[c] for c in context_ids]
        source = ReferenceSet.Source.IDS
    else:
        try:
            pks = contexts_stratified_sample(size=size or 0, seed=seed)
        except ValueError as exc:
            raise ReferenceWorkflowError(str(exc)) from exc
        source = ReferenceSet.Source.STRATIFIED
    reference_set = ReferenceSet.objects.create(
        name=name,
        per_context=per_context,
        source=source,
        seed=seed if source == ReferenceSet.Source.STRATIFIED else None,
        target_speaker=target_speaker,
        lease_minutes=lease_minutes,
        min_chars=min_chars,
        attributes_per_worker=attributes_per_worker,
        created_by=created_by,
    )
    ReferenceSetContext.objects.bulk_create(
        ReferenceSetContext(reference_set=reference_set, context_id=pk, position=i, attributes=attributes)
        for i, pk in enumerate(pks)
    )
    return reference_set


def attributes_clean(attributes) -> list[str]:
    """A list of attribute names (or a comma-separated string) → the distinct ones in Attribute order; None → all six."""
    if attributes is None or attributes == "" or attributes == []:
        return list(Attribute.values)
    if isinstance(attributes, str):
        attributes = attributes.split(",")
    names = {str(a).strip().lower() for a in attributes if str(a).strip()}
    unknown = sorted(names - set(Attribute.values))
    if unknown:
        raise ReferenceWorkflowError(f"attributes: unknown {', '.join(unknown)}; one or more of {', '.join(Attribute.values)}")
    return [a for a in Attribute.values if a in names]


def reference_set_status_set(*, reference_set_id: int, status: str) -> ReferenceSet:
    if status not in ReferenceSetStatus.values:
        raise ReferenceWorkflowError(f"status: one of {', '.join(ReferenceSetStatus.values)}")
    ReferenceSet.objects.filter(pk=reference_set_id).update(status=status)
    return ReferenceSet.objects.get(pk=reference_set_id)


# --- the queue --------------------------------------------------------------------------


def _member_lock(member_id: int) -> ReferenceSetContext:
    return ReferenceSetContext.objects.select_for_update(of=("self",)).select_related("reference_set").get(pk=member_id)


def _assignment_lock(assignment_id) -> ReferenceAssignment:
    return ReferenceAssignment.objects.select_for_update().get(pk=assignment_id)


def _live_now(now, prefix: str = ""):
    """Assignments that hold their seats: anything but expired, and active ones only while their lease runs."""
    held = [AssignmentStatus.SUBMITTED, AssignmentStatus.SENT_BACK, AssignmentStatus.ACCEPTED]
    return Q(**{f"{prefix}status__in": held}) | Q(**{f"{prefix}status": AssignmentStatus.ACTIVE, f"{prefix}expires_at__gt": now})


def _stale_expire(*, member: ReferenceSetContext, now, keep=None) -> None:
    """Under the member's lock: active assignments past their lease expire and give their seats back.

    Seats of an assignment already marked expired (by any path) go too: a seat exists only for live work.
    """
    stale = ReferenceAssignment.objects.filter(member=member, status=AssignmentStatus.ACTIVE, expires_at__lte=now)
    if keep is not None:
        stale = stale.exclude(pk=keep.pk)
    stale.update(status=AssignmentStatus.EXPIRED)
    ReferenceSeat.objects.filter(member=member, assignment__status=AssignmentStatus.EXPIRED).delete()


def _free_slots(*, member: ReferenceSetContext) -> dict[str, list[int]]:
    """attribute → the free slots of that (context, attribute) unit, for the member's attributes."""
    used: dict[str, set[int]] = {a: set() for a in member.attributes}
    for attribute, slot in ReferenceSeat.objects.filter(member=member).values_list("attribute", "slot"):
        used.setdefault(attribute, set()).add(slot)
    k = member.reference_set.per_context
    return {a: [s for s in range(k) if s not in used[a]] for a in member.attributes}


def _seats_take(*, member: ReferenceSetContext, assignment: ReferenceAssignment, free: dict[str, list[int]]) -> None:
    ReferenceSeat.objects.bulk_create(
        ReferenceSeat(member=member, attribute=a, slot=free[a][0], assignment=assignment, worker_id=assignment.worker_id)
        for a in assignment.attributes
    )


def _assignment_revive(*, member: ReferenceSetContext, assignment: ReferenceAssignment) -> None:
    """An expired assignment whose worker comes back: take a seat again for each of its attributes, if all are free.

    Call with the member row and then the assignment row locked.
    """
    now = timezone.now()
    _stale_expire(member=member, now=now, keep=assignment)
    live = ReferenceAssignment.objects.filter(member=member).filter(LIVE_ASSIGNMENT).exclude(pk=assignment.pk)
    if live.filter(worker_id=assignment.worker_id).exists():
        raise ReferenceWorkflowError("you hold this context under another assignment; open it from your queue")
    ReferenceSeat.objects.filter(assignment=assignment).delete()
    free = _free_slots(member=member)
    if any(not free.get(a) for a in assignment.attributes):
        raise ReferenceWorkflowError(
            "your lease on this context ran out and others have taken every place; your draft is kept"
        )
    _seats_take(member=member, assignment=assignment, free=free)
    assignment.status = AssignmentStatus.ACTIVE
    assignment.expires_at = now + timedelta(minutes=member.reference_set.lease_minutes)
    assignment.save(update_fields=["status", "expires_at"])


def _ensure_crowd_worker(worker) -> None:
    if not getattr(worker, "is_crowd_worker", False):
        raise ReferenceWorkflowError("only crowd workers write references")


@transaction.atomic
def reference_assignment_claim_next(*, worker, reference_set_id: int) -> ReferenceAssignment | None:
    """The worker's current context in this set, or a new one with attributes that still need writers; None when none is left.

    The context row is taken with FOR UPDATE SKIP LOCKED, so concurrent workers pass each
    other instead of queueing; under that lock stale leases are expired and the worker
    takes a seat on up to `attributes_per_worker` of the context's attributes that have a
    free one (those with the fewest writers first). Unique constraints on a live (context,
    worker) and on the seats back it in SQL.
    """
    _ensure_crowd_worker(worker)
    reference_set = ReferenceSet.objects.get(pk=reference_set_id)
    if reference_set.status != ReferenceSetStatus.OPEN:
        raise ReferenceWorkflowError(f"the reference set {reference_set.name} is {reference_set.get_status_display().lower()}")
    now = timezone.now()
    lease = timedelta(minutes=reference_set.lease_minutes)

    # Resume: a context this worker still holds (even past its lease: nobody can take a held slot).
    current = (
        ReferenceAssignment.objects.filter(worker=worker, member__reference_set=reference_set, status=AssignmentStatus.ACTIVE)
        .order_by("claimed_at", "id")
        .values_list("pk", "member_id")
        .first()
    )
    if current:
        _member_lock(current[1])
        assignment = _assignment_lock(current[0])
        if assignment.status == AssignmentStatus.ACTIVE:
            assignment.expires_at = now + lease
            assignment.save(update_fields=["expires_at"])
            return assignment

    # Seats held now (a stale lease's seats count as free): fewer than k × the member's attributes
    # means some (context, attribute) still has room.
    live = (
        ReferenceSeat.objects.filter(member=OuterRef("pk"))
        .filter(_live_now(now, prefix="assignment__"))
        .values("member")
        .annotate(n=Count("id"))
        .values("n")
    )
    capacity = F("n_attributes") * reference_set.per_context
    mine = ReferenceAssignment.objects.filter(member=OuterRef("pk"), worker=worker).filter(LIVE_ASSIGNMENT)
    skipped: list[int] = []
    for _attempt in range(10):
        candidates = (
            ReferenceSetContext.objects.filter(reference_set=reference_set)
            .exclude(pk__in=skipped)
            .exclude(Exists(mine))
            .alias(
                n_live=Coalesce(Subquery(live, output_field=IntegerField()), Value(0)),
                n_attributes=F("attributes__len"),
            )
            .filter(n_live__lt=capacity)
            .order_by("position")
        )
        # A savepoint per context tried: one found full under its lock is let go at once. Holding
        # it while waiting below for another context's lock could deadlock with a claim that
        # holds that one and waits for this one (each had seen the other's context with room).
        tried = transaction.savepoint()
        member = candidates.select_for_update(skip_locked=True, of=("self",)).first()
        if member is None:
            # Every context with room is locked by another claim right now: wait for the first
            # one rather than answer "nothing left" (its room is re-read under the lock).
            pk = candidates.values_list("pk", flat=True).first()
            if pk is None:
                transaction.savepoint_commit(tried)
                return None
            member = ReferenceSetContext.objects.select_for_update(of=("self",)).get(pk=pk)
        # Under the row lock: free the seats of stale leases, then take the attributes with room.
        member.reference_set = reference_set
        _stale_expire(member=member, now=now)
        free = _free_slots(member=member)
        open_attributes = sorted((a for a in member.attributes if free[a]), key=lambda a: (-len(free[a]), Attribute.values.index(a)))
        chosen = open_attributes[: reference_set.attributes_per_worker]
        if not chosen:
            transaction.savepoint_rollback(tried)  # releases the row lock (nothing was written that counts)
            skipped.append(member.pk)
            continue
        transaction.savepoint_commit(tried)
        assignment = ReferenceAssignment.objects.create(
            member=member, worker=worker, attributes=[a for a in Attribute.values if a in chosen], expires_at=now + lease
        )
        _seats_take(member=member, assignment=assignment, free=free)
        return assignment
    return None


def _clean_texts(texts: dict, attributes: list[str]) -> dict[str, str]:
    """The texts of the given attributes only (others are not this worker's to write), cut to MAX_TEXT_CHARS."""
    return {a: str(texts.get(a) or "")[:MAX_TEXT_CHARS] for a in attributes}


def _clean_seconds(seconds) -> float:
    try:
        value = float(seconds or 0)
    except (TypeError, ValueError):
        return 0.0
    return min(max(value, 0.0), MAX_SECONDS) if value == value else 0.0


def _draft_upsert(
    *, member_id: int, worker_id: int, texts: dict, seconds_spent: float, client_ts: int | None = None, client_id: str = ""
) -> bool:
    """Insert or update the draft; False (nothing written) when the stored one was edited later.

    `client_ts` orders the saves of one browser (debounced autosaves, the `pagehide` beacon
    of a page already left): under the draft's row lock a save older than the stored edit
    is dropped, so a late beacon never overwrites newer text. Without it the save is
    unconditional (a submit, the no-JavaScript *Save draft* button).
    """
    if client_ts is not None:
        stored = (
            ReferenceDraft.objects.select_for_update()
            .filter(member_id=member_id, worker_id=worker_id)
            .values_list("client_ts", flat=True)
            .first()
        )
        if stored is not None and stored > client_ts:
            return False
    ReferenceDraft.objects.bulk_create(
        [
            ReferenceDraft(
                member_id=member_id,
                worker_id=worker_id,
                texts=texts,
                seconds_spent=seconds_spent,
                client_ts=client_ts or 0,
                client_id=client_id if client_ts is not None else "",
            )
        ],
        update_conflicts=True,
        unique_fields=["member", "worker"],
        update_fields=["texts", "seconds_spent", "updated_at"] + (["client_ts", "client_id"] if client_ts is not None else []),
    )
    return True


def _clean_client_ts(value) -> int | None:
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value if 0 <= value < 2**62 else None


@dataclass
class DraftSaveResult:
    draft: ReferenceDraft
    warning: str = ""
    stale: bool = False  # a newer edit was stored already; this save was dropped


@transaction.atomic
def reference_draft_save(
    *, worker, assignment_id, texts: dict, seconds_spent=0, client_ts=None, client_id: str = ""
) -> DraftSaveResult:
    """Autosave: upsert the worker's draft for this context, and keep the lease alive.

    The draft is stored even when the lease ran out and every place was taken meanwhile
    (then `warning` says so); only submitted or accepted work is refused. A save with a
    `client_ts` older than the stored draft's is dropped (`stale`).
    """
    assignment = (
        ReferenceAssignment.objects.filter(pk=assignment_id, worker=worker).select_related("member__reference_set").first()
    )
    if assignment is None:
        raise ReferenceWorkflowError("not your assignment")
    if assignment.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.ACCEPTED):
        raise ReferenceWorkflowError(f"this work is {assignment.get_status_display().lower()}: it cannot be edited")
    warning = ""
    if assignment.status == AssignmentStatus.EXPIRED:
        try:
            with transaction.atomic():
                member = _member_lock(assignment.member_id)
                _assignment_revive(member=member, assignment=_assignment_lock(assignment.pk))
        except ReferenceWorkflowError as exc:
            warning = str(exc)
    elif assignment.status == AssignmentStatus.ACTIVE:
        lease = timedelta(minutes=assignment.member.reference_set.lease_minutes)
        ReferenceAssignment.objects.filter(pk=assignment.pk, status=AssignmentStatus.ACTIVE).update(
            expires_at=timezone.now() + lease
        )
    written = _draft_upsert(
        member_id=assignment.member_id,
        worker_id=worker.pk,
        texts=_clean_texts(texts, assignment.attributes),
        seconds_spent=_clean_seconds(seconds_spent),
        client_ts=_clean_client_ts(client_ts),
        client_id=str(client_id or "")[:40],
    )
    draft = ReferenceDraft.objects.get(member_id=assignment.member_id, worker_id=worker.pk)
    return DraftSaveResult(draft=draft, warning=warning, stale=not written)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def reference_texts_validate(*, texts: dict, min_chars: int, attributes: list[str] | None = None) -> dict[str, str]:
    """attribute → message, for every field of `attributes` (default all six) that is empty, too short, or a
    (near) copy of an earlier one, and for any text given for an attribute outside them."""
    attributes = list(Attribute.values) if attributes is None else attributes
    labels = dict(Attribute.choices)
    errors: dict[str, str] = {
        a: f"{labels.get(a, a)}: not assigned to you for this context."
        for a, t in texts.items() if a not in attributes and str(t or "").strip()
    }
    for attr in attributes:
        text = str(texts.get(attr) or "").strip()
        if not text:
            errors[attr] = f"{labels[attr]}: write an inference of at least {min_chars} characters."
        elif len(text) < min_chars:
            errors[attr] = f"{labels[attr]}: too short ({len(text)} characters); write at least {min_chars}."
    normalised = {a: _normalise(str(texts.get(a) or "")) for a in attributes if a not in errors}
    done: list[str] = []
    for attr in attributes:
        if attr not in normalised:
            continue
        for earlier in done:
            if normalised[attr] == normalised[earlier]:
                errors[attr] = f"{labels[attr]}: the same text as {labels[earlier]}; write a different inference for each attribute."
                break
            if difflib.SequenceMatcher(None, normalised[attr], normalised[earlier]).ratio() >= NEAR_IDENTICAL_RATIO:
                errors[attr] = f"{labels[attr]}: nearly the same text as {labels[earlier]}; write a different inference for each attribute."
                break
        done.append(attr)
    return errors


@dataclass
class SubmitResult:
    submission: ReferenceSubmission
    created: bool


@transaction.atomic
def reference_submit(*, worker, assignment_id, texts: dict, idempotency_key: uuid.UUID, seconds_spent=0) -> SubmitResult:
    """Submit the inferences of an assignment (its attributes). The same idempotency key returns the same submission."""
    key = uuid.UUID(str(idempotency_key))
    existing = ReferenceSubmission.objects.filter(idempotency_key=key).select_related("assignment").first()
    if existing is not None:
        if existing.assignment.worker_id != worker.pk:
            raise ReferenceWorkflowError("idempotency key already used")
        return SubmitResult(existing, False)
    member_id = (
        ReferenceAssignment.objects.filter(pk=assignment_id, worker=worker).values_list("member_id", flat=True).first()
    )
    if member_id is None:
        raise ReferenceWorkflowError("not your assignment")
    member = _member_lock(member_id)
    assignment = _assignment_lock(assignment_id)
    existing = ReferenceSubmission.objects.filter(idempotency_key=key).first()  # a twin request may have won the lock
    if existing is not None:
        return SubmitResult(existing, False)
    if member.reference_set.status == ReferenceSetStatus.CLOSED:
        raise ReferenceWorkflowError("the reference set is closed")
    if assignment.status == AssignmentStatus.EXPIRED:
        _assignment_revive(member=member, assignment=assignment)
    if assignment.status not in (AssignmentStatus.ACTIVE, AssignmentStatus.SENT_BACK):
        raise ReferenceWorkflowError(f"this work is {assignment.get_status_display().lower()}: it cannot be submitted again")
    errors = reference_texts_validate(texts=texts, min_chars=member.reference_set.min_chars, attributes=assignment.attributes)
    texts = {a: t.strip() for a, t in _clean_texts(texts, assignment.attributes).items()}
    if errors:
        raise ReferenceValidationError(errors)
    seconds = _clean_seconds(seconds_spent)
    submission = ReferenceSubmission.objects.create(assignment=assignment, idempotency_key=key, texts=texts, seconds_spent=seconds)
    Reference.objects.filter(assignment=assignment).delete()
    Reference.objects.bulk_create(Reference(assignment=assignment, attribute=a, text=texts[a]) for a in assignment.attributes)
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = timezone.now()
    assignment.seconds_spent = seconds
    assignment.save(update_fields=["status", "submitted_at", "seconds_spent"])
    _draft_upsert(member_id=member_id, worker_id=worker.pk, texts=texts, seconds_spent=seconds)
    return SubmitResult(submission, True)


# --- staff review --------------------------------------------------------------------------


def _review_lock(assignment_id) -> ReferenceAssignment:
    member_id = ReferenceAssignment.objects.filter(pk=assignment_id).values_list("member_id", flat=True).first()
    if member_id is None:
        raise ReferenceWorkflowError("no such assignment")
    _member_lock(member_id)
    return _assignment_lock(assignment_id)


@transaction.atomic
def reference_accept(*, reviewer, assignment_id) -> ReferenceAssignment:
    assignment = _review_lock(assignment_id)
    if assignment.status not in (AssignmentStatus.SUBMITTED, AssignmentStatus.ACCEPTED):
        raise ReferenceWorkflowError(f"only submitted work can be accepted (this is {assignment.get_status_display().lower()})")
    assignment.status = AssignmentStatus.ACCEPTED
    assignment.reviewed_by = reviewer
    assignment.reviewed_at = timezone.now()
    assignment.save(update_fields=["status", "reviewed_by", "reviewed_at"])
    return assignment


@transaction.atomic
def reference_send_back(*, reviewer, assignment_id, reason: str) -> ReferenceAssignment:
    reason = (reason or "").strip()
    if not reason:
        raise ReferenceWorkflowError("reason: say what the worker should change")
    assignment = _review_lock(assignment_id)
    if assignment.status not in (AssignmentStatus.SUBMITTED, AssignmentStatus.ACCEPTED):
        raise ReferenceWorkflowError(f"only submitted work can be sent back (this is {assignment.get_status_display().lower()})")
    assignment.status = AssignmentStatus.SENT_BACK
    assignment.review_reason = reason[:2000]
    assignment.reviewed_by = reviewer
    assignment.reviewed_at = timezone.now()
    assignment.save(update_fields=["status", "review_reason", "reviewed_by", "reviewed_at"])
    return assignment
