import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import BatchStatus, Item
from tests.factories import StaffFactory
from verification.models import Claim, ClaimStatus, Judgment, QueueSlot
from verification.services import (
    VerificationError,
    batch_close,
    batch_open,
    batch_pause,
    choice_to_label,
    claim_restore,
    claim_skip,
    claims_expire,
    display_order_for,
    item_claim_next,
    judgment_change,
    judgment_submit,
)

from verification.selectors import queue_progress_for

from .factories import open_batch, verifiers

pytestmark = pytest.mark.django_db


def submit(verifier, claim, choice="A", key=None, **kw):
    return judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=key or uuid.uuid4(), **kw)


def test_each_item_gets_exactly_k_judgments_and_never_twice_from_one_verifier():
    people = verifiers(4)
    batch = open_batch(overlap=3, n_items=2, verifiers=people)
    seen = {p.pk: set() for p in people}
    for _ in range(3):
        for person in people:
            claim = item_claim_next(verifier=person, batch=batch)
            if claim is None:
                continue
            assert claim.item_id not in seen[person.pk]
            seen[person.pk].add(claim.item_id)
            submit(person, claim)
    for slot in QueueSlot.objects.filter(batch=batch):
        assert slot.taken == 3
        assert Judgment.objects.filter(item_id=slot.item_id).count() == 3
    assert all(item_claim_next(verifier=p, batch=batch) is None for p in people)


def test_the_live_claim_is_handed_back_until_answered():
    (v,) = verifiers(1)
    batch = open_batch(verifiers=[v])
    first = item_claim_next(verifier=v, batch=batch)
    assert item_claim_next(verifier=v, batch=batch).pk == first.pk
    submit(v, first)
    assert item_claim_next(verifier=v, batch=batch).item_id != first.item_id


def test_display_order_is_seeded_per_verifier_and_item_and_answer_maps_back():
    a, b = verifiers(2)
    batch = open_batch(verifiers=[a, b], n_items=6)
    claim = item_claim_next(verifier=a, batch=batch)
    assert claim.display_order == display_order_for(verifier_id=a.pk, item_pk=claim.item_id)
    assert sorted(claim.display_order) == list("ABCD")
    orders = {display_order_for(verifier_id=a.pk, item_pk=i) for i in range(1, 40)}
    assert len(orders) > 5  # really shuffled
    shown = "ABCD"[claim.display_order.index("C")]  # where the original C is displayed
    result = submit(a, claim, choice=shown, implausible=["ABCD"[claim.display_order.index("A")]])
    assert result.judgment.label == "C" and result.judgment.displayed_label == shown
    assert result.judgment.implausible == ["A"]
    retrospective, prospective = Item(task="retrospective", variant="hard"), Item(task="prospective", variant="hard")
    assert choice_to_label(display_order="DCBA", item=retrospective, choice="none") == ("NONE", "NONE")
    with pytest.raises(VerificationError):
        choice_to_label(display_order="DCBA", item=retrospective, choice="NOTA")
    # every prospective item offers NOTA, not only the counterfactual ones whose answer it is
    assert choice_to_label(display_order="DCBA", item=prospective, choice="NOTA") == ("NOTA", "NOTA")


def test_same_key_twice_leaves_one_judgment_and_a_second_answer_to_an_answered_claim_too():
    (v,) = verifiers(1)
    batch = open_batch(verifiers=[v])
    claim = item_claim_next(verifier=v, batch=batch)
    key = uuid.uuid4()
    first = submit(v, claim, "B", key)
    again = submit(v, claim, "B", key)
    other_key = submit(v, claim, "D")
    assert first.created and not again.created and not other_key.created
    assert again.judgment.pk == first.judgment.pk == other_key.judgment.pk
    assert Judgment.objects.filter(verifier=v).count() == 1


def test_a_key_of_another_verifier_is_refused():
    a, b = verifiers(2)
    batch = open_batch(verifiers=[a, b])
    key = uuid.uuid4()
    submit(a, item_claim_next(verifier=a, batch=batch), key=key)
    with pytest.raises(VerificationError, match="already used"):
        submit(b, item_claim_next(verifier=b, batch=batch), key=key)


def test_expired_lease_returns_the_item_to_the_pool():
    a, b = verifiers(2)
    batch = open_batch(overlap=1, n_items=1, verifiers=[a, b])
    claim = item_claim_next(verifier=a, batch=batch)
    assert item_claim_next(verifier=b, batch=batch) is None  # k=1 and a holds it
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken_by_b = item_claim_next(verifier=b, batch=batch)
    assert taken_by_b is not None and taken_by_b.item_id == claim.item_id
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.EXPIRED
    # a answers late: the item is complete, the answer is refused with a reason
    with pytest.raises(VerificationError, match="expired"):
        submit(a, claim)


def test_a_late_answer_counts_when_the_item_still_needs_it():
    (a,) = verifiers(1)
    batch = open_batch(overlap=2, n_items=1, verifiers=[a])
    claim = item_claim_next(verifier=a, batch=batch)
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert claims_expire(batch=batch) == 1
    assert QueueSlot.objects.get(pk=claim.item_id).taken == 0
    assert submit(a, claim).created
    assert QueueSlot.objects.get(pk=claim.item_id).taken == 1


