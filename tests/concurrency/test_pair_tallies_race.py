"""Agreement tallies under races: verifiers answering the same items at once (own PostgreSQL
connections) leave the kept pairs equal to a rebuild: no co-judge missed, none counted twice."""
import random
from collections import Counter
import uuid

import pytest

from verification import pair_tallies
from verification.models import ItemAnswers, Judgment, VerifierPairTally, VerifierPairTotal, VerifierSecondsTotal
from verification.services import item_claim_next, judgment_submit

from ..verification.factories import open_batch, verifiers
from .threads import run_threads

pytestmark = [pytest.mark.concurrency, pytest.mark.django_db(transaction=True)]


def _kept():
    return (
        sorted((a.item_id, sorted(a.answers.items())) for a in ItemAnswers.objects.all()),
        sorted(VerifierPairTally.objects.values_list("batch_id", "task", "verifier_a_id", "verifier_b_id", "co_judged", "agreed")),
        sorted(VerifierPairTotal.objects.values_list("task", "verifier_a_id", "verifier_b_id", "co_judged", "agreed")),
        sorted(VerifierSecondsTotal.objects.values_list("task", "verifier_id", "bucket", "judgments")),
    )


def test_racing_answers_keep_the_pairs_equal_to_a_rebuild():
    people = verifiers(8)
    batch = open_batch(name="pt-race", overlap=4, n_items=10, verifiers=people)

    def work(person, seed):
        rng = random.Random(seed)

        def run():
            while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
                judgment_submit(verifier=person, claim_id=claim.pk, choice=rng.choice("ABCD"), idempotency_key=uuid.uuid4())
        return run

    run_threads([work(p, n) for n, p in enumerate(people)])
    kept = _kept()
    per_item = Counter(Judgment.objects.filter(batch=batch).values_list("item_id", flat=True))
    assert sum(per_item.values()) >= 20
    assert sum(row[3] for row in kept[2]) == sum(n * (n - 1) // 2 for n in per_item.values())
    pair_tallies.pairs_rebuild()
    assert _kept() == kept
