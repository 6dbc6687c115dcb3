"""Writes of the verification queue: claims, judgments, batches, gold items.

Every door (htmx views, the DRF API, management commands, admin actions, Celery tasks)
calls these functions; the rules live here and in the database constraints behind them.
Locks are taken through `locks.py`, in its fixed order.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Max, OuterRef
from django.db.models.functions import Greatest
from django.utils import timezone

from accounts.models import Pool, User
from annotation.models import NOTA, OPTION_LETTERS, Batch, BatchStatus, Item, Task
from dialtom_site import jobs

from . import followups, kept, portable, queue, statements, tallies
from .locks import claims_for_update, judgments_for_update
from .adaptive import adaptive_overlap_set
from .errors import VerificationError
from .models import Claim, ClaimStatus, Judgment, Label, QueueSlot, SkipReason
from .queue import display_order_for  # noqa: F401 (re-exported: the order a claim shows)

logger = logging.getLogger(__name__)

# Gold items are attention checks shown to every verifier: their slot never fills up.
GOLD_NEEDED = 32767
VERDICTS = (Label.NONE.value, Label.MULTIPLE.value)


# --- helpers ------------------------------------------------------------------------


def choice_to_label(*, display_order: str, item: Item, choice: str) -> tuple[str, str]:
    """Map what the verifier picked (a displayed letter, NOTA, NONE or MULTIPLE) to original letters.

    Returns (label in the original order, the choice as displayed).
    """
    value = (choice or "").strip().upper()
    nota = queue.offers_nota(task=item.task, variant=item.variant)
    if value in VERDICTS:
        return value, value
    if value == NOTA:
        if not nota:
            raise VerificationError("NOTA is only offered on prospective items", field="choice")
        return NOTA, NOTA
    if value in OPTION_LETTERS:
        return display_order[OPTION_LETTERS.index(value)], value
    raise VerificationError(f"choice must be one of A, B, C, D, NONE, MULTIPLE{', NOTA' if nota else ''}", field="choice")


def implausible_to_original(*, display_order: str, marks: Iterable[str]) -> list[str]:
    original = set()
    for mark in marks:
        value = (mark or "").strip().upper()
        if value not in OPTION_LETTERS:
            raise VerificationError(f"implausible marks must be displayed letters A–D, not {mark!r}", field="implausible")
        original.add(display_order[OPTION_LETTERS.index(value)])
    return sorted(original)


def _check_open(*, batch: Batch) -> None:
    if batch.status != BatchStatus.OPEN:
        raise VerificationError(f"batch {batch.name} is {batch.status}", code=f"batch_{batch.status}", status=409)


# --- queue slots ----------------------------------------------------------------------


def batch_queue_sync(*, batch: Batch, recount: bool = False) -> int:
    """Create the queue slots of the batch's items that have none yet; returns how many. The
    summaries' counts of the batch are recounted when it has new items, or k changed (`recount`)."""
    missing = Item.objects.filter(batch=batch, queue_slot__isnull=True).annotate(
        n=Count("judgments", filter=queue.judgments_towards_k()), judged=Count("judgments")).values_list("pk", "item_id", "is_gold", "n", "judged")
    rows = [
        QueueSlot(
            item_id=pk,
            batch=batch,
            needed=GOLD_NEEDED if gold else max(batch.overlap, n),
            taken=n,
            answered=n,
            is_gold=gold,
            position=queue.queue_position_for(item_id=item_id),
            judged=judged,
        )
        for pk, item_id, gold, n, judged in missing
    ]
    if QueueSlot.objects.bulk_create(rows, ignore_conflicts=True) or recount:  # the summaries' counts (issue 23)
        tallies.batch_tallies_refresh(batch_ids=[batch.pk], slots=False)  # other slots stay unlocked
    return len(rows)


def claims_expire(*, batch: Batch | None = None, now: datetime | None = None) -> int:
    """Return claims whose lease ran out to the pool. Locked claims are left for next time."""
    now = now or timezone.now()
    with transaction.atomic():
        qs = claims_for_update(skip_locked=True).filter(status=ClaimStatus.ACTIVE, expires_at__lte=now)
        if batch is not None:
            qs = qs.filter(batch=batch)
        rows = list(qs.values_list("pk", "item_id", "exposed"))
        if not rows:
            return 0
        Claim.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(status=ClaimStatus.EXPIRED)
        _slots_release(Counter(item_id for _, item_id, exposed in rows if queue.counts_towards_k(exposed=exposed)))
    return len(rows)


