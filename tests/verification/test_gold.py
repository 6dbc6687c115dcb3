import uuid

import pytest

from accounts.services import verifier_exclusion_set
from tests.factories import ContextFactory, ItemFactory
from verification.models import Claim, QueueSlot
from verification.selectors import gold_accuracy
from verification.services import GOLD_NEEDED, items_gold_set, item_claim_next, judgment_submit

from .factories import open_batch, verifiers

pytestmark = pytest.mark.django_db


def answer(verifier, batch, pick):
    claim = item_claim_next(verifier=verifier, batch=batch)
    shown = "ABCD"[claim.display_order.index(pick(claim))]
    judgment_submit(verifier=verifier, claim_id=claim.pk, choice=shown, idempotency_key=uuid.uuid4())
    return claim


def test_gold_items_are_mixed_in_at_the_batch_rate_and_shown_to_everyone():
    people = verifiers(4)
    batch = open_batch(n_items=8, overlap=1, verifiers=people, gold_rate=0.25)
    golds = [ItemFactory(batch=batch, context=ContextFactory(context_id=f"gold-s{n}-w00"), answer="B") for n in range(2)]
    items_gold_set(item_ids=[g.item_id for g in golds], is_gold=True)
    a = people[0]
    served = [answer(a, batch, lambda c: "A") for _ in range(8)]
    assert sum(c.is_gold for c in served) == 2  # 25 % of 8
    assert QueueSlot.objects.get(pk=golds[0].pk).needed == GOLD_NEEDED
    # another verifier gets the same gold items although a answered them (k does not apply)
    b_claims = [answer(people[1], batch, lambda c: "A") for _ in range(3)]
    assert b_claims[0].is_gold and b_claims[0].item_id in {g.pk for g in golds}
    # the regular items are done at k=1 and gold is only mixed in, never served alone
    assert item_claim_next(verifier=people[1], batch=batch) is None


def test_gold_accuracy_per_verifier_and_exclusion():
    good, bad = verifiers(2)
    batch = open_batch(n_items=0, verifiers=[good, bad], gold_rate=1.0)
    for n in range(2):
        ItemFactory(batch=batch, context=ContextFactory(context_id=f"gold-s{n}-w00"), answer="B", is_gold=True)
    for _ in range(2):
        answer(good, batch, lambda c: "B")
        answer(bad, batch, lambda c: "D")
    rows = {r["verifier"]: r for r in gold_accuracy(batch=batch)}
    assert rows[good.username]["accuracy"] == 1.0 and rows[bad.username]["accuracy"] == 0.0
    assert rows[bad.username]["gold_answered"] == 2
    verifier_exclusion_set(user=bad, excluded=True, reason="failed attention checks")
    bad.refresh_from_db()
    assert bad.excluded_from_aggregation and bad.exclusion_reason == "failed attention checks"
    assert {r["verifier"]: r["excluded"] for r in gold_accuracy(batch=batch)}[bad.username] is True
    verifier_exclusion_set(user=bad, excluded=False)
    bad.refresh_from_db()
    assert not bad.excluded_from_aggregation and bad.exclusion_reason == ""


def test_unmarking_gold_restores_the_overlap():
    (a,) = verifiers(1)
    batch = open_batch(n_items=1, overlap=2, verifiers=[a])
    item = batch.items.get()
    item_claim_next(verifier=a, batch=batch)
    items_gold_set(item_ids=[item.item_id], is_gold=True)
    items_gold_set(item_ids=[item.item_id], is_gold=False)
    slot = QueueSlot.objects.get(pk=item.pk)
    assert (slot.is_gold, slot.needed, slot.taken) == (False, 2, 1)
    assert Claim.objects.count() == 1
