"""End to end through a real Celery worker on Redis: group of batch tasks + chord callback."""
import time

import pytest

from aggregation import selectors, services
from aggregation.models import AggregationRun, ItemResult, RunStatus

from . import synthetic


def wait_for(run_id, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = AggregationRun.objects.get(pk=run_id)
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} still {run.status}")


@pytest.mark.celery
def test_group_and_chord_through_real_worker(celery_worker, synthetic_dir, monkeypatch):
    # Given the synthetic set in the database (committed: the worker has its own connection)
    batches = synthetic.load_items(synthetic_dir)
    services.judgments_import(path=synthetic_dir / "judgments.csv")

    # When a run over every batch is queued (one task per batch, a chord callback)
    run = services.aggregation_run_create(batch_ids=list(batches.values()), trigger="test")
    run = wait_for(run.pk)

    # Then it succeeded, wrote every batch and its summary, and matches an in-process run
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.progress == 1.0 and run.batches_done == 3 and run.celery_id
    assert run.counts["item_results"] == 420 and run.counts["judgments"] == 1260
    assert [b["batch"] for b in run.summary["batches"]] == sorted(batches)
    assert run.timings["wall_seconds"] > 0 and run.timings["fit_seconds"] > 0
    sync = services.aggregation_run_execute(
        run_id=services.aggregation_run_create(batch_ids=list(batches.values()), trigger="test", dispatch=False).pk
    )
    labels = lambda r: list(ItemResult.objects.filter(run=r).order_by("item_id").values_list("item_id", "label", "posterior", "retained"))  # noqa: E731
    assert labels(run) == labels(sync)

    # And a run whose batch task fails is FAILED; the chord callback never makes it current
    from aggregation import tasks

    real = services.batch_compute

    def broken(*, batch_id, run_settings):
        if batch_id == batches["batch-002"]:
            raise RuntimeError("boom")
        return real(batch_id=batch_id, run_settings=run_settings)

    monkeypatch.setattr(services, "batch_compute", broken)  # the worker thread shares this module
    failed = wait_for(services.aggregation_run_create(batch_ids=list(batches.values()), trigger="test").pk)
    assert failed.status == RunStatus.FAILED and "boom" in failed.error
    assert set(selectors.current_batch_results().values_list("run_id", flat=True)) == {sync.pk}
    assert tasks.aggregate_batch.name == "aggregation.tasks.aggregate_batch"
