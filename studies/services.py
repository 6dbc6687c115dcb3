"""Writes of studies: create one, a participant's arrival, their next piece of work, the
qualification and gold rules, bonuses and staff overrides.

The work itself goes through the existing services: the audit queue
(`verification.services.item_claim_next` / `judgment_submit`) and the reference workflow
(`references.services.reference_assignment_claim_next` / `reference_submit`). This module
only decides *whether* a participant may be given more (quota, qualification, the gold rule,
the study being open) and records who they are and what they are owed.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Pool, Role, User
from accounts.services import verifier_exclusion_set
from annotation.models import Batch, BatchStatus
from references.models import ReferenceSet, ReferenceSetStatus
from references.services import ReferenceWorkflowError, reference_assignment_claim_next
from verification.models import SkipReason
from verification.services import VerificationError, claim_skip, item_claim_next

from . import selectors
from .models import (
    Entry, LedgerLine, Participant, ParticipantStatus, PayBasis, Platform, Study, StudyStatus,
)


class StudyError(Exception):
    """A refused request; `status` is the HTTP status a door answers with."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field


# --- platform ids ----------------------------------------------------------------------------

PARTICIPANT_ID_SHAPES = {
    Platform.PROLIFIC: (re.compile(r"[0-9a-f]{24}"), "a Prolific id is 24 hexadecimal characters"),
    Platform.MTURK: (re.compile(r"A[A-Z0-9]{12,20}"), "an MTurk worker id is A and 12–20 capital letters or digits"),
    Platform.LINK: (re.compile(r"[A-Za-z0-9_-]{1,64}"), "a participant id is 1–64 letters, digits, - or _"),
}
SESSION_ID_SHAPE = re.compile(r"[A-Za-z0-9_-]{0,64}")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def participant_id_clean(*, platform: str, value: str) -> str:
    """The platform's id in its one spelling, or StudyError (400) naming the shape it must have."""
    value = (value or "").strip()
    if platform == Platform.PROLIFIC:
        value = value.lower()
    pattern, shape = PARTICIPANT_ID_SHAPES[platform]
    if not pattern.fullmatch(value):
        raise StudyError(shape, field="participant_id")
    return value


def _session_id_clean(value: str, field: str) -> str:
    value = (value or "").strip()
    if not SESSION_ID_SHAPE.fullmatch(value):
        raise StudyError(f"{field}: 0–64 letters, digits, - or _", field=field)
    return value


def _turk_submit_clean(value: str) -> str:
    """Only MTurk's own hosts: the completion form posts there, so any other address is refused."""
    value = (value or "").strip().rstrip("/")
    if value and value not in MTURK_SUBMIT_HOSTS:
        raise StudyError("turkSubmitTo: not an MTurk address", field="turkSubmitTo")
    return value


# --- studies --------------------------------------------------------------------------------


def _decimal(value, field: str) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise StudyError(f"{field}: not a number", field=field) from None
    if not number.is_finite() or number < 0:
        raise StudyError(f"{field}: a number of at least 0", field=field)
    return number


