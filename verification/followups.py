"""The follow-up check a batch gets after its items fill: at most one queued at a time.

An item reaching its k queues `aggregation.tasks.batch_progress_check` for its batch (is the
batch complete? an adaptive refit due?). Under load many items of a batch fill within the
same second, and one check answers for all of them: so an answer queues a check only when
none is waiting for that batch (a cache flag, `cache.add`), and the check clears the flag
as it starts, so an item filled while it runs queues the next one. A check lost with the
flag set (a worker killed, Redis down) holds the batch for at most `PENDING_SECONDS`; the
periodic sweeps (`aggregate_due_batches`, `overlap_refresh_due`) catch it anyway.
"""
from __future__ import annotations

from django.core.cache import cache

PENDING_SECONDS = 30


def _key(batch_id: int) -> str:
    return f"progress-check-queued:{batch_id}"


def progress_check_wanted(*, batch_id: int) -> bool:
    """True for the first filled item since the batch's last check started: queue one."""
    try:
        return cache.add(_key(batch_id), 1, timeout=PENDING_SECONDS)
    except Exception:  # noqa: BLE001 — without the cache, queue every check as before
        return True


def progress_check_started(*, batch_id: int) -> None:
    """The check runs: items filled from now on queue the next one."""
    try:
        cache.delete(_key(batch_id))
    except Exception:  # noqa: BLE001 — the flag lapses by itself
        pass