def _slots_release(counts: Counter) -> None:
    """Give back the places of released claims (only those that counted towards k: `queue.counts_towards_k`)."""
    for item_id in sorted(counts):  # fixed order: no deadlock between two sweepers
        QueueSlot.objects.filter(pk=item_id).update(taken=F("taken") - counts[item_id])


# How often a claim looks again when another request got in its way (the verifier's other
# tab; the context it picked being claimed by someone else at that instant: they commit in ms).
ROUNDS = 50


def _claim_next(**kwargs) -> statements.NextResult:
    """The claim statement on PostgreSQL; its steps through the ORM elsewhere (SQLite: the demo)."""
    if connection.vendor == "postgresql":
        return statements.claim_next(**kwargs)
    return portable.claim_next(**kwargs)


def _claim_attempts(*, verifier: User, batch_name: str, exposure_allowed: bool) -> statements.NextResult:
    avoid: list[int] = []  # contexts whose row someone else was claiming: pass them over, as SKIP LOCKED does slots
    for attempt in range(ROUNDS):
        result = _claim_next(
            verifier_id=verifier.pk, batch_name=batch_name, exposure_allowed=exposure_allowed, avoid=avoid
        )
        if not result.contended:
            return result
        if result.picked is not None and result.turned:
            avoid.append(result.picked)
            continue
        avoid.clear()  # a wait (the verifier's other request, slots locked this instant): look at everything again
        if attempt >= 2:
            time.sleep(0.001 * min(attempt, 10))
    # every round contended (the first or the second, after claims_expire): never "nothing left" when the truth is "too busy to tell"
    raise VerificationError("the queue is busy: ask again in a moment", code="busy", status=503)


def _exposure_allowed(*, batch: Batch) -> bool:
    """The least-exposure fallback is on while the batch needs more verifiers than its pools hold."""
    return queue.batch_staffing(batch_ids=[batch.pk])[batch.pk].short


# --- claims and judgments ----------------------------------------------------------------


def item_claim_next(*, verifier: User, batch: Batch | None = None, batch_name: str | None = None) -> Claim | None:
    """The verifier's next item of the batch (given as a `Batch` or by name): its live claim,
    or a new claim on an item that still needs judgments and that the queue's rules
    (`queue.py`) allow. None when nothing is left.

    One statement does it in the common case (`statements.claim_next`). A retrospective item
    comes with the other open retrospective items of its context: all are claimed at once,
    with leases one after the other, and served in a row. SKIP LOCKED lets many verifiers
    claim at once without waiting on each other, and `taken < needed` is re-checked on each
    locked row, so no item passes k. Only when the queue looks empty does this return lapsed
    leases to the pool, create the slots of items added since, and, in a batch short of
    verifiers, fall back to least exposure.
    """
    if not verifier.can_audit:
        raise VerificationError("only verifiers and baseline participants work the audit queue", code="forbidden", status=403)
    name = batch.name if batch is not None else batch_name
    result = _claim_attempts(verifier=verifier, batch_name=name, exposure_allowed=False)
    if result.claim is not None:
        return result.claim
    if not result.found:
        if batch is None:
            raise VerificationError(f"no batch {name!r} for you", code="not_found", status=404, field="batch")
        raise VerificationError(f"batch {name} is not open to you", code="forbidden", status=403)
    status = result.batch_status
    if status != BatchStatus.OPEN:
        raise VerificationError(f"batch {name} is {status}", code=f"batch_{status}", status=409)
    batch = batch if batch is not None else Batch.objects.get(name=name)
    claims_expire(batch=batch)
    if Item.objects.filter(batch=batch, queue_slot__isnull=True).exists():
        batch_queue_sync(batch=batch)
    # look again whatever those two did here: another request may have done it a moment ago
    result = _claim_attempts(verifier=verifier, batch_name=name, exposure_allowed=False)
    if result.claim is None and result.found and _exposure_allowed(batch=batch):
        result = _claim_attempts(verifier=verifier, batch_name=name, exposure_allowed=True)
    return result.claim


def _claim_locked(*, verifier: User, claim_id, related: tuple[str, ...] = ()) -> Claim:
    try:
        return claims_for_update().select_related(*related).get(pk=uuid.UUID(str(claim_id)), verifier=verifier)
    except (Claim.DoesNotExist, ValueError):
        raise VerificationError("no such claim", code="not_found", status=404, field="claim") from None


