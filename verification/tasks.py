"""Follow-up work after a judgment; queued on commit, never needed for the judgment to count."""
import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task
def batch_progress_check(*, batch_id: int) -> dict:
    """When a batch's queue is complete (every non-gold item at k judgments), start its
    aggregation run. Safe to rerun: a run on the same judgments is never started twice."""
    from aggregation.services import batch_maybe_aggregate

    from aggregation.adaptive import overlap_refresh_request
    from .models import AdaptiveOverlap
    from .selectors import batch_completion

    adaptive = AdaptiveOverlap.objects.filter(batch_id=batch_id, settled=False).first()
    if adaptive is not None:  # adaptive overlap: refit (throttled) before anything is complete
        overlap_refresh_request(batch_id=batch_id, refresh_seconds=float(adaptive.policy.get("refresh_seconds", 10.0)))
    completion = batch_completion(batch_id=batch_id)
    if completion["complete"]:
        logger.info("batch %s: every item has its %s judgments", batch_id, completion["overlap"])
        run = batch_maybe_aggregate(batch_id=batch_id)
        completion["aggregation_run"] = run.pk if run else None
    return completion


@shared_task
def batch_overlap_refresh_task(*, batch_id: int) -> dict:
    """Adaptive overlap: refit a settled batch and ask one more judgment where the model is unsure."""
    from aggregation.adaptive import batch_overlap_refresh

    return batch_overlap_refresh(batch_id=batch_id)


@shared_task
def overlap_refresh_due() -> list[dict]:
    """Celery beat: refresh every open adaptive batch that is not settled (a lost request is caught here)."""
    from aggregation.adaptive import overlap_refresh_due as refresh_due

    return refresh_due()
