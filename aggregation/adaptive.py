"""Writes of adaptive overlap: the refresh that decides which items of a batch get one more judgment.

The policy itself is `aggregation.overlap` (plain functions, also run by `overlap_simulate`);
this module feeds it a batch's judgments and writes its answer into the queue: `needed`
up by one (never past k-max) and `priority` on the slots of the items it is unsure of.

A batch works in rounds. The refresh acts only on a *settled* batch (every item has the
judgments it was asked for, no claim in flight), so it always fits the model on whole
rounds: the live queue and the replay of the same judgments take the same decisions.
Refreshes are requested after each judgment (`overlap_refresh_request`, throttled to one per
refresh interval and batch) and by the periodic sweep; a refresh is safe to run any number
of times (on a batch that is not settled, or already decided, it changes nothing).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import User
from annotation.models import Item
from dialtom_site import jobs
from verification.adaptive import batch_is_settled
from verification import queue
from verification.models import AdaptiveOverlap, Claim, Judgment, QueueSlot

from .overlap import OverlapPolicy, batch_round
from .selectors import usable_judgments

logger = logging.getLogger(__name__)


def overlap_refresh_request(*, batch_id: int, refresh_seconds: float) -> bool:
    """Queue one refresh of the batch in `refresh_seconds`, unless one is queued already."""
    if not cache.add(_refresh_key(batch_id), 1, timeout=int(refresh_seconds) + 60):
        return False
    jobs.task_named("aggregation.tasks.batch_overlap_refresh_task").apply_async(
        kwargs={"batch_id": batch_id}, countdown=refresh_seconds
    )
    return True


def _refresh_key(batch_id: int) -> str:
    return f"overlap-refresh-queued:{batch_id}"


def batch_overlap_refresh(*, batch_id: int) -> dict:
    """Refit the batch's model and ask one more judgment of every item it is unsure of.

    Returns what it did: `acted` False when the batch is not adaptive or not settled.
    """
    cache.delete(_refresh_key(batch_id))  # judgments from now on request a new refresh
    with transaction.atomic():
        adaptive = AdaptiveOverlap.objects.select_for_update().filter(batch_id=batch_id).first()
        if adaptive is None:
            return {"batch_id": batch_id, "adaptive": False, "acted": False}
        if not batch_is_settled(batch_id=batch_id):
            return {"batch_id": batch_id, "adaptive": True, "acted": False, "rounds": adaptive.rounds}
        policy = OverlapPolicy.from_dict(adaptive.policy)
        frame, items, answers, tasks = _batch_policy_input(batch_id=batch_id)
        decisions = batch_round(frame, items=items, answers=answers, tasks=tasks, policy=policy)
        pk_of = dict(Item.objects.filter(batch_id=batch_id, is_gold=False).values_list("item_id", "pk"))
        by_pk = {pk_of[item]: decision for item, decision in decisions.items()}
        # an item every verifier of the batch's pools has judged cannot get another one, nor one
        # the context rule withholds from everyone who has not (it would hold the batch forever)
        pool_size = User.objects.filter(pools__batches=batch_id).distinct().count()
        wanted = [pk for pk, decision in by_pk.items() if decision.more]
        blocked = queue.slots_nobody_may_take(batch_id=batch_id, item_pks=wanted) if wanted else set()
        asked = 0
        for pk in sorted(pk for pk in wanted if pk not in blocked):  # fixed lock order
            asked += QueueSlot.objects.filter(pk=pk, needed__lt=policy.k_max, taken__lt=pool_size).update(
                needed=F("needed") + 1, priority=by_pk[pk].priority
            )
        adaptive.rounds += 1
        adaptive.undecided = asked
        adaptive.settled = asked == 0
        adaptive.refreshed_at = timezone.now()
        adaptive.save(update_fields=["rounds", "undecided", "settled", "refreshed_at"])
        settled = adaptive.settled
    if settled:
        transaction.on_commit(lambda: jobs.task_named("aggregation.tasks.batch_progress_check").delay(batch_id=batch_id))
    logger.info("batch %s: overlap round %s asked %s more judgments", batch_id, adaptive.rounds, asked)
    return {"batch_id": batch_id, "adaptive": True, "acted": True, "rounds": adaptive.rounds, "asked": asked, "settled": settled}


def _batch_policy_input(*, batch_id: int):
    """The batch's judgments as the policy reads them: keyed by item id and username, as in
    a judgments.csv export (so the replay of that export fits exactly the same frame)."""
    import pandas as pd

    rows = list(
        usable_judgments()  # what Dawid–Skene fits: no excluded verifiers, no exposed judgments (by the setting)
        .filter(batch_id=batch_id)
        .order_by()
        .values_list("item__item_id", "verifier__username", "label")
    )
    frame = pd.DataFrame.from_records(rows, columns=["task", "worker", "label"])
    benchmark = list(
        Item.objects.filter(batch_id=batch_id, is_gold=False).order_by("item_id").values_list("item_id", "answer", "task")
    )
    items = [i for i, _, _ in benchmark]
    answers = {i: answer for i, answer, _ in benchmark}
    tasks = {i: task for i, _, task in benchmark}
    return frame, items, answers, tasks


def overlap_refresh_due() -> list[dict]:
    """The sweep: refresh every open adaptive batch that is not settled (catches a lost request),
    after settling the short items of a quiet batch that nobody may take (`stalled_slots_settle`).

    A batch refitted after its last judgment was given or changed, with no item settled short
    since, is left alone: the refit would ask what it asked. (Refitting them all on every sweep
    kept the worker's threads busy with Dawid–Skene fits of unchanged batches in issue 25's full
    rehearsal, 55 open batches, while their aggregation runs waited in the queue.)"""
    rows = list(
        AdaptiveOverlap.objects.filter(settled=False, batch__status="open").order_by("batch_id")
        .values_list("batch_id", "refreshed_at")
    )
    refreshed = []
    for batch_id, refreshed_at in rows:
        settled_short = stalled_slots_settle(batch_id=batch_id)
        if refreshed_at is not None and not settled_short and not Judgment.objects.filter(
            Q(created_at__gt=refreshed_at) | Q(updated_at__gt=refreshed_at), batch_id=batch_id
        ).exists():
            continue
        refreshed.append(batch_overlap_refresh(batch_id=batch_id))
    return refreshed


def stalled_slots_settle(*, batch_id: int, quiet_seconds: float | None = None) -> int:
    """An adaptive batch with no claim and no judgment for `quiet_seconds`
    (`DIALTOM_OVERLAP_STALL_SECONDS`) whose short items no pool member may take (the context
    rule, `queue.slots_nobody_may_take`) would wait forever: settle those items at what they
    hold (`needed` = `taken`), count them on the batch (`settled_short`), and let the round go on.
    Returns how many it settled."""
    quiet = settings.DIALTOM_OVERLAP_STALL_SECONDS if quiet_seconds is None else quiet_seconds
    since = timezone.now() - timedelta(seconds=quiet)
    if not QueueSlot.objects.filter(batch_id=batch_id, is_gold=False, taken__lt=F("needed")).exists():
        return 0
    if (Claim.objects.filter(batch_id=batch_id, claimed_at__gte=since).exists()
            or Judgment.objects.filter(batch_id=batch_id, created_at__gte=since).exists()):
        return 0
    blocked = queue.slots_nobody_may_take(batch_id=batch_id)
    if not blocked:
        return 0
    with transaction.atomic():
        n = QueueSlot.objects.filter(pk__in=sorted(blocked), taken__lt=F("needed")).update(needed=F("taken"))
        AdaptiveOverlap.objects.filter(batch_id=batch_id).update(settled_short=F("settled_short") + n)
    logger.warning("batch %s: %s items settled short: no pool member may give their next judgment", batch_id, n)
    return n
