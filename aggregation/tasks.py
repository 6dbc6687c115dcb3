"""Celery doors onto aggregation.services: they take ids, re-fetch, and are safe to run twice."""
import logging

from celery import shared_task

from verification import followups
from verification.selectors import batch_completion

from . import adaptive, services

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


# --- after a judgment: queued by name from verification.services, on commit ---------------


@shared_task
def batch_progress_check(*, batch_id: int) -> dict:
    """When a batch's queue is complete (every non-gold item at k judgments), start its
    aggregation run. Safe to rerun: a run on the same judgments is never started twice."""
    from verification.models import AdaptiveOverlap

    followups.progress_check_started(batch_id=batch_id)  # an item filled from now on queues the next check
    waiting = AdaptiveOverlap.objects.filter(batch_id=batch_id, settled=False).first()
    if waiting is not None:  # adaptive overlap: refit (throttled) before anything is complete
        adaptive.overlap_refresh_request(batch_id=batch_id, refresh_seconds=float(waiting.policy.get("refresh_seconds", 10.0)))
    completion = batch_completion(batch_id=batch_id)
    if completion["complete"]:
        logger.info("batch %s: every item has its %s judgments", batch_id, completion["overlap"])
        run = services.batch_maybe_aggregate(batch_id=batch_id)
        completion["aggregation_run"] = run.pk if run else None
    return completion


@shared_task
def batch_overlap_refresh_task(*, batch_id: int) -> dict:
    """Adaptive overlap: refit a settled batch and ask one more judgment where the model is unsure."""
    return adaptive.batch_overlap_refresh(batch_id=batch_id)


@shared_task
def overlap_refresh_due() -> list[dict]:
    """Celery beat: refresh every open adaptive batch that is not settled (a lost request is caught here)."""
    return adaptive.overlap_refresh_due()
