"""Adaptive overlap, on the queue's side: the policy a batch is opened with, and whether it is settled.

The refresh that decides which items get one more judgment fits the aggregation model:
it is `aggregation.adaptive`, queued by name after a judgment (`aggregation.tasks`).
"""
from __future__ import annotations

from django.db.models import Count, F

from annotation.models import Batch, Item

from .errors import VerificationError
from .models import AdaptiveOverlap, Claim, ClaimStatus, QueueSlot
from .policy import policy_from_settings


def adaptive_overlap_set(*, batch: Batch, k_min: int | None, k_max: int | None) -> AdaptiveOverlap | None:
    """Record (or drop) a batch's adaptive policy when it is opened; call inside `batch_open`'s transaction.

    k-min..k-max with k-max > k-min makes the batch adaptive, with the thresholds and refresh
    interval of the settings as they are now; k-max == k-min (or neither) is fixed k.
    """
    if k_min is None and k_max is None:
        return AdaptiveOverlap.objects.filter(batch=batch).first()
    if k_min is None or k_max is None:
        raise VerificationError("k_min and k_max go together", field="k_max" if k_max is None else "k_min")
    if k_min < 1:
        raise VerificationError("k_min must be at least 1", field="k_min")
    if k_max < k_min:
        raise VerificationError("k_max must be at least k_min", field="k_max")
    if k_max == k_min:
        AdaptiveOverlap.objects.filter(batch=batch).delete()
        return None
    policy = policy_from_settings(k_min=k_min, k_max=k_max)
    adaptive, _ = AdaptiveOverlap.objects.update_or_create(
        batch=batch, defaults={"k_min": k_min, "k_max": k_max, "policy": policy.as_dict(), "settled": False}
    )
    return adaptive


def batch_is_settled(*, batch_id: int) -> bool:
    """Every benchmark item holds the judgments it was asked for and no claim is in flight."""
    slots = QueueSlot.objects.filter(batch_id=batch_id, is_gold=False)
    if not slots.exists() or slots.filter(taken__lt=F("needed")).exists():
        return False
    if Claim.objects.filter(batch_id=batch_id, status=ClaimStatus.ACTIVE, is_gold=False).exists():
        return False
    short = (
        Item.objects.filter(batch_id=batch_id, is_gold=False)
        .annotate(n=Count("judgments"))
        .filter(queue_slot__needed__gt=F("n"))
    )
    return not short.exists()
