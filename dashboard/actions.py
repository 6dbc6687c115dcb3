"""Staff actions of the dashboard: pause / close / reopen a batch, exclude a verifier,
start an aggregation run.

The verification app (issue 3) owns batches and exclusions; where `verification.services`
provides `batch_pause`, `batch_close` or `verifier_exclude`, those are called. Otherwise
the minimal versions here do the same write under a row lock. Aggregation (issue 5) is
started through `aggregation.services` / `aggregation.tasks`, imported lazily.
"""
import importlib
import inspect

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from annotation.models import Batch, BatchStatus


class ActionUnavailable(Exception):
    """The app that owns this action does not provide it (yet)."""


def _provided(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _call(func, **kwargs):
    """Calls another app's service with the keyword arguments it accepts."""
    params = inspect.signature(func).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return func(**kwargs)
    return func(**{k: v for k, v in kwargs.items() if k in params})


@transaction.atomic
def _batch_set_status(*, batch_id: int, status: str) -> Batch:
    batch = Batch.objects.select_for_update().get(pk=batch_id)
    batch.status = status
    fields = ["status"]
    if status == BatchStatus.CLOSED and batch.closed_at is None:
        batch.closed_at = timezone.now()
        fields.append("closed_at")
    batch.save(update_fields=fields)
    return batch


def batch_pause(*, batch: Batch, by: User) -> Batch:
    theirs = _provided("verification.services", "batch_pause")
    if theirs:
        return _call(theirs, batch=batch, by=by, user=by, actor=by) or batch
    return _batch_set_status(batch_id=batch.id, status=BatchStatus.PAUSED)


def batch_close(*, batch: Batch, by: User) -> Batch:
    theirs = _provided("verification.services", "batch_close")
    if theirs:
        return _call(theirs, batch=batch, by=by, user=by, actor=by) or batch
    return _batch_set_status(batch_id=batch.id, status=BatchStatus.CLOSED)


def batch_reopen(*, batch: Batch, by: User) -> Batch:
    theirs = _provided("verification.services", "batch_resume") or _provided("verification.services", "batch_reopen")
    if theirs:
        return _call(theirs, batch=batch, by=by, user=by, actor=by) or batch
    return _batch_set_status(batch_id=batch.id, status=BatchStatus.OPEN)


def verifier_exclude(*, verifier: User, reason: str, by: User, excluded: bool = True) -> User:
    theirs = _provided("verification.services", "verifier_exclude")
    if theirs and excluded:
        return _call(theirs, verifier=verifier, reason=reason, by=by, user=by, actor=by) or verifier
    with transaction.atomic():
        person = User.objects.select_for_update().get(pk=verifier.pk)
        person.excluded_from_aggregation = excluded
        person.exclusion_reason = reason if excluded else ""
        person.save(update_fields=["excluded_from_aggregation", "exclusion_reason"])
    return person


AGGREGATION_ENTRY_POINTS = (
    ("aggregation.services", "aggregation_run_start"),
    ("aggregation.services", "aggregation_start"),
    ("aggregation.services", "run_start"),
)


def aggregation_start(*, by: User):
    """Starts an aggregation run of every batch through the aggregation app; raises
    ActionUnavailable with a clear message when that app does not offer it yet."""
    for module, name in AGGREGATION_ENTRY_POINTS:
        func = _provided(module, name)
        if func:
            try:
                return _call(func, started_by=by, user=by, by=by, trigger="dashboard", all_batches=True)
            except TypeError as exc:
                raise ActionUnavailable(f"{module}.{name} could not be called from the dashboard: {exc}") from exc
    try:
        tasks = importlib.import_module("aggregation.tasks")
    except ImportError:
        tasks = None
    for name in ("aggregate_all_task", "aggregation_run_all_task", "aggregate_all"):
        task = getattr(tasks, name, None) if tasks else None
        if task is not None and hasattr(task, "delay_on_commit"):
            transaction.on_commit(lambda t=task: t.delay())
            return None
    raise ActionUnavailable(
        "Aggregation cannot be started from here yet: the aggregation app provides no "
        "aggregation_run_start service. Use `python manage.py aggregate --all` once it exists."
    )
