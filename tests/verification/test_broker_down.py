"""A submission never depends on Redis or Celery: with the broker unreachable it is stored, once."""
import logging
import uuid

import pytest

from dialtom_site import jobs
from dialtom_site.celery import app
from verification.models import Judgment
from verification.services import item_claim_next, judgment_submit

from tests.factories import UserFactory

from .factories import open_batch

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit callbacks must really run


@pytest.fixture
def broken_broker():
    saved = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens there
    app._pool = None
    app.amqp._producer_pool = None
    yield
    jobs._broker_down_until = 0.0
    app.conf.broker_url = saved
    app._pool = None
    app.amqp._producer_pool = None


def test_submission_goes_through_with_the_broker_down(verifier, broken_broker, caplog):
    batch = open_batch(verifiers=[verifier], overlap=1)  # every answer fills its item: a follow-up is due
    claim = item_claim_next(verifier=verifier, batch=batch)
    key = uuid.uuid4()
    with caplog.at_level(logging.WARNING, logger="dialtom_site.jobs"):
        first = judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=key)
        retry = judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=key)
        other = item_claim_next(verifier=verifier, batch=batch)
        second = judgment_submit(verifier=verifier, claim_id=other.pk, choice="B", idempotency_key=uuid.uuid4())
    assert first.created and not retry.created and second.created
    assert Judgment.objects.filter(verifier=verifier).count() == 2
    assert "broker unavailable" in caplog.text


def test_the_follow_up_task_runs_on_a_real_worker(verifier, celery_worker):
    from aggregation.tasks import batch_progress_check

    batch = open_batch(overlap=1, n_items=1, verifiers=[verifier])
    claim = item_claim_next(verifier=verifier, batch=batch)
    judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    result = batch_progress_check.apply_async(kwargs={"batch_id": batch.pk})
    assert result.get(timeout=30)["complete"] is True


def test_the_last_judgment_of_a_batch_starts_its_aggregation(celery_worker):
    """issue 5: a run starts automatically when a batch reaches its judgments."""
    import time

    from aggregation.models import AggregationRun, RunStatus

    people = UserFactory.create_batch(2)
    batch = open_batch(overlap=2, n_items=2, verifiers=people)
    for person in people:
        while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
            judgment_submit(verifier=person, claim_id=claim.pk, choice="C", idempotency_key=uuid.uuid4())

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = AggregationRun.objects.filter(batches=batch, trigger="auto").first()
        if run is not None and run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            break
        time.sleep(0.5)
    assert run is not None, "no automatic aggregation run was started"
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert AggregationRun.objects.filter(batches=batch, trigger="auto").count() == 1
    assert run.item_results.count() == 2


def test_a_batch_completed_while_the_broker_was_down_is_aggregated_by_the_sweep(celery_worker, monkeypatch):
    """The last judgment's trigger is lost while Redis is down; the beat sweep starts the run later, once."""
    import time

    from aggregation.models import AggregationRun, RunStatus
    from aggregation.tasks import aggregate_due_batches

    people = UserFactory.create_batch(2)
    batch = open_batch(overlap=2, n_items=2, verifiers=people)
    monkeypatch.setattr(jobs, "_broker_down_until", time.monotonic() + 3600)  # as after a failed send
    for person in people:
        while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
            judgment_submit(verifier=person, claim_id=claim.pk, choice="C", idempotency_key=uuid.uuid4())
    time.sleep(1)
    assert not AggregationRun.objects.filter(batches=batch).exists()

    monkeypatch.setattr(jobs, "_broker_down_until", 0.0)  # Redis is back
    started = aggregate_due_batches.apply_async().get(timeout=30)
    assert len(started) == 1
    run = AggregationRun.objects.get(pk=started[0])
    deadline = time.monotonic() + 60
    while run.status not in (RunStatus.SUCCEEDED, RunStatus.FAILED) and time.monotonic() < deadline:
        time.sleep(0.3)
        run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert list(run.batches.all()) == [batch] and run.item_results.count() == 2
    # Nothing new since: the next sweep starts nothing.
    assert aggregate_due_batches.apply_async().get(timeout=30) == []


def test_beat_schedules_the_sweep():
    from dialtom_site.celery import app

    entry = app.conf.beat_schedule["aggregate-due-batches"]
    assert entry["task"] in app.tasks and entry["schedule"] == 300