@transaction.atomic
def claim_skip(*, verifier: User, claim_id: uuid.UUID, reason: str) -> Claim:
    """Give an item back without judging it, saying why; this verifier is not offered it
    again in the batch unless they restore it (`claim_restore`)."""
    if reason not in SkipReason.values:
        raise VerificationError("say why you skip this item", code="skip_reason", field="skip_reason")
    claim = _claim_locked(verifier=verifier, claim_id=claim_id)
    if claim.status == ClaimStatus.SKIPPED:
        return claim
    if claim.status != ClaimStatus.ACTIVE:
        raise VerificationError(f"this claim is {claim.status}", code="claim_not_active", status=409)
    claim.status, claim.skip_reason = ClaimStatus.SKIPPED, reason
    claim.save(update_fields=["status", "skip_reason"])
    if queue.counts_towards_k(exposed=claim.exposed):
        _slots_release(Counter([claim.item_id]))
    return claim


def _slot_retake(*, claim: Claim) -> bool:
    """A skipped or lapsed claim held again: its place counts again if it counts towards k; either
    way only while the item still needs judgments."""
    slot = QueueSlot.objects.filter(pk=claim.item_id, taken__lt=F("needed"))
    if queue.counts_towards_k(exposed=claim.exposed):
        return bool(slot.update(taken=F("taken") + 1))
    return slot.exists()


@transaction.atomic
def claim_restore(*, verifier: User, claim_id: uuid.UUID) -> Claim:
    """Take a skipped item back, if it still needs a judgment: it comes after the item in hand."""
    claim = _claim_locked(verifier=verifier, claim_id=claim_id, related=("batch",))
    if claim.status == ClaimStatus.ACTIVE:
        return claim
    if claim.status != ClaimStatus.SKIPPED:
        raise VerificationError(f"this claim is {claim.status}", code="claim_not_skipped", status=409)
    _check_open(batch=claim.batch)
    if not _slot_retake(claim=claim):
        raise VerificationError("other verifiers have completed this item since you skipped it", code="item_complete", status=409)
    now = timezone.now()
    Claim.objects.filter(pk=claim.pk).update(
        status=ClaimStatus.ACTIVE, skip_reason="", claimed_at=now, expires_at=now + timedelta(minutes=claim.batch.lease_minutes)
    )
    claim.refresh_from_db()
    return claim


def _seconds_on(*, claim: Claim, verifier: User, now: datetime) -> float:
    """Time spent on this item: from its claim, or, for the 2nd and later items of a context's
    retrospective row (claimed together, one lease after another), from the verifier's last
    answer in that row, so the earlier questions' time is not counted again."""
    started = claim.claimed_at
    if claim.expires_at - claim.claimed_at > timedelta(minutes=claim.batch.lease_minutes):
        last = (
            Judgment.objects.filter(verifier=verifier, batch_id=claim.batch_id, claim__claimed_at=claim.claimed_at)
            .aggregate(last=Max("created_at"))["last"]
        )
        started = max(started, last or started)
    return round(max(0.0, (now - started).total_seconds()), 3)


@dataclass(frozen=True)
class Submission:
    judgment: Judgment
    created: bool
    batch_name: str = ""  # the batch of the answered item (submit-and-next asks it for the next one)


def judgment_submit(
    *,
    verifier: User,
    claim_id: uuid.UUID | str,
    choice: str,
    idempotency_key: uuid.UUID | str,
    implausible: Iterable[str] = (),
    comment: str = "",
    source: str = "form",
) -> Submission:
    """Store the verifier's answer to a claimed item, exactly once.

    The same idempotency key (a double click, a resent form, an API retry) returns the
    judgment already stored; so does a second answer to an answered claim.
    """
    try:
        key = uuid.UUID(str(idempotency_key))
    except ValueError:
        raise VerificationError("idempotency_key must be a UUID", field="idempotency_key") from None
    value = (choice or "").strip().upper()
    marks = [(m or "").strip().upper() for m in implausible]
    comment = (comment or "").strip()[:5000]
    if value in (*OPTION_LETTERS, NOTA, *VERDICTS) and all(m in OPTION_LETTERS for m in marks):
        try:
            stored = statements.judgment_store(
                verifier_id=verifier.pk, claim_id=claim_id, idempotency_key=key, choice=value, marks=marks,
                comment=comment, source=source,
            )
        except ValueError:  # not a UUID: the slow path says so
            stored = None
        if stored is not None:
            if stored.filled:
                _item_filled(batch_id=stored.judgment.batch_id)
            return Submission(stored.judgment, True, stored.batch_name)
    return _judgment_submit_checked(
        verifier=verifier, claim_id=claim_id, choice=value, key=key, marks=marks, comment=comment, source=source
    )