@transaction.atomic
def study_create(
    *,
    name: str,
    platform: str,
    quota: int,
    completion_code: str,
    batches: list[str] = (),
    reference_set: str | None = None,
    screen_out_code: str = "",
    pay_per_item=None,
    pay_per_hour=None,
    currency: str = "GBP",
    minimum_hourly=None,
    session_minutes: int = 60,
    item_seconds_cap: int = 300,
    qualification_batch: str | None = None,
    qualification_pass_mark: float = 0.8,
    gold_threshold: float | None = None,
    gold_min_answers: int = 3,
    created_by: User | None = None,
) -> Study:
    """A study serving batches (verification) or a reference set (crowd writing), with its own pool."""
    if platform not in Platform.values:
        raise StudyError(f"platform: one of {', '.join(Platform.values)}", field="platform")
    if Study.objects.filter(name=name).exists():
        raise StudyError(f"a study named {name!r} exists already", status=409, field="name")
    batches = list(dict.fromkeys(batches))
    if bool(batches) == bool(reference_set):
        raise StudyError("give the batches it serves or a reference set, not both", field="batches")
    if quota is None or int(quota) < 1:
        raise StudyError("quota: at least 1", field="quota")
    per_item, per_hour = _decimal(pay_per_item, "pay_per_item"), _decimal(pay_per_hour, "pay_per_hour")
    if (per_item is None) == (per_hour is None):
        raise StudyError("give pay per item or pay per hour (one of them)", field="pay_per_item")
    if screen_out_code and screen_out_code == completion_code:
        raise StudyError("the screen-out code must differ from the completion code", field="screen_out_code")
    batch_objs = list(Batch.objects.filter(name__in=batches))
    missing = set(batches) - {b.name for b in batch_objs}
    if missing:
        raise StudyError(f"no batch named {sorted(missing)[0]!r}", status=404, field="batches")
    set_obj = None
    if reference_set:
        set_obj = ReferenceSet.objects.filter(name=reference_set).first()
        if set_obj is None:
            raise StudyError(f"no reference set named {reference_set!r}", status=404, field="reference_set")
    qual = None
    if qualification_batch:
        if set_obj is not None:
            raise StudyError("qualification (gold items) is for verification studies", field="qualification_batch")
        qual = Batch.objects.filter(name=qualification_batch).first()
        if qual is None:
            raise StudyError(f"no batch named {qualification_batch!r}", status=404, field="qualification_batch")
        if not qual.items.filter(is_gold=True).exists():
            raise StudyError(f"batch {qual.name} has no gold items to qualify with", field="qualification_batch")
        if not screen_out_code:
            raise StudyError("a study with a qualification needs a screen-out code", field="screen_out_code")
    pool_name = f"study-{name}"[:100]
    if Pool.objects.filter(name=pool_name).exists():  # never reuse a pool: its members would reach the study's work
        raise StudyError(f"a pool named {pool_name!r} exists already: choose another study name", status=409, field="name")
    for value, label in ((qualification_pass_mark, "qualification_pass_mark"), (gold_threshold, "gold_threshold")):
        if value is not None and not (math.isfinite(float(value)) and 0 <= float(value) <= 1):
            raise StudyError(f"{label}: a share between 0 and 1", field=label)
    pool = Pool.objects.create(name=pool_name)
    study = Study(
        name=name, platform=platform, quota=int(quota), completion_code=completion_code.strip(),
        screen_out_code=screen_out_code.strip(), reference_set=set_obj, pool=pool,
        pay_basis=PayBasis.ITEM if per_item is not None else PayBasis.HOUR,
        pay_rate=per_item if per_item is not None else per_hour, currency=(currency or "").strip().upper(),
        minimum_hourly=_decimal(minimum_hourly, "minimum_hourly"), session_minutes=int(session_minutes),
        item_seconds_cap=int(item_seconds_cap), qualification_batch=qual,
        qualification_pass_mark=float(qualification_pass_mark), gold_threshold=gold_threshold,
        gold_min_answers=int(gold_min_answers), created_by=created_by,
    )
    try:
        study.full_clean(exclude=["pool", "token"])
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise StudyError(f"{field}: {' '.join(messages)}", field=field) from None
    study.save()
    study.batches.set(batch_objs)
    # The study's pool is how its participants reach its batches (and nothing else):
    # the queue hands a verifier only items of batches open to one of their pools.
    for batch in [*batch_objs, *([qual] if qual else [])]:
        batch.pools.add(pool)
    return study


@transaction.atomic
def study_status_set(*, study: Study, status: str) -> Study:
    if status not in StudyStatus.values:
        raise StudyError(f"status: one of {', '.join(StudyStatus.values)}", field="status")
    Study.objects.filter(pk=study.pk).update(status=status)
    study.status = status
    return study


# --- arrival --------------------------------------------------------------------------------


def ip_hash(ip: str) -> str:
    """The address as a keyed hash: entries can be compared, never read back."""
    return hmac.new(settings.SECRET_KEY.encode(), f"study-entry:{ip}".encode(), hashlib.sha256).hexdigest()


def _pseudonym(*, study: Study, participant_id: str) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{study.pk}:{participant_id}".encode(), hashlib.sha256).hexdigest()
    return f"{selectors.PSEUDONYM_PREFIX}{study.pk}-{digest[:16]}"


@dataclass(frozen=True)
class Arrival:
    participant: Participant
    created: bool


