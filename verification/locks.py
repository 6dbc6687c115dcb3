"""Row locks of the verification queue, always taken in one fixed order.

Order: the verifier's user row -> claims -> queue slots. `item_claim_next` is the one
path that locks a slot before touching claims, and it only ever inserts claims. It takes
a single slot with `SKIP LOCKED`; a context's retrospective group it takes by locking the
context row first (`SKIP LOCKED`: one claimer per group at a time) and then the group's
slots in item order, waiting only behind the short updates of answers, skips and expiries,
which lock slots in the same ascending order.
"""
from django.db.models import QuerySet

from accounts.models import User

from .models import Claim, Judgment, QueueSlot


def verifier_for_update(*, verifier_id: int) -> User:
    """Serialise one verifier's own queue requests (two tabs, a double click)."""
    return User.objects.select_for_update().only("id").get(pk=verifier_id)


def claims_for_update(*, skip_locked: bool = False) -> QuerySet[Claim]:
    return Claim.objects.select_for_update(skip_locked=skip_locked, of=("self",))


def open_slots_for_update() -> QuerySet[QueueSlot]:
    return QueueSlot.objects.select_for_update(skip_locked=True, of=("self",))


def judgments_for_update() -> QuerySet[Judgment]:
    return Judgment.objects.select_for_update(of=("self",))


def group_slots_for_update() -> QuerySet[QueueSlot]:
    """A context's retrospective slots, locked in item order (after the context row)."""
    return QueueSlot.objects.select_for_update(of=("self",)).order_by("item_id")