def _item_filled(*, batch_id: int) -> None:
    """An item reached the judgments it needs: check the batch (complete? adaptive refit?)
    once this commits. Not on every answer: only this one can change the answer; and not
    while a check of the batch is already queued (`followups`)."""
    if followups.progress_check_wanted(batch_id=batch_id):
        jobs.follow_up_on_commit("aggregation.tasks.batch_progress_check", batch_id=batch_id)


@transaction.atomic
def _judgment_submit_checked(
    *, verifier: User, claim_id, choice: str, key: uuid.UUID, marks: list[str], comment: str, source: str
) -> Submission:
    """`judgment_submit` step by step: replays, answered or lapsed claims, closed batches and
    refused answers, each with its reason."""
    existing = Judgment.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.verifier_id != verifier.pk:
            raise VerificationError("idempotency_key already used", code="key_reused", field="idempotency_key")
        return Submission(existing, False, existing.batch.name)
    claim = _claim_locked(verifier=verifier, claim_id=claim_id, related=("batch", "item"))
    previous = Judgment.objects.filter(item_id=claim.item_id, verifier=verifier).first()
    if previous is not None:
        return Submission(previous, False, claim.batch.name)
    if claim.batch.status == BatchStatus.CLOSED:
        raise VerificationError(f"batch {claim.batch.name} is closed", code="batch_closed", status=409)
    label, displayed = choice_to_label(display_order=claim.display_order, item=claim.item, choice=choice)
    marks = implausible_to_original(display_order=claim.display_order, marks=marks)
    if claim.status != ClaimStatus.ACTIVE:
        # The lease ran out (or the item was skipped): answer anyway if the item still needs it.
        if not _slot_retake(claim=claim):
            raise VerificationError(
                "the lease on this item expired and other verifiers have completed it", code="claim_expired", status=409
            )
    now = timezone.now()
    try:
        with transaction.atomic():
            judgment = Judgment.objects.create(
                item_id=claim.item_id,
                verifier=verifier,
                batch=claim.batch,
                claim=claim,
                label=label,
                displayed_label=displayed,
                implausible=marks,
                comment=comment,
                seconds_spent=_seconds_on(claim=claim, verifier=verifier, now=now),
                idempotency_key=key,
                source=source,
                exposed=claim.exposed,
            )
    except IntegrityError:
        same = Judgment.objects.filter(idempotency_key=key, verifier=verifier).first()
        if same is None:
            raise VerificationError("idempotency_key already used", code="key_reused", field="idempotency_key") from None
        return Submission(same, False, claim.batch.name)
    claim.status = ClaimStatus.ANSWERED
    claim.save(update_fields=["status"])
    judgment.claim, judgment.item = claim, claim.item
    slot = QueueSlot.objects.filter(pk=claim.item_id)
    if queue.counts_towards_k(exposed=claim.exposed):
        slot.update(answered=F("answered") + 1)
        if slot.filter(answered__gte=F("needed")).exists():
            _item_filled(batch_id=claim.batch_id)
    kept.judgment_added(judgment=judgment, claim=claim)  # the summaries (issue 23)
    return Submission(judgment, True, claim.batch.name)


@transaction.atomic
def judgment_change(
    *, verifier: User, judgment_id: int, choice: str, implausible: Iterable[str] = (), comment: str = ""
) -> Judgment:
    """Change one of the verifier's own answers; allowed until the batch closes."""
    try:
        judgment = judgments_for_update().select_related("batch", "item", "claim").get(pk=judgment_id, verifier=verifier)
    except Judgment.DoesNotExist:
        raise VerificationError("no such judgment", code="not_found", status=404) from None
    if judgment.batch.status == BatchStatus.CLOSED:
        raise VerificationError(f"batch {judgment.batch.name} is closed", code="batch_closed", status=409)
    order, before = judgment.claim.display_order if judgment.claim else "".join(OPTION_LETTERS), (judgment.label, judgment.displayed_label)
    judgment.label, judgment.displayed_label = choice_to_label(
        display_order=order, item=judgment.item, choice=choice
    )
    judgment.implausible = implausible_to_original(display_order=order, marks=implausible)
    judgment.comment = (comment or "").strip()[:5000]
    judgment.save(update_fields=["label", "displayed_label", "implausible", "comment", "updated_at"])
    kept.judgment_relabelled(judgment=judgment, verifier_id=verifier.pk, before=before)
    return judgment


