"""Agreement with the consensus per verifier, kept by the aggregation job, equals a rebuild."""
import random
import uuid

import pytest

from aggregation import services as aggregation_services
from aggregation import worker_agreement
from aggregation.models import WorkerAccuracyTotal, WorkerAgreementTotal
from tests.verification.factories import open_batch, verifiers
from verification import services


def _totals():
    agreement = sorted(WorkerAgreementTotal.objects.exclude(judged=0, agreed=0).values_list("verifier_id", "task", "week", "judged", "agreed"))
    accuracy = {v: (round(w, 6), n) for v, w, n in WorkerAccuracyTotal.objects.exclude(judgments=0).values_list("verifier_id", "weighted", "judgments")}
    return agreement, accuracy


def _run(batch_ids):
    run = aggregation_services.aggregation_run_create(batch_ids=batch_ids, trigger="manual", dispatch=False)
    aggregation_services.aggregation_run_execute(run_id=run.pk)


@pytest.mark.django_db
def test_totals_kept_by_runs_equal_the_rebuilt_ones():
    rng = random.Random(7)
    people = verifiers(4)
    batches = [open_batch(name=f"wa-b{n}", overlap=3, n_items=5, verifiers=people) for n in range(2)]

    def answer(times):
        for _ in range(times):
            verifier, batch = rng.choice(people), rng.choice(batches)
            claim = services.item_claim_next(verifier=verifier, batch=batch)
            if claim is not None:
                services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice=rng.choice("ABCD"), idempotency_key=uuid.uuid4())

    answer(20)
    _run([b.pk for b in batches])
    answer(15)
    _run([batches[0].pk])
    _run([b.pk for b in batches])
    answer(5)
    _run([batches[1].pk])
    maintained = _totals()
    assert maintained[0] and maintained[1]
    worker_agreement.worker_agreement_rebuild()
    assert _totals() == maintained


@pytest.mark.django_db
def test_a_run_that_finishes_after_a_later_one_does_not_take_its_place():
    people = verifiers(3)
    batch = open_batch(name="wa-order", overlap=3, n_items=4, verifiers=people)
    for verifier in people:
        while (claim := services.item_claim_next(verifier=verifier, batch=batch)) is not None:
            services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    older = aggregation_services.aggregation_run_create(batch_ids=[batch.pk], trigger="manual", dispatch=False)
    newer = aggregation_services.aggregation_run_create(batch_ids=[batch.pk], trigger="manual", dispatch=False)
    aggregation_services.aggregation_run_execute(run_id=newer.pk)
    aggregation_services.aggregation_run_execute(run_id=older.pk)
    maintained = _totals()
    assert sum(row[3] for row in maintained[0]) == 12  # counted once, from the newer run
    worker_agreement.worker_agreement_rebuild()
    assert _totals() == maintained
