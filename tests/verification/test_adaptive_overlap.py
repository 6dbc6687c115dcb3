"""Adaptive overlap in the live queue: batch_open k-min..k-max, the refresh, and a whole batch
worked through a real Celery worker, checked against the offline replay of the same answers."""
import random
import time
import uuid

import pytest

from aggregation.models import AggregationRun, ItemResult, RunStatus
from aggregation.overlap import OverlapPolicy, release_decisions, replay_batch, used_frame
from aggregation.selectors import batch_is_complete
from annotation.models import Task
from tests.factories import ContextFactory, ItemFactory, ProspectiveItemFactory
from aggregation.adaptive import batch_overlap_refresh
from verification.models import AdaptiveOverlap, Judgment, QueueSlot
from verification.services import VerificationError, batch_open, item_claim_next, judgment_submit

from .factories import open_batch, verifiers

LABELS = ["A", "B", "C", "D", "NONE"]


def submit(verifier, claim, label):
    """Answer with `label` in the original letters (the form shows them shuffled)."""
    choice = label if label == "NONE" else "ABCD"[claim.display_order.index(label)]
    return judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=uuid.uuid4())


@pytest.mark.django_db
def test_batch_open_records_the_policy_and_fixed_k_stays_the_default(settings):
    settings.DIALTOM_OVERLAP_MAX_RISK = 0.05
    people = verifiers(2)
    batch = open_batch(overlap=3, n_items=3, verifiers=people)
    batch, _ = batch_open(name=batch.name)
    assert batch.overlap == 3 and not AdaptiveOverlap.objects.filter(batch=batch).exists()

    batch, _ = batch_open(name=batch.name, k_min=2, k_max=4)
    adaptive = AdaptiveOverlap.objects.get(batch=batch)
    assert (batch.overlap, adaptive.k_min, adaptive.k_max) == (2, 2, 4)
    assert adaptive.policy["max_risk"] == 0.05 and adaptive.policy["k_max"] == 4
    assert set(QueueSlot.objects.filter(batch=batch).values_list("needed", flat=True)) == {2}
    assert not batch_is_complete(batch_id=batch.pk, overlap=0)  # unsettled: never complete

    with pytest.raises(VerificationError, match="k_max must be at least k_min"):
        batch_open(name=batch.name, k_min=3, k_max=2)
    with pytest.raises(VerificationError, match="go together"):
        batch_open(name=batch.name, k_min=3)

    batch, _ = batch_open(name=batch.name, overlap=3)  # an explicit k ends adaptive overlap
    assert batch.overlap == 3 and not AdaptiveOverlap.objects.filter(batch=batch).exists()