def participant_arrive(
    *, study: Study, participant_id: str, ip: str = "", user_agent: str = "",
    platform_study_id: str = "", platform_session_id: str = "", return_to: str = "",
) -> Arrival:
    """The participant of this platform id in this study: found on a return (another browser,
    a reload), created on a first arrival, one account whatever the concurrency (the unique
    constraint on (study, participant id), and a retry that finds the winner's row).
    Every arrival is logged as an Entry."""
    participant_id = participant_id_clean(platform=study.platform, value=participant_id)
    platform_study_id = _session_id_clean(platform_study_id, "STUDY_ID")
    platform_session_id = _session_id_clean(platform_session_id, "SESSION_ID")
    return_to = _turk_submit_clean(return_to) if study.platform == Platform.MTURK else ""
    participant, created = _participant_get_or_create(
        study=study, participant_id=participant_id, platform_study_id=platform_study_id,
        platform_session_id=platform_session_id, return_to=return_to,
    )
    if not created and (platform_session_id or return_to):
        # a new MTurk assignment or Prolific session of the same person: reply there
        updates = {k: v for k, v in (("platform_session_id", platform_session_id), ("return_to", return_to),
                                     ("platform_study_id", platform_study_id)) if v}
        Participant.objects.filter(pk=participant.pk).update(**updates)
        for key, value in updates.items():
            setattr(participant, key, value)
    Entry.objects.create(study=study, participant=participant, ip_hash=ip_hash(ip), user_agent=(user_agent or "")[:300],
                         kind="arrival" if created else "return")
    return Arrival(participant, created)


def _participant_get_or_create(*, study: Study, participant_id: str, **fields) -> tuple[Participant, bool]:
    existing = Participant.objects.select_related("user", "study").filter(study=study, participant_id=participant_id).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            role = Role.CROWD_WORKER if study.is_writing else Role.VERIFIER
            user = User(username=_pseudonym(study=study, participant_id=participant_id), role=role)
            user.set_unusable_password()
            user.save()
            study.pool.members.add(user)
            status = ParticipantStatus.QUALIFYING if study.qualification_batch_id else ParticipantStatus.WORKING
            participant = Participant.objects.create(study=study, participant_id=participant_id, user=user,
                                                     status=status, **fields)
            return participant, True
    except IntegrityError:  # another request of the same person won the race: theirs is the account
        return Participant.objects.select_related("user", "study").get(study=study, participant_id=participant_id), False


def preview_entry_log(*, study: Study, ip: str = "", user_agent: str = "") -> None:
    """An MTurk preview (no assignment yet): logged, no account."""
    Entry.objects.create(study=study, ip_hash=ip_hash(ip), user_agent=(user_agent or "")[:300], kind="preview")


