"""Celery doors onto the scoring services: ids in, re-fetched, safe to run twice."""
from celery import shared_task

from . import services


@shared_task
def model_run_score_task(*, run_id: int) -> str:
    run = services.model_run_score(run_id=run_id)
    return run.status


@shared_task
def baseline_run_score_task(*, run_id: int) -> str:
    run = services.baseline_run_score(run_id=run_id)
    return run.status