@transaction.atomic
def judgments_exposure_mark(*, dry_run: bool = False) -> dict:
    """Mark `exposed` the stored judgments (and their claims) of profile-bearing items whose
    verifier has read, before or after, a dialogue that shows the item's true continuation
    (the context rule across windows, issue 20): data gathered before the rule held. With
    `DIALTOM_EXPOSED_JUDGMENTS=exclude` they stop counting towards k, so their items go back to
    the queue for a usable judgment. Idempotent: a second run finds nothing."""
    leaked = (
        Judgment.objects.filter(exposed=False, item__task=Task.PROSPECTIVE)
        .annotate(item_context=F("item__context_id"))
        .filter(queue.continuation_read(OuterRef(OuterRef("verifier_id"))))
    )
    rows = list(leaked.order_by("pk").values_list("pk", "claim_id", "item_id", "batch_id"))
    report = {
        "judgments": len(rows),
        "items": len({item for _, _, item, _ in rows}),
        "batches": len({batch for _, _, _, batch in rows}),
        "dry_run": dry_run,
    }
    if dry_run or not rows:
        return report
    Claim.objects.filter(pk__in=[claim for _, claim, _, _ in rows if claim]).update(exposed=True)
    Judgment.objects.filter(pk__in=[pk for pk, _, _, _ in rows]).update(exposed=True)
    tallies.batch_tallies_refresh(batch_ids={batch for *_, batch in rows})
    if not queue.exposed_judgments_count():
        counts = Counter(item for _, _, item, _ in rows)
        for item_id in sorted(counts):  # fixed order, as every slot update
            QueueSlot.objects.filter(pk=item_id).update(
                taken=Greatest(F("taken") - counts[item_id], 0), answered=Greatest(F("answered") - counts[item_id], 0)
            )
    return report


# --- batches (staff) -----------------------------------------------------------------------


def _batch_for_update(*, name: str | None = None, batch: Batch | None = None) -> Batch:
    if batch is not None:
        name = batch.name
    try:
        return Batch.objects.select_for_update().get(name=name)
    except Batch.DoesNotExist:
        raise VerificationError(f"no batch named {name!r}", code="not_found", status=404, field="batch") from None


@transaction.atomic
def batch_open(
    *,
    name: str,
    overlap: int | None = None,
    pools: Iterable[str] = (),
    lease_minutes: int | None = None,
    gold_rate: float | None = None,
    k_min: int | None = None,
    k_max: int | None = None,
    create: bool = True,
) -> tuple[Batch, bool]:
    """Open (create or reopen) a batch to pools of verifiers, with overlap k, or adaptive
    overlap k-min..k-max (`verification.adaptive`, refreshed by `aggregation.adaptive`; its batch's overlap is k-min).
    With `create=False` a name no batch has is refused (a typo would open an empty batch)."""

    if k_min is not None and overlap is not None and overlap != k_min:
        raise VerificationError("give either overlap or k_min/k_max", field="overlap")
    overlap = k_min if k_min is not None else overlap
    if overlap is not None and overlap < 1:
        raise VerificationError("overlap must be at least 1", field="overlap")
    if gold_rate is not None and not 0 <= gold_rate <= 1:
        raise VerificationError("gold_rate must be between 0 and 1", field="gold_rate")
    if lease_minutes is not None and lease_minutes < 1:
        raise VerificationError("lease_minutes must be at least 1", field="lease_minutes")
    pool_objs = []
    for pool_name in pools:
        pool = Pool.objects.filter(name=pool_name).first()
        if pool is None:
            raise VerificationError(f"no pool named {pool_name!r}", code="not_found", field="pool")
        pool_objs.append(pool)
    if not create and not Batch.objects.filter(name=name).exists():
        raise VerificationError(
            f"no batch named {name!r} (batches come from the item imports; --create opens a new, empty one)",
            code="not_found", status=404, field="batch",
        )
    batch, created = Batch.objects.get_or_create(
        name=name, defaults={"overlap": overlap or settings.DIALTOM_DEFAULT_OVERLAP, "lease_minutes": settings.DIALTOM_LEASE_MINUTES}
    )
    batch = Batch.objects.select_for_update().get(pk=batch.pk)
    fields = ["status", "closed_at"]
    batch.status, batch.closed_at = BatchStatus.OPEN, None
    if overlap is not None:
        batch.overlap = overlap
        fields.append("overlap")
    if lease_minutes is not None:
        batch.lease_minutes = lease_minutes
        fields.append("lease_minutes")
    if gold_rate is not None:
        batch.gold_rate = gold_rate
        fields.append("gold_rate")
    batch.save(update_fields=fields)
    if pool_objs:
        batch.pools.add(*pool_objs)
    if k_min is None and overlap is not None:
        k_min = k_max = overlap  # an explicit fixed k ends adaptive overlap
    adaptive = adaptive_overlap_set(batch=batch, k_min=k_min, k_max=k_max)
    batch_queue_sync(batch=batch, recount=True)
    slots = QueueSlot.objects.filter(batch=batch, is_gold=False)
    if adaptive is None or k_max is not None:  # fixed k, or adaptive (re)started from k-min
        slots.exclude(needed=batch.overlap, priority=0.0).update(needed=Greatest(batch.overlap, F("taken")), priority=0.0)
    # a plain reopen of an adaptive batch keeps what its rounds asked for
    return batch, created


