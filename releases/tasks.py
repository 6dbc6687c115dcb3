from celery import shared_task

from . import services


@shared_task(acks_late=True)
def release_build_task(*, release_id: int) -> dict:
    """Builds a release's files; a ready release is left as it is (safe to run twice)."""
    release = services.release_build(release_id=release_id)
    return {"version": release.version, "status": release.status, "items": release.n_items}


@shared_task(acks_late=True)
def release_records_refresh_task() -> int:
    """The release records of what an import brought, made after it commits (safe to run twice:
    a second run finds them made)."""
    return services.release_records_refresh()
