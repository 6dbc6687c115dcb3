"""In-process tasks (`CELERY_TASK_ALWAYS_EAGER`, the demo's default without REDIS_URL) run every job.

A complete batch's follow-up task starts its aggregation run; on a worker that is a chord,
whose callback waits on the group. Inside an eager task Celery refuses that wait
(`RuntimeError: Never call result.get() within a task!`), which used to leave the run
WAITING for a sweep that never comes ("broker unavailable").
"""
from unittest import mock

import pytest
from django.db.models import F

from aggregation.models import AggregationRun, RunStatus
from annotation.models import Batch
from verification.models import QueueSlot


@pytest.fixture
def eager():
    from dialtom_site.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = before


@pytest.fixture
def committed(transactional_db, synthetic_dir):
    """The synthetic set, committed: on_commit callbacks run at once, inside the task that commits (as in the demo)."""
    from aggregation.services import judgments_import

    from . import synthetic

    batches = synthetic.load_items(synthetic_dir)
    judgments_import(path=synthetic_dir / "judgments.csv")
    return batches


def test_a_complete_batch_is_aggregated_in_process(committed, eager):
    from verification.services import batch_queue_sync
    from aggregation.tasks import batch_progress_check

    # Given a batch holding all its judgments (its queue full), tasks in process
    batch = Batch.objects.get(name="batch-001")
    batch_queue_sync(batch=batch)
    QueueSlot.objects.filter(batch=batch).update(taken=F("needed"), answered=F("needed"))

    # When its follow-up check runs (as the answer that fills its last item queues it), in a
    # process where joining a result is refused (inside a task; the flag is process-wide)
    with mock.patch("celery.result.task_join_will_block", return_value=True):
        batch_progress_check.apply_async(kwargs={"batch_id": batch.pk})

    # Then its aggregation run ran here, to the end
    run = AggregationRun.objects.get(batches=batch)
    assert run.status == RunStatus.SUCCEEDED, (run.status, run.error)
    assert run.batches_done == 1 and run.progress == 1.0
