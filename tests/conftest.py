"""Fixtures shared by the whole suite.

- The database is the real PostgreSQL of DATABASE_URL (pytest-django makes `test_<name>`).
- `celery_worker` runs a real Celery worker, in a thread of this process, on the Redis of
  TEST_REDIS_URL; tests that use it must be `transaction=True` so the worker sees the rows.
- Browser tests (`tests/e2e/`) use Debian's chromium through Playwright: see e2e/conftest.py.
"""
import pytest

from .factories import CrowdWorkerFactory, StaffFactory, UserFactory


@pytest.fixture
def verifier(db):
    return UserFactory(username="verifier01")


@pytest.fixture
def staff(db):
    return StaffFactory(username="admin01")


@pytest.fixture
def crowd_worker(db):
    return CrowdWorkerFactory(username="crowd01")


@pytest.fixture(autouse=True)
def _release_root(settings, tmp_path):
    """Release files of a test (the demo builds one too) go to its own folder, never media/."""
    settings.RELEASE_ROOT = tmp_path / "releases"


@pytest.fixture(autouse=True)
def _clear_cache():
    """Login throttles and rate limits live in the cache: every test starts from a clean one."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def celery_worker(transactional_db):
    """A real Celery worker consuming the test queue on Redis, for the length of one test."""
    from celery.contrib.testing.worker import start_worker

    from dialtom_site.celery import app

    app.control.purge()
    with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30) as worker:
        yield worker
        _wait_until_worker_idle(app)
    app.control.purge()


def _wait_until_worker_idle(app, *, quiet: float = 0.5, limit: float = 60) -> None:
    """Before the database is flushed: let the tasks a test set off (a batch's aggregation, its
    follow-ups) finish, so no worker transaction holds a table lock while TRUNCATE runs."""
    import time

    from celery.worker import state
    from django.conf import settings

    deadline = time.monotonic() + limit
    idle_since = None
    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        while time.monotonic() < deadline:
            busy = state.active_requests or state.reserved_requests or client.llen(settings.CELERY_TASK_DEFAULT_QUEUE)
            if busy:
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= quiet:
                return
            time.sleep(0.05)
