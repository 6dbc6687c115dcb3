"""Row locks of the verification queue, always taken in one fixed order.

Order: claims -> queue slots. The claim statement (`statements.claim_next`) is the one path
that locks a slot before touching claims, and it only ever inserts claims. It takes a single
slot with `SKIP LOCKED`; a context's retrospective row it takes by locking the context row
(`SKIP LOCKED`: one claimer per row at a time) and then the row's slots in item order,
waiting only behind the short updates of answers, skips and expiries, which lock slots in
the same ascending order. Two requests of one verifier are kept apart by its `QueueTurn`.
"""
from django.db.models import QuerySet

from .models import Claim, Judgment


def claims_for_update(*, skip_locked: bool = False) -> QuerySet[Claim]:
    return Claim.objects.select_for_update(skip_locked=skip_locked, of=("self",))


def judgments_for_update() -> QuerySet[Judgment]:
    return Judgment.objects.select_for_update(of=("self",))
