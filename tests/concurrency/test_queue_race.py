"""24 verifiers, each in its own thread with its own PostgreSQL connection, race on one batch."""
import uuid
from collections import Counter

import pytest

from verification.models import Claim, ClaimStatus, Judgment, QueueSlot
from verification.services import item_claim_next, judgment_submit

from ..verification.factories import open_batch, verifiers
from .threads import run_threads

pytestmark = [pytest.mark.concurrency, pytest.mark.django_db(transaction=True)]

N_VERIFIERS = 24
N_ITEMS = 30
K = 3


def test_concurrent_verifiers_leave_every_item_at_exactly_k_judgments():
    people = verifiers(N_VERIFIERS)
    batch = open_batch(name="race-b01", overlap=K, n_items=N_ITEMS, verifiers=people)
    answered = Counter()

    def work(person):
        def run():
            while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
                key = uuid.uuid4()
                first = judgment_submit(verifier=person, claim_id=claim.pk, choice="B", idempotency_key=key)
                retry = judgment_submit(verifier=person, claim_id=claim.pk, choice="B", idempotency_key=key)
                assert first.created and not retry.created and retry.judgment.pk == first.judgment.pk
                answered[person.pk] += 1
        return run

    run_threads([work(p) for p in people])

    per_item = Counter(Judgment.objects.filter(batch=batch).values_list("item_id", flat=True))
    assert len(per_item) == N_ITEMS
    assert set(per_item.values()) == {K}  # none lost, none past k
    pairs = list(Judgment.objects.filter(batch=batch).values_list("item_id", "verifier_id"))
    assert len(pairs) == len(set(pairs)) == N_ITEMS * K == sum(answered.values())  # none duplicated
    assert set(QueueSlot.objects.filter(batch=batch).values_list("taken", flat=True)) == {K}
    assert not Claim.objects.filter(batch=batch, status=ClaimStatus.ACTIVE).exists()
    assert len(answered) > 1  # the work really was shared


def test_a_double_click_racing_on_two_connections_stores_one_judgment():
    (person,) = verifiers(1, prefix="dbl")
    batch = open_batch(name="race-b02", overlap=1, n_items=1, verifiers=[person])
    claim = item_claim_next(verifier=person, batch=batch)
    key = uuid.uuid4()
    results = []

    def click():
        results.append(judgment_submit(verifier=person, claim_id=claim.pk, choice="A", idempotency_key=key))

    run_threads([click] * 4, timeout=60)
    assert sum(r.created for r in results) == 1
    assert len({r.judgment.pk for r in results}) == 1
    assert Judgment.objects.filter(batch=batch).count() == 1