# --- the next piece of work ------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """What a participant does next: a claim (verification), an assignment (writing), or
    nothing (`participant.status` then says why: completed, screened out, stopped)."""

    participant: Participant
    claim: object | None = None
    assignment: object | None = None
    phase: str = "work"  # "qualification" or "work"


def _finish(participant: Participant, status: str, reason: str = "") -> Participant:
    """End the participant's work; claims still in hand (the rest of a context's row) go back to the queue."""
    if not participant.study.is_writing:
        for claim_id in selectors.participant_live_claim_ids(participant=participant):
            try:
                claim_skip(verifier=participant.user, claim_id=claim_id, reason=SkipReason.OTHER)
            except VerificationError:
                pass  # answered or lapsed meanwhile
    Participant.objects.filter(pk=participant.pk).update(status=status, status_reason=reason[:500], finished_at=timezone.now())
    participant.status, participant.status_reason = status, reason[:500]
    return participant


def participant_for_update(*, participant_id: int) -> Participant:
    return Participant.objects.select_for_update(of=("self",)).select_related("study", "user").get(pk=participant_id)


def participant_next_work(*, participant: Participant) -> Work:
    """The participant's next claim or assignment, under the study's rules:

    - a finished participant (completed, screened out, stopped) gets nothing;
    - a qualifying one audits the qualification batch's gold items first; when none is left
      they pass (on to real work) or are screened out;
    - the gold rule stops one whose attention-check accuracy fell below the threshold;
    - at the quota, or when the study's queue is empty, they are completed.

    Not one transaction: the claim is the queue's own (`item_claim_next`, which serialises
    one verifier's requests itself), so a study's queue behaves as any other. Two tabs of
    one person are handed the same live claim.
    """
    participant = Participant.objects.select_related("study", "user", "study__reference_set").get(pk=participant.pk)
    study = participant.study
    if participant.is_finished:
        return Work(participant)
    if study.status == StudyStatus.CLOSED:
        return Work(_finish(participant, ParticipantStatus.COMPLETED, "the study closed"))
    if study.is_writing:
        return _next_writing(participant)
    if participant.status == ParticipantStatus.QUALIFYING:
        work = _next_qualification(participant)
        if work is not None:
            return work
    if _gold_rule_stops(participant):
        return Work(participant)
    if selectors.participant_items_done(participant=participant) >= study.quota:
        return Work(_finish(participant, ParticipantStatus.COMPLETED, "quota met"))
    for batch in study.batches.order_by("name"):
        if batch.status != BatchStatus.OPEN:
            continue
        try:
            claim = item_claim_next(verifier=participant.user, batch=batch)
        except VerificationError as exc:
            if exc.status == 503:
                raise StudyError(exc.message, status=503) from None
            continue
        if claim is not None:
            return Work(participant, claim=claim)
    return Work(_finish(participant, ParticipantStatus.COMPLETED, "no work left in the study"))


def _next_qualification(participant: Participant) -> Work | None:
    study = participant.study
    batch = study.qualification_batch
    try:
        claim = item_claim_next(verifier=participant.user, batch=batch)
    except VerificationError as exc:
        if exc.status == 503:
            raise StudyError(exc.message, status=503) from None
        claim = None
    if claim is not None:
        return Work(participant, claim=claim, phase="qualification")
    score = selectors.qualification_score(participant=participant)
    Participant.objects.filter(pk=participant.pk).update(qualification_score=score)
    participant.qualification_score = score
    if score is None or score < study.qualification_pass_mark:
        _finish(participant, ParticipantStatus.SCREENED_OUT,
                f"qualification {0 if score is None else score:.0%} below the pass mark {study.qualification_pass_mark:.0%}")
        verifier_exclusion_set(user=participant.user, excluded=True, reason=f"study {study.name}: screened out")
        return Work(participant)
    Participant.objects.filter(pk=participant.pk).update(status=ParticipantStatus.WORKING)
    participant.status = ParticipantStatus.WORKING
    return None


def _gold_rule_stops(participant: Participant) -> bool:
    study = participant.study
    if study.gold_threshold is None or participant.stop_overridden:
        return False
    answered, correct = selectors.participant_gold(participant=participant)
    if answered < max(1, study.gold_min_answers) or correct / answered >= study.gold_threshold:
        return False
    _finish(participant, ParticipantStatus.STOPPED,
            f"gold accuracy {correct}/{answered} below {study.gold_threshold:.0%}")
    verifier_exclusion_set(user=participant.user, excluded=True,
                           reason=f"study {study.name}: gold accuracy {correct}/{answered} below {study.gold_threshold:.0%}")
    return True


def _next_writing(participant: Participant) -> Work:
    study = participant.study
    if selectors.participant_items_done(participant=participant) >= study.quota:
        return Work(_finish(participant, ParticipantStatus.COMPLETED, "quota met"))
    if study.reference_set.status != ReferenceSetStatus.OPEN:
        return Work(_finish(participant, ParticipantStatus.COMPLETED, "the reference set is not open"))
    try:
        assignment = reference_assignment_claim_next(worker=participant.user, reference_set_id=study.reference_set_id)
    except ReferenceWorkflowError:
        assignment = None
    if assignment is None:
        return Work(_finish(participant, ParticipantStatus.COMPLETED, "no work left in the study"))
    return Work(participant, assignment=assignment)


# --- staff ----------------------------------------------------------------------------------


@transaction.atomic
def participant_stop_override(*, participant: Participant, reason: str, by: User | None = None) -> Participant:
    """Staff let a stopped (or screened-out) participant work on, and count their judgments again. A reason is required."""
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("say why you override the rule", field="reason")
    participant = participant_for_update(participant_id=participant.pk)
    if participant.status not in (ParticipantStatus.STOPPED, ParticipantStatus.SCREENED_OUT):
        raise StudyError(f"this participant is {participant.get_status_display().lower()}: nothing to override", status=409)
    who = by.username if by is not None else "staff"
    Participant.objects.filter(pk=participant.pk).update(
        status=ParticipantStatus.WORKING, stop_overridden=True, finished_at=None,
        status_reason=f"override by {who}: {reason}"[:500],
    )
    verifier_exclusion_set(user=participant.user, excluded=False)
    participant.refresh_from_db()
    return participant


@transaction.atomic
def participant_exclusion_set(*, participant: Participant, excluded: bool, reason: str) -> Participant:
    """Staff exclude a participant's judgments from aggregation (or include them again), with a reason."""
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("say why", field="reason")
    verifier_exclusion_set(user=participant.user, excluded=excluded, reason=reason)
    Participant.objects.filter(pk=participant.pk).update(status_reason=reason[:500])
    participant.refresh_from_db()
    return participant


def bonus_add(*, participant: Participant, amount, reason: str, by: User | None = None) -> LedgerLine:
    value = _decimal(amount, "amount")
    if value is None or value == 0:
        raise StudyError("amount: more than 0", field="amount")
    if not (reason or "").strip():
        raise StudyError("say what the bonus is for", field="reason")
    return LedgerLine.objects.create(participant=participant, amount=value.quantize(Decimal("0.01")),
                                     reason=reason.strip()[:300], created_by=by)

