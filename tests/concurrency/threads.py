"""Run functions at once, each in its own thread with its own PostgreSQL connection."""
import threading

from django.db import connection


def run_threads(targets, *, timeout: float = 120) -> None:
    """Start every target together (a barrier), wait for all, and fail with the first errors."""
    start = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def guarded(target):
        try:
            start.wait()
            target()
        except BaseException as exc:  # noqa: BLE001 — reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread is still running"
    assert not errors, errors[:3]
