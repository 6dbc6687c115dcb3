"""Background jobs: one way to queue them, one heartbeat, one sweep.

Aggregation runs, release builds, model-run scoring, human baselines and similarity runs
are rows with a status, worked on by Celery. Two faults used to strand them:

- *The broker is down when the job is asked for.* A job is created WAITING and handed to
  the broker after commit (WAITING → PENDING). If Redis cannot take it, the row simply
  stays WAITING: the request still answers (202), the version name or run name is kept,
  and the sweep hands the job over once Redis is back.
- *The worker dies with the job* (SIGKILL of its process group, OOM, a lost host). Celery
  gives an acks_late task back only after the visibility timeout (30 min). Meanwhile a
  worker holding a job touches its `heartbeat_at` every DIALTOM_JOB_HEARTBEAT_SECONDS from
  a thread; the sweep marks a job whose heartbeat is older than DIALTOM_JOB_STALE_SECONDS
  FAILED ("worker lost"), and queues it again, up to DIALTOM_JOB_MAX_ATTEMPTS starts.

Every job's handler is safe to run twice, so a duplicate hand-over (the sweep and the
on-commit send at the same moment, or Celery's own late redelivery) costs work, not data.

The sweep is `jobs_sweep()`: Celery beat's `jobs-sweep` (every DIALTOM_JOB_SWEEP_SECONDS)
and `manage.py jobs_sweep`.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from celery import shared_task
from django.apps import apps
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

WAITING = "waiting"
PENDING = "pending"
FAILED = "failed"


class JobFields(models.Model):
    """The fields every job row carries besides its own status."""

    attempts = models.PositiveIntegerField(default=0, help_text="how many times a worker started it")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="last sign of life of the worker holding it")

    class Meta:
        abstract = True


@dataclass(frozen=True)
class JobKind:
    """One kind of job: its model, how to hand one to Celery, its status while a worker holds it."""

    name: str
    model: str  # "app_label.Model"
    running: str  # the status while a worker holds it
    task: str = ""  # the dotted path of the Celery task, applied with {kwarg: pk} ...
    kwarg: str = "run_id"
    publish: str = ""  # ... or of a function(pk) that queues it (raises on failure)

    @property
    def model_class(self) -> type[models.Model]:
        return apps.get_model(self.model)

    def send(self, pk: int) -> None:
        if self.publish:
            import_string(self.publish)(pk)
        else:  # apply_async, not send_task: it honours CELERY_TASK_ALWAYS_EAGER (the demo)
            import_string(self.task).apply_async(kwargs={self.kwarg: pk}, retry=False)


KINDS: dict[str, JobKind] = {
    kind.name: kind
    for kind in (
        JobKind("aggregation", "aggregation.AggregationRun", running="running", publish="aggregation.services.aggregation_run_publish"),
        JobKind("release", "releases.Release", running="building", task="releases.tasks.release_build_task", kwarg="release_id"),
        JobKind("model_run", "scoring.ModelRun", running="running", task="scoring.tasks.model_run_score_task"),
        JobKind("baseline", "scoring.BaselineRun", running="running", task="scoring.tasks.baseline_run_score_task"),
        JobKind("similarity", "references.SimilarityRun", running="running", task="references.tasks.similarity_run_compute_task"),
    )
}


def task_named(name: str):
    """The Celery task at the dotted path `name`. A service queues a follow-up task by its
    name, so it never imports a tasks module (tasks import services), nor an app above its own."""
    return import_string(name)


# When the broker is down, a failed publish costs seconds (the Redis client retries); after
# one failure, follow-ups are not even attempted for this long, so answers stay fast.
BROKER_BACKOFF_SECONDS = 30.0
_broker_down_until = 0.0


def follow_up_on_commit(task: str, **kwargs) -> None:
    """Queue a follow-up task, named by its dotted path (`task_named`), once the transaction
    commits; a broker outage never fails the write. For work that is safe to lose: its next
    occasion, or the work that needs it, does it again (a batch's progress check, the release
    records an import leaves to make)."""

    def send():
        global _broker_down_until
        if time.monotonic() < _broker_down_until:
            logger.warning("not queueing %s(%s): broker marked unavailable", task, kwargs)
            return
        follow_up = task_named(task)  # a wrong name fails loudly, never taken for a broker outage
        try:
            follow_up.apply_async(kwargs=kwargs, retry=False)
        except Exception:  # noqa: BLE001 — the write is stored; the follow-up is best effort
            _broker_down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
            logger.warning("could not queue %s(%s): broker unavailable", task, kwargs, exc_info=True)

    transaction.on_commit(send)


def kind_for(model: type[models.Model]) -> JobKind:
    label = model._meta.label
    return next(kind for kind in KINDS.values() if kind.model == label)


def broker_reachable() -> bool:
    """One quick connection attempt, so an unreachable Redis costs milliseconds, not the
    client's seconds of reconnect retries."""
    from celery import current_app

    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
        return True
    except Exception:  # noqa: BLE001 - any failure to connect means: do not try to publish
        return False


