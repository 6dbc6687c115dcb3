"""Follow-up work after a judgment; queued on commit, never needed for the judgment to count."""
import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task
def batch_progress_check(*, batch_id: int) -> dict:
    """Log when a batch's queue is complete (every non-gold item at k judgments). Safe to rerun."""
    from .selectors import batch_completion

    completion = batch_completion(batch_id=batch_id)
    if completion["complete"]:
        logger.info("batch %s: every item has its %s judgments", batch_id, completion["overlap"])
    return completion
