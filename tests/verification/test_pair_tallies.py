"""The agreement summaries (verification/pair_tallies.py) stay equal to a rebuild from the judgments."""
import random
import uuid

import pytest

from verification import pair_tallies, services
from verification.models import (
    ItemAnswers,
    Judgment,
    VerifierPairTally,
    VerifierPairTotal,
    VerifierSecondsTally,
    VerifierSecondsTotal,
)

from .factories import open_batch, verifiers

CHOICES = ["A", "B", "C", "D", "NONE"]


def _snapshot():
    return {
        "answers": {a.item_id: a.answers for a in ItemAnswers.objects.all()},
        "tally": sorted(VerifierPairTally.objects.values_list("batch_id", "task", "verifier_a_id", "verifier_b_id", "co_judged", "agreed")),
        "total": sorted(VerifierPairTotal.objects.values_list("task", "verifier_a_id", "verifier_b_id", "co_judged", "agreed")),
        "seconds": sorted(VerifierSecondsTally.objects.filter(judgments__gt=0).values_list("batch_id", "task", "verifier_id", "bucket", "judgments")),
        "seconds_total": sorted(VerifierSecondsTotal.objects.filter(judgments__gt=0).values_list("task", "verifier_id", "bucket", "judgments")),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2])
def test_maintained_summaries_equal_the_rebuilt_ones_after_a_random_history(seed):
    rng = random.Random(seed)
    people = verifiers(5)
    batches = [open_batch(name=f"pt-b{n}", overlap=3, n_items=6, n_prospective=2, verifiers=people) for n in range(2)]
    for _ in range(60):
        verifier, batch = rng.choice(people), rng.choice(batches)
        claim = services.item_claim_next(verifier=verifier, batch=batch)
        if claim is None:
            continue
        choice = rng.choice(CHOICES)
        if rng.random() < 0.3:  # step by step, as on SQLite or after a lapsed lease
            services._judgment_submit_checked(verifier=verifier, claim_id=claim.pk, choice=choice, key=uuid.uuid4(),
                                              marks=[], comment="", source="form")
        else:
            services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=uuid.uuid4())
        if rng.random() < 0.2:
            mine = list(Judgment.objects.filter(verifier=verifier))
            if mine:
                j = rng.choice(mine)
                services.judgment_change(verifier=verifier, judgment_id=j.pk, choice=rng.choice(CHOICES))
        if rng.random() < 0.05:
            item = rng.choice(list(batch.items.all()))
            services.items_gold_set(item_ids=[item.item_id], is_gold=not item.is_gold)
    assert Judgment.objects.count() > 20
    maintained = _snapshot()
    assert maintained["tally"], "no pair was co-judged"
    pair_tallies.pairs_rebuild()
    assert _snapshot() == maintained


@pytest.mark.django_db
def test_the_answer_statement_counts_a_pair_once_and_its_agreement():
    a, b = verifiers(2)
    batch = open_batch(name="pt-two", overlap=2, n_items=1, verifiers=[a, b])
    for verifier, choice in ((a, "A"), (b, "A")):
        claim = services.item_claim_next(verifier=verifier, batch=batch)
        services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=uuid.uuid4())
    tally = VerifierPairTally.objects.get()
    assert (tally.verifier_a_id, tally.verifier_b_id, tally.co_judged) == (min(a.pk, b.pk), max(a.pk, b.pk), 1)
    judgment = Judgment.objects.get(verifier=a)
    expected = int(judgment.label == Judgment.objects.get(verifier=b).label)
    assert tally.agreed == expected
    assert VerifierPairTotal.objects.get().co_judged == 1
    assert sum(VerifierSecondsTotal.objects.values_list("judgments", flat=True)) == 2


def test_seconds_buckets_are_the_same_in_python_and_in_their_sql():
    values = [None, 0, 0.4, 1.999, 119.9, 120, 124.9, 125, 599.99, 600, 659, 660, 3599, 3600, 10_000]
    assert [pair_tallies.seconds_bucket(v) for v in values] == [-1, 0, 0, 1, 119, 120, 120, 125, 595, 600, 600, 660, 3540, 3600, 3600]
    assert pair_tallies.median_of_buckets({-1: 5, 3: 1, 5: 1, 9: 1}) == 5.0
    assert pair_tallies.median_of_buckets({-1: 2}) is None


@pytest.mark.django_db
def test_seconds_bucket_sql_matches_python():
    from django.db import connection

    values = [0, 0.4, 1.999, 119.9, 120, 124.9, 125, 599.99, 600, 659, 660, 3599, 3600, 10_000]
    with connection.cursor() as cursor:
        for v in values:
            cursor.execute("SELECT " + pair_tallies.seconds_bucket_sql("x") + " FROM (SELECT %s::float8 AS x) t", [v])
            assert cursor.fetchone()[0] == pair_tallies.seconds_bucket(v), v
