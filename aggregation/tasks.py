from celery import shared_task


@shared_task
def ping() -> str:
    """Health check for workers: `celery -A dialtom_site call aggregation.tasks.ping`."""
    return "pong"
