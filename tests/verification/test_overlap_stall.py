"""Adaptive overlap never waits forever on an item nobody may take (issue 25's rehearsal).

The context rule gives a verifier either a context's retrospective items or one of its
profile-bearing items. When a round of adaptive overlap asks one more judgment of an item
whose every pool member has judged it or has seen its context, nobody can give it and the
batch would never settle: the refresh does not ask for such a judgment, and the sweep
settles a slot left short this way once the batch has been quiet for
`DIALTOM_OVERLAP_STALL_SECONDS`, counting it on the batch.
"""
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from aggregation import adaptive as adaptive_module
from aggregation.adaptive import batch_overlap_refresh, overlap_refresh_due, stalled_slots_settle
from verification.adaptive import batch_is_settled
from verification.models import AdaptiveOverlap, Claim, Judgment, QueueSlot
from verification.queue import batch_staffing, slots_nobody_may_take
from verification.services import batch_open

from .factories import context_with_items, open_batch, verifiers
from .test_context_rule import work_through

pytestmark = pytest.mark.django_db


def a_worked_context():
    """A context's retrospective items in one batch (read by v00), its three profile-bearing items
    in an adaptive batch (k 1..2) whose pool is v00..v03: v01..v03 judge one each, and v00 may
    not (they read the dialogue). Every pool member has then seen the context."""
    reader, *others = verifiers(4)
    retro_batch = open_batch(name="mi-b01", n_items=0, overlap=1, pool="readers", verifiers=[reader])
    profile_batch = open_batch(name="mi-b02", n_items=0, overlap=1, verifiers=[reader, *others])
    _, bearing = context_with_items(batch=retro_batch, context_id="mi-s0001-w00", profile_batch=profile_batch)
    profile_batch, _ = batch_open(name=profile_batch.name, k_min=1, k_max=2)
    assert len(work_through(reader, retro_batch)) == 6
    for person in others:
        assert len(work_through(person, profile_batch)) == 1
    return profile_batch, bearing


def test_an_item_everyone_has_seen_the_context_of_is_one_nobody_may_take():
    batch, bearing = a_worked_context()
    pks = [item.pk for item in bearing]
    # nothing is short, but one more judgment of any of them would find nobody
    assert slots_nobody_may_take(batch_id=batch.pk) == set()
    assert slots_nobody_may_take(batch_id=batch.pk, item_pks=pks) == set(pks)
    # a newcomer to the pool could give one: then nobody is blocked
    newcomer = verifiers(1, prefix="new")[0]
    batch.pools.get().members.add(newcomer)
    assert slots_nobody_may_take(batch_id=batch.pk, item_pks=pks) == set()


def test_the_refresh_does_not_ask_what_nobody_may_give(settings):
    settings.DIALTOM_OVERLAP_MAX_RISK = 1e-9  # unsure of everything: the policy wants more of every item
    batch, bearing = a_worked_context()
    result = batch_overlap_refresh(batch_id=batch.pk)
    assert result["acted"] and result["asked"] == 0 and result["settled"]
    assert set(QueueSlot.objects.filter(batch=batch).values_list("needed", flat=True)) == {1}
    # with a newcomer in the pool, the same policy asks one more of each
    batch.pools.get().members.add(verifiers(1, prefix="new")[0])
    AdaptiveOverlap.objects.filter(batch=batch).update(settled=False)
    assert batch_overlap_refresh(batch_id=batch.pk)["asked"] == 3
    assert set(QueueSlot.objects.filter(batch=batch).values_list("needed", flat=True)) == {2}


def test_the_sweep_settles_a_quiet_batch_whose_short_item_nobody_may_take():
    batch, bearing = a_worked_context()
    stuck = bearing[0]
    # a round asked one more of it (before the last verifier saw the context, say)
    QueueSlot.objects.filter(pk=stuck.pk).update(needed=2)
    AdaptiveOverlap.objects.filter(batch=batch).update(settled=False)
    assert not batch_staffing(batch_ids=[batch.pk])[batch.pk].short  # 4 needed, 4 in the pool: no fallback
    assert slots_nobody_may_take(batch_id=batch.pk) == {stuck.pk}
    assert not batch_is_settled(batch_id=batch.pk)

    # while the batch is not quiet, nothing is settled
    assert stalled_slots_settle(batch_id=batch.pk, quiet_seconds=60) == 0
    assert QueueSlot.objects.get(pk=stuck.pk).needed == 2

    # quiet for longer than the setting: the sweep settles it at what it holds, and the round goes on
    long_ago = timezone.now() - timedelta(seconds=120)
    Judgment.objects.filter(batch=batch).update(created_at=long_ago)
    Claim.objects.filter(batch=batch).update(claimed_at=long_ago)
    overlap_refresh_due()
    slot = QueueSlot.objects.get(pk=stuck.pk)
    assert slot.needed == slot.taken == 1
    adaptive = AdaptiveOverlap.objects.get(batch=batch)
    assert adaptive.settled_short == 1 and adaptive.settled  # the refresh after it asked for nothing more
    assert not QueueSlot.objects.filter(batch=batch, taken__lt=F("needed")).exists()


def test_the_sweep_leaves_alone_a_batch_refitted_since_its_last_judgment(monkeypatch, settings):
    """Issue 25's full rehearsal: the sweep refitted all 55 open batches every time, unchanged or
    not, and the worker's threads were busy with those fits while aggregation runs waited."""
    batch, _ = a_worked_context()
    refits = []
    monkeypatch.setattr(adaptive_module, "batch_overlap_refresh",
                        lambda *, batch_id: refits.append(batch_id) or {"batch_id": batch_id})
    # never refitted: the sweep refits it
    AdaptiveOverlap.objects.filter(batch=batch).update(settled=False, refreshed_at=None)
    assert overlap_refresh_due() == [{"batch_id": batch.pk}] and refits == [batch.pk]
    # refitted after its last judgment: nothing to fit anew
    AdaptiveOverlap.objects.filter(batch=batch).update(refreshed_at=timezone.now() + timedelta(seconds=1))
    assert overlap_refresh_due() == [] and refits == [batch.pk]
    # a judgment changed since the refit: refitted again
    Judgment.objects.filter(batch=batch).update(updated_at=timezone.now() + timedelta(seconds=2))
    overlap_refresh_due()
    assert refits == [batch.pk, batch.pk]


def test_a_sweep_not_started_before_the_next_is_due_expires(settings):
    """A worker busy for longer than a sweep's interval must not find a pile of sweeps queued."""
    assert {name for name in settings.CELERY_BEAT_SCHEDULE} >= {"aggregate-due-batches", "overlap-refresh-due", "jobs-sweep"}
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert 0 < entry["options"]["expires"] <= entry["schedule"], name