@pytest.mark.django_db
def test_command_and_api_open_an_adaptive_batch(verifier):
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    from tests.factories import StaffFactory, api_for

    batch = open_batch(overlap=3, n_items=2, verifiers=[verifier])
    out = StringIO()
    call_command("batch_open", batch.name, "--k-min", "2", "--k-max", "5", "--json", stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert lines[0].endswith("k=2..5 (adaptive), 2 items")
    report = json.loads(lines[-1])
    assert report["overlap"] == 2 and report["adaptive_overlap"]["k_max"] == 5
    with pytest.raises(CommandError, match="k_max: k_max must be at least k_min"):
        call_command("batch_open", batch.name, "--k-min", "4", "--k-max", "3")

    staff = api_for(StaffFactory())
    url = f"/api/v1/batches/{batch.name}/status/"
    body = staff.post(url, {"status": "open", "k_min": 2, "k_max": 4}, format="json").json()
    assert body["overlap"] == 2 and body["adaptive_overlap"]["k_min"] == 2 and body["adaptive_overlap"]["k_max"] == 4
    r = staff.post(url, {"status": "open", "k_min": 3}, format="json")
    assert r.status_code == 400 and "k_min and k_max go together" in r.content.decode()
    body = staff.post(url, {"status": "open", "overlap": 3}, format="json").json()
    assert body["overlap"] == 3 and body["adaptive_overlap"] is None


@pytest.mark.django_db
def test_refresh_waits_for_a_settled_batch_then_asks_more_where_unsure_and_serves_it_first():
    people = verifiers(4)
    batch = open_batch(overlap=2, n_items=6, verifiers=people)
    batch, _ = batch_open(name=batch.name, k_min=2, k_max=3)
    items = list(batch.items.order_by("pk"))
    split = items[-1]  # answers agree on C (the key) everywhere; on the last item (key B) they split B / C
    type(split).objects.filter(pk=split.pk).update(answer="B")
    for person in people[:2]:
        for _ in items:
            claim = item_claim_next(verifier=person, batch=batch)
            label = "B" if (claim.item_id == split.pk and person == people[1]) else "C"
            if claim.item_id == items[2].pk and person == people[1]:
                # refresh while a claim is in flight: nothing is decided yet
                assert batch_overlap_refresh(batch_id=batch.pk)["acted"] is False
            submit(person, claim, label)

    result = batch_overlap_refresh(batch_id=batch.pk)
    assert result["acted"] and result["asked"] >= 1
    slot = QueueSlot.objects.get(pk=split.pk)
    assert slot.needed == 3 and slot.priority > 0
    assert AdaptiveOverlap.objects.get(batch=batch).undecided == result["asked"]
    # the unsure item is served first
    assert item_claim_next(verifier=people[2], batch=batch).item_id == split.pk


def work_until_settled(batch, people, accuracy, truth, *, timeout=180):
    """Simulated verifiers work the queue; an empty queue means: wait for the next refresh."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        served = False
        for person in people:
            claim = item_claim_next(verifier=person, batch=batch)
            if claim is None:
                continue
            served = True
            rng = random.Random(f"{person.username}:{claim.item.item_id}")  # answers do not depend on timing
            right = truth[claim.item_id]
            label = right if rng.random() < accuracy[person.username] else rng.choice([x for x in LABELS if x != right])
            submit(person, claim, label)
        if not served:
            if AdaptiveOverlap.objects.get(batch=batch).settled:
                return
            time.sleep(0.1)
    raise AssertionError("the adaptive batch did not settle")


@pytest.mark.celery
def test_a_batch_worked_through_the_live_queue_spends_what_the_replay_predicts(celery_worker, settings):
    # Given an adaptive batch of 48 items (a quarter of them flawed), refreshed by a real
    # Celery worker, and six verifiers of known accuracy
    settings.DIALTOM_OVERLAP_REFRESH_SECONDS = 0.2
    accuracy = {"sim00": 0.95, "sim01": 0.9, "sim02": 0.85, "sim03": 0.8, "sim04": 0.7, "sim05": 0.6}
    people = verifiers(6, prefix="sim")
    batch = open_batch(name="adaptive-b01", overlap=2, n_items=0, verifiers=people)
    rng = random.Random(13)
    truth = {}
    for n in range(48):
        factory = ProspectiveItemFactory if n % 3 == 0 else ItemFactory
        item = factory(batch=batch, context=ContextFactory(context_id=f"ad-s{n:04d}-w00"), answer=rng.choice("ABCD"))
        truth[item.pk] = item.answer if rng.random() > 0.25 else rng.choice([x for x in LABELS if x != item.answer])
    batch, _ = batch_open(name=batch.name, k_min=2, k_max=4)

    # When they work it until the policy asks for nothing more
    work_until_settled(batch, people, accuracy, truth)

    # Then every item got k-min first and some got more, never past k-max
    counts = {item_id: 0 for item_id in truth}
    for item_id in Judgment.objects.filter(batch=batch).values_list("item_id", flat=True):
        counts[item_id] += 1
    assert min(counts.values()) == 2 and max(counts.values()) <= 4
    adaptive = AdaptiveOverlap.objects.get(batch=batch)
    assert adaptive.rounds >= 2 and adaptive.undecided == 0 and sum(counts.values()) > 2 * len(counts)

    # And the replay of the same answers (in the order they came, per item) spends the same
    # judgments on the same items
    items = {i.pk: i for i in batch.items.all()}
    judgments = {items[pk].item_id: [] for pk in items}
    for item_id, username, label in Judgment.objects.filter(batch=batch).order_by("created_at", "id").values_list(
        "item__item_id", "verifier__username", "label"
    ):
        judgments[item_id].append((username, label))
    answers = {i.item_id: i.answer for i in items.values()}
    tasks = {i.item_id: i.task for i in items.values()}
    assert {Task.PROSPECTIVE, Task.RETROSPECTIVE} == set(tasks.values())
    policy = OverlapPolicy.from_dict(adaptive.policy)
    used = replay_batch(judgments, answers=answers, tasks=tasks, policy=policy)
    assert used == {items[pk].item_id: n for pk, n in counts.items()}

    # And the settled batch's automatic aggregation run keeps the items the replay keeps
    deadline = time.monotonic() + 60
    while not AggregationRun.objects.filter(batches=batch, status=RunStatus.SUCCEEDED).exists():
        assert time.monotonic() < deadline, "no aggregation run after the batch settled"
        time.sleep(0.2)
    run = AggregationRun.objects.get(batches=batch, status=RunStatus.SUCCEEDED)
    live = dict(ItemResult.objects.filter(run=run).values_list("item__item_id", "retained"))
    predicted = release_decisions(used_frame(judgments, used), answers=answers, policy=policy)
    assert live == predicted
    assert sum(live.values()) > 0 and not all(live.values())
