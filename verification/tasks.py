"""Follow-up work after a judgment; queued on commit, never needed for the judgment to count."""
import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task
def batch_progress_check(*, batch_id: int) -> dict:
    """When a batch's queue is complete (every non-gold item at k judgments), start its
    aggregation run. Safe to rerun: a run on the same judgments is never started twice."""
    from aggregation.services import batch_maybe_aggregate

    from .selectors import batch_completion

    completion = batch_completion(batch_id=batch_id)
    if completion["complete"]:
        logger.info("batch %s: every item has its %s judgments", batch_id, completion["overlap"])
        run = batch_maybe_aggregate(batch_id=batch_id)
        completion["aggregation_run"] = run.pk if run else None
    return completion