def batch_reopen(*, batch: Batch) -> Batch:
    """Open a paused or closed batch again, keeping its settings (the dashboard's door)."""
    return batch_open(name=batch.name)[0]


@transaction.atomic
def batch_pools_set(*, name: str, pools: Iterable[str]) -> Batch:
    batch = _batch_for_update(name=name)
    objs = list(Pool.objects.filter(name__in=list(pools)))
    unknown = set(pools) - {p.name for p in objs}
    if unknown:
        raise VerificationError(f"no pool named {sorted(unknown)[0]!r}", code="not_found", field="pool")
    batch.pools.set(objs)
    return batch


@transaction.atomic
def batch_pause(*, name: str | None = None, batch: Batch | None = None) -> Batch:
    """No new items are handed out; answers to claims already held are still accepted."""
    batch = _batch_for_update(name=name, batch=batch)
    if batch.status == BatchStatus.CLOSED:
        raise VerificationError(f"batch {batch.name} is closed", code="batch_closed", status=409)
    batch.status = BatchStatus.PAUSED
    batch.save(update_fields=["status"])
    return batch


@transaction.atomic
def batch_close(*, name: str | None = None, batch: Batch | None = None) -> Batch:
    """No new items, no new or changed answers; live claims are released."""
    batch = _batch_for_update(name=name, batch=batch)
    if batch.status != BatchStatus.CLOSED:
        batch.status, batch.closed_at = BatchStatus.CLOSED, timezone.now()
        batch.save(update_fields=["status", "closed_at"])
    live = list(claims_for_update().filter(batch=batch, status=ClaimStatus.ACTIVE).values_list("pk", "item_id", "exposed"))
    if live:
        Claim.objects.filter(pk__in=[pk for pk, _, _ in live]).update(status=ClaimStatus.EXPIRED)
        _slots_release(Counter(item_id for _, item_id, exposed in live if queue.counts_towards_k(exposed=exposed)))
    return batch


# --- gold items ------------------------------------------------------------------------------


@transaction.atomic
def items_gold_set(*, item_ids: Iterable[str], is_gold: bool) -> int:
    """Mark items as attention checks (their answer key is the known answer), or unmark them."""
    ids = list(item_ids)
    items = list(Item.objects.select_for_update(of=("self",)).filter(item_id__in=ids).select_related("batch").order_by("pk"))
    unknown = set(ids) - {i.item_id for i in items}
    if unknown:
        raise VerificationError(f"no item {sorted(unknown)[0]!r}", code="not_found", field="item_id")
    Item.objects.filter(pk__in=[i.pk for i in items]).update(is_gold=is_gold)
    kept.items_regolded(items=items)
    slots = QueueSlot.objects.filter(item__in=[i.pk for i in items]).order_by("pk")
    if is_gold:
        slots.update(is_gold=True, needed=GOLD_NEEDED)
    else:
        for item in items:
            if item.batch_id:
                QueueSlot.objects.filter(pk=item.pk).update(
                    is_gold=False, needed=Greatest(item.batch.overlap, F("taken"))
                )
    return len(items)