def job_send(kind: JobKind, pk: int) -> bool:
    """Hand a WAITING job to the broker (→ PENDING). Never raises: on failure it stays WAITING."""
    if not broker_reachable():
        logger.warning("%s %s waits: broker unavailable", kind.name, pk)
        return False
    try:
        kind.send(pk)
    except Exception:  # noqa: BLE001 - kombu/redis errors, Celery's RuntimeError when the result backend is gone
        logger.warning("%s %s waits: broker unavailable", kind.name, pk, exc_info=True)
        return False
    kind.model_class.objects.filter(pk=pk, status=WAITING).update(status=PENDING)
    return True


def job_queue_on_commit(model: type[models.Model], pk: int) -> None:
    """Queue a job (created WAITING) once the transaction commits; never fails the caller."""
    kind = kind_for(model)
    transaction.on_commit(lambda: job_send(kind, pk))


def job_start(model: type[models.Model], pk: int, *, running: str, from_statuses) -> bool:
    """Move a job to its running status (one more attempt, a first heartbeat); False if it was not in `from_statuses`."""
    return bool(
        model.objects.filter(pk=pk, status__in=list(from_statuses)).update(
            status=running, attempts=F("attempts") + 1, heartbeat_at=timezone.now()
        )
    )


@contextmanager
def job_heartbeat(model: type[models.Model], pk: int) -> Iterator[None]:
    """Touch the job's `heartbeat_at` now, every DIALTOM_JOB_HEARTBEAT_SECONDS while the block
    runs (from a thread with its own connection), and once more at the end.

    Inside an open transaction (tests, or a caller's atomic block) the row may not be
    committed or may be locked by that transaction: no thread then, only the beats in line;
    nor on SQLite (the demo, tasks in process), where a second writer would wait for locks.
    """
    def touch() -> None:
        model.objects.filter(pk=pk).update(heartbeat_at=timezone.now())

    touch()
    thread = stop = None
    if not connection.in_atomic_block and connection.vendor == "postgresql":  # SQLite (the demo): one writer at a time
        stop = threading.Event()
        interval = float(settings.DIALTOM_JOB_HEARTBEAT_SECONDS)

        def beat() -> None:
            try:
                while not stop.wait(interval):
                    touch()
            except Exception:  # noqa: BLE001 - a missed beat is only a missed beat
                logger.warning("heartbeat of %s %s failed", model._meta.label, pk, exc_info=True)
            finally:
                connection.close()

        thread = threading.Thread(target=beat, name=f"heartbeat-{model._meta.label}-{pk}", daemon=True)
        thread.start()
    try:
        yield
    finally:
        if thread is not None:
            stop.set()
            thread.join(timeout=30)
        touch()


def _stale_cutoff():
    return timezone.now() - timedelta(seconds=float(settings.DIALTOM_JOB_STALE_SECONDS))


def jobs_lost(kind: JobKind) -> list[int]:
    """Mark FAILED every job of `kind` held by a worker that stopped beating; their ids.

    Rows locked by a live transaction are skipped (a worker holding the row is alive).
    """
    model = kind.model_class
    cutoff = _stale_cutoff()
    with transaction.atomic():
        stale = list(
            model.objects.select_for_update(skip_locked=True)
            .filter(status=kind.running)
            .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff))
            .order_by("pk")
            .values_list("pk", "heartbeat_at", "attempts")
        )
        for pk, heartbeat_at, attempts in stale:
            since = heartbeat_at.isoformat(timespec="seconds") if heartbeat_at else "its start"
            model.objects.filter(pk=pk).update(
                status=FAILED, error=f"worker lost (attempt {attempts}): no heartbeat since {since}"
            )
    for pk, *_ in stale:
        logger.error("%s %s: worker lost, marked failed", kind.name, pk)
    return [pk for pk, *_ in stale]


def jobs_sweep(*, send: Callable[[JobKind, int], bool] = job_send) -> dict[str, dict[str, list[int]]]:
    """Mark jobs of dead workers failed and queue them again (up to DIALTOM_JOB_MAX_ATTEMPTS
    starts); hand every WAITING job to the broker. Returns, per kind, the ids it `lost`,
    `retried` and `sent`."""
    max_attempts = int(settings.DIALTOM_JOB_MAX_ATTEMPTS)
    report = {}
    for kind in KINDS.values():
        model = kind.model_class
        lost = jobs_lost(kind)
        retried = list(
            model.objects.filter(pk__in=lost, status=FAILED, attempts__lt=max_attempts).order_by("pk").values_list("pk", flat=True)
        )
        model.objects.filter(pk__in=retried, status=FAILED).update(status=WAITING)
        waiting = list(model.objects.filter(status=WAITING).order_by("pk").values_list("pk", flat=True))
        sent = [pk for pk in waiting if send(kind, pk)]
        report[kind.name] = {"lost": lost, "retried": retried, "sent": sent, "waiting": [pk for pk in waiting if pk not in sent]}
    return report


@shared_task
def jobs_sweep_task() -> dict:
    """Celery beat, every DIALTOM_JOB_SWEEP_SECONDS: `jobs_sweep()`."""
    return jobs_sweep()
