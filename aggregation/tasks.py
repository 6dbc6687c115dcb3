"""Celery doors onto aggregation.services: they take ids, re-fetch, and are safe to run twice."""
import logging

from celery import shared_task

from . import services

logger = logging.getLogger(__name__)


@shared_task
def ping() -> str:
    """Health check for workers: `celery -A dialtom_site call aggregation.tasks.ping`."""
    return "pong"


@shared_task(acks_late=True)
def aggregate_batch(run_id: int, batch_id: int) -> dict:
    """Fit and write one batch of a run (one member of the run's group)."""
    try:
        return services.batch_aggregate(run_id=run_id, batch_id=batch_id)
    except Exception as exc:
        logger.exception("aggregation run %s failed on batch %s", run_id, batch_id)
        services.aggregation_run_fail(run_id=run_id, error=f"batch {batch_id}: {exc!r}")
        raise


@shared_task(acks_late=True)
def aggregation_run_finalize(run_id: int) -> dict:
    """The chord callback: every batch is written, make the run current and write its summary."""
    try:
        run = services.aggregation_run_finish(run_id=run_id)
    except Exception as exc:
        services.aggregation_run_fail(run_id=run_id, error=f"finish: {exc!r}")
        raise
    return {"run": run.pk, "status": run.status}


@shared_task
def aggregate_due_batches() -> list[int]:
    """Celery beat, every DIALTOM_AGGREGATE_SWEEP_SECONDS: runs for complete batches that have none."""
    return services.batches_aggregate_due()
