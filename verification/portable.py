"""The claim statement's steps through the ORM, for databases other than PostgreSQL.

`statements.claim_next` is one PostgreSQL statement (CTEs, `FOR NO KEY UPDATE … SKIP
LOCKED`, `gen_random_uuid()`, `sha256`). SQLite, the database of `make demo`, has none of
those and needs none: it lets one writer in at a time, so the same steps can run one query
after another in a transaction. The rules are not written again: the pick is
`queue.slots_open_to` in `queue.queue_order`, the gold rate `queue.gold_due`, the option
order `queue.display_order_for`, exactly what the statement compiles.
"""
from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Pool
from annotation.models import Batch, BatchStatus, Task

from . import queue
from .statements import NextResult
from .models import Claim, ClaimStatus, QueueSlot, QueueTurn

CLAIM_RELATED = ("item", "item__context", "item__context__domain", "batch")


def _pick(*, verifier_id: int, batch: Batch, gold: bool, exposure_allowed: bool, avoid) -> QueueSlot | None:
    return (
        queue.slots_open_to(verifier=verifier_id, batch_ids=[batch.pk], exposure_allowed=exposure_allowed)
        .filter(is_gold=gold)
        .exclude(item_context__in=list(avoid))
        .order_by(*queue.queue_order(exposure_allowed=exposure_allowed))
        .first()
    )


def _gold_is_due(*, verifier_id: int, batch: Batch) -> bool:
    if batch.gold_rate <= 0:
        return False
    served = Claim.objects.filter(verifier_id=verifier_id, batch=batch, status__in=queue.SERVED)
    return queue.gold_due(served=served.count(), gold_served=served.filter(is_gold=True).count(), rate=batch.gold_rate)


@transaction.atomic
def claim_next(*, verifier_id: int, batch_name: str, exposure_allowed: bool = False, avoid=()) -> NextResult:
    """What `statements.claim_next` does, step by step; returns its `NextResult`."""
    batch = Batch.objects.filter(name=batch_name, pools__in=Pool.objects.filter(members=verifier_id)).distinct().first()
    if batch is None:
        return NextResult(claim=None, found=False, batch_status=None, turned=False, picked=None, waiting=False)
    now = timezone.now()
    claims = Claim.objects.select_related(*CLAIM_RELATED)
    if batch.status != BatchStatus.CLOSED:
        live = (claims.filter(verifier_id=verifier_id, batch=batch, status=ClaimStatus.ACTIVE, expires_at__gt=now)
                .order_by("expires_at", "claimed_at").first())
        if live is not None:
            return NextResult(claim=live, found=True, batch_status=batch.status, turned=False, picked=None, waiting=False)
    if batch.status != BatchStatus.OPEN:
        return NextResult(claim=None, found=True, batch_status=batch.status, turned=False, picked=None, waiting=False)
    turn, _ = QueueTurn.objects.get_or_create(verifier_id=verifier_id)
    QueueTurn.objects.filter(pk=turn.pk).update(claims=F("claims") + 1)

    kinds = (True, False) if _gold_is_due(verifier_id=verifier_id, batch=batch) else (False,)
    picked = None
    for gold in kinds:
        picked = _pick(verifier_id=verifier_id, batch=batch, gold=gold, exposure_allowed=exposure_allowed, avoid=avoid)
        if picked is not None:
            break
    if picked is None:
        return NextResult(claim=None, found=True, batch_status=batch.status, turned=True, picked=None, waiting=False)
    chosen = [picked.item_id]
    if picked.item_task == Task.RETROSPECTIVE:  # the context's open retrospective items, in a row
        chosen = list(
            queue.slots_open_to(verifier=verifier_id, batch_ids=[batch.pk], exposure_allowed=exposure_allowed)
            .filter(item__task=Task.RETROSPECTIVE, item__context_id=picked.item_context)
            .order_by("item_id").values_list("item_id", flat=True)
        )
    slots = list(QueueSlot.objects.filter(pk__in=chosen, taken__lt=F("needed")).order_by("item_id"))
    exposed = bool(getattr(picked, "exposed", False))
    if queue.counts_towards_k(exposed=exposed):  # under `exclude`, an exposed claim leaves k open
        QueueSlot.objects.filter(pk__in=[s.pk for s in slots]).update(taken=F("taken") + 1)
    lease = timedelta(minutes=batch.lease_minutes)
    made = Claim.objects.bulk_create([
        Claim(item_id=slot.item_id, verifier_id=verifier_id, batch=batch, status=ClaimStatus.ACTIVE,
              display_order=queue.display_order_for(verifier_id=verifier_id, item_pk=slot.item_id),
              claimed_at=now, expires_at=now + lease * (n + 1), is_gold=slot.is_gold,
              exposed=exposed)
        for n, slot in enumerate(slots)
    ])
    claim = claims.get(pk=made[0].pk) if made else None
    return NextResult(claim=claim, found=True, batch_status=batch.status, turned=True,
                      picked=None if claim else picked.item_context, waiting=False)