def test_skip_gives_the_item_back_and_it_is_not_offered_again():
    (a,) = verifiers(1)
    batch = open_batch(n_items=2, verifiers=[a])
    first = item_claim_next(verifier=a, batch=batch)
    with pytest.raises(VerificationError, match="say why"):
        claim_skip(verifier=a, claim_id=first.pk, reason="")
    claim_skip(verifier=a, claim_id=first.pk, reason="unclear")
    assert QueueSlot.objects.get(pk=first.item_id).taken == 0
    second = item_claim_next(verifier=a, batch=batch)
    assert second.item_id != first.item_id
    submit(a, second)
    assert item_claim_next(verifier=a, batch=batch) is None


def test_a_skipped_item_stays_in_the_total_and_can_be_taken_back():
    a, b = verifiers(2)
    batch = open_batch(n_items=2, verifiers=[a, b], overlap=1)
    first = item_claim_next(verifier=a, batch=batch)
    claim_skip(verifier=a, claim_id=first.pk, reason="dialogue")
    progress = queue_progress_for(verifier=a, batch=batch)
    assert (progress["done"], progress["skipped"], progress["assigned"]) == (0, 1, 2)
    second = item_claim_next(verifier=a, batch=batch)
    restored = claim_restore(verifier=a, claim_id=first.pk)
    assert restored.status == "active" and restored.skip_reason == ""
    assert QueueSlot.objects.get(pk=first.item_id).taken == 1
    assert item_claim_next(verifier=a, batch=batch).pk == second.pk  # the item in hand first
    submit(a, second)
    assert item_claim_next(verifier=a, batch=batch).pk == first.pk
    assert queue_progress_for(verifier=a, batch=batch)["assigned"] == 2


def test_a_skipped_item_that_others_completed_cannot_be_taken_back():
    a, b = verifiers(2)
    batch = open_batch(n_items=1, verifiers=[a, b], overlap=1)
    first = item_claim_next(verifier=a, batch=batch)
    claim_skip(verifier=a, claim_id=first.pk, reason="unsure")
    submit(b, item_claim_next(verifier=b, batch=batch))
    with pytest.raises(VerificationError, match="completed"):
        claim_restore(verifier=a, claim_id=first.pk)


def test_change_an_answer_until_the_batch_closes():
    (a,) = verifiers(1)
    batch = open_batch(verifiers=[a])
    result = submit(a, item_claim_next(verifier=a, batch=batch), "A")
    changed = judgment_change(verifier=a, judgment_id=result.judgment.pk, choice="MULTIPLE", comment="two fit")
    assert changed.label == "MULTIPLE" and changed.comment == "two fit"
    batch_close(name=batch.name)
    with pytest.raises(VerificationError, match="closed"):
        judgment_change(verifier=a, judgment_id=result.judgment.pk, choice="A")


def test_pause_stops_new_claims_but_accepts_answers_to_held_ones():
    a, b = verifiers(2)
    batch = open_batch(verifiers=[a, b])
    held = item_claim_next(verifier=a, batch=batch)
    batch_pause(name=batch.name)
    batch.refresh_from_db()
    with pytest.raises(VerificationError, match="paused"):
        item_claim_next(verifier=b, batch=batch)
    assert submit(a, held).created


def test_close_releases_live_claims():
    (a,) = verifiers(1)
    batch = open_batch(verifiers=[a])
    held = item_claim_next(verifier=a, batch=batch)
    batch_close(name=batch.name)
    held.refresh_from_db()
    assert held.status == ClaimStatus.EXPIRED
    assert QueueSlot.objects.get(pk=held.item_id).taken == 0


def test_only_verifiers_of_the_batch_pools_work_it():
    (a,) = verifiers(1)
    batch = open_batch(verifiers=[])
    with pytest.raises(VerificationError, match="not open to you"):
        item_claim_next(verifier=a, batch=batch)
    with pytest.raises(VerificationError, match="only verifiers"):
        item_claim_next(verifier=StaffFactory(), batch=batch)


def test_batch_open_creates_sets_overlap_and_pools():
    from accounts.models import Pool

    Pool.objects.create(name="verifiers")
    batch, created = batch_open(name="esc-b02", overlap=5, pools=["verifiers"], gold_rate=0.1)
    assert created and batch.overlap == 5 and batch.status == BatchStatus.OPEN
    assert list(batch.pools.values_list("name", flat=True)) == ["verifiers"]
    with pytest.raises(VerificationError, match="no pool"):
        batch_open(name="esc-b02", pools=["nobody"])


def test_the_database_refuses_a_second_judgment_and_a_slot_past_k():
    (a,) = verifiers(1)
    batch = open_batch(overlap=1, n_items=1, verifiers=[a])
    claim = item_claim_next(verifier=a, batch=batch)
    submit(a, claim)
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(item_id=claim.item_id, verifier=a, batch=batch, label="B")
    with pytest.raises(IntegrityError), transaction.atomic():
        QueueSlot.objects.filter(pk=claim.item_id).update(taken=2)


def test_batch_services_also_take_the_batch_object_for_other_doors():
    from verification.services import batch_reopen

    batch = open_batch()
    assert batch_pause(batch=batch).status == BatchStatus.PAUSED
    assert batch_close(batch=batch).status == BatchStatus.CLOSED
    assert batch_reopen(batch=batch).status == BatchStatus.OPEN
