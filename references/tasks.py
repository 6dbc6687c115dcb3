"""Celery tasks of the annotation app: thin, take ids, safe to run twice."""
from celery import shared_task


@shared_task
def similarity_run_compute_task(*, run_id: int) -> str:
    """Score an uploaded set of model inferences against the accepted references (BLEU, ROUGE-L)."""
    from .similarity import similarity_run_compute

    return similarity_run_compute(run_id=run_id).status
