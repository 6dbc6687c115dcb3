"""Staff actions of the dashboard, as thin calls onto the services of the apps that own them:
batches (verification.services), exclusion (accounts.services), aggregation runs
(aggregation.services, imported lazily so the dashboard works without that app).

Every refusal comes back as ActionError with a message for the page.
"""
from accounts.models import User
from accounts.services import verifier_exclusion_set
from annotation.models import Batch
from verification import services as verification


class ActionError(Exception):
    """A refused or unavailable action; the message is shown to staff."""


def batch_pause(*, batch: Batch, by: User) -> Batch:
    try:
        return verification.batch_pause(name=batch.name)
    except verification.VerificationError as exc:
        raise ActionError(exc.message) from exc


def batch_close(*, batch: Batch, by: User) -> Batch:
    try:
        return verification.batch_close(name=batch.name)
    except verification.VerificationError as exc:
        raise ActionError(exc.message) from exc


def batch_reopen(*, batch: Batch, by: User) -> Batch:
    try:
        return verification.batch_open(name=batch.name)[0]
    except verification.VerificationError as exc:
        raise ActionError(exc.message) from exc


def verifier_exclude(*, verifier: User, reason: str, by: User, excluded: bool = True) -> User:
    return verifier_exclusion_set(user=verifier, excluded=excluded, reason=reason)


def aggregation_batches() -> list[int]:
    """Ids of the batches an aggregation run can cover (those that hold judgments)."""
    try:
        from aggregation import selectors as aggregation_selectors  # noqa: PLC0415 - optional app
    except ImportError:
        return []
    return list(aggregation_selectors.batch_ids_audited())


def aggregation_start(*, by: User, batch_ids=None):
    """Starts one aggregation run over the batches chosen (by default every batch that holds
    judgments; a Celery chord, queued after commit). Raises ActionError with a clear message
    when it cannot."""
    try:
        from aggregation import selectors as aggregation_selectors  # noqa: PLC0415 - optional app
        from aggregation import services as aggregation  # noqa: PLC0415
    except ImportError as exc:
        raise ActionError("Aggregation is not available on this installation.") from exc
    audited = list(aggregation_selectors.batch_ids_audited())
    if not audited:
        raise ActionError("No batch has judgments yet: nothing to aggregate.")
    if batch_ids is None:
        batch_ids = audited
    else:
        batch_ids = [pk for pk in audited if pk in set(batch_ids)]
        if not batch_ids:
            raise ActionError("Choose at least one batch that holds judgments.")
    try:
        return aggregation.aggregation_run_create(batch_ids=batch_ids, trigger="dashboard", started_by=by)
    except aggregation.AggregationError as exc:
        raise ActionError(f"Aggregation could not start: {exc}") from exc
