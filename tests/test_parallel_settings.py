"""`make test` runs the suite in two pytest-xdist processes: each must have its own Redis database,
queue and cache prefix (every test clears its cache with a FLUSHDB, and a worker takes any task on
its queue), and the processes a test starts must inherit them unchanged."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOW = ("from django.conf import settings as s; import json, os; print(json.dumps([s.CELERY_BROKER_URL, "
        "s.CACHES['default']['LOCATION'], s.CACHES['default']['KEY_PREFIX'], s.CELERY_TASK_DEFAULT_QUEUE, "
        "{k: os.environ.get(k) for k in ('TEST_REDIS_URL', 'CELERY_TASK_DEFAULT_QUEUE', 'CACHE_KEY_PREFIX', "
        "'DIALTOM_TEST_PROCESS')}]))")


def _settings(**env: str) -> list:
    base = {k: v for k, v in os.environ.items()
            if k not in {"PYTEST_XDIST_WORKER", "DIALTOM_TEST_PROCESS", "TEST_REDIS_URL", "CACHE_KEY_PREFIX",
                         "CELERY_TASK_DEFAULT_QUEUE"}}
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {SHOW}"], cwd=ROOT, check=True, capture_output=True,
        text=True, env={**base, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test", **env},
    )
    return json.loads(out.stdout)


def test_each_test_process_has_its_own_redis_database_queue_and_cache():
    one = _settings(PYTEST_XDIST_WORKER="gw0", TEST_REDIS_URL="redis://127.0.0.1:6379/15")
    two = _settings(PYTEST_XDIST_WORKER="gw1", TEST_REDIS_URL="redis://127.0.0.1:6379/15")
    assert one[:4] == ["redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/15", "dialtom-test-gw0", "dialtom-test-gw0"]
    assert two[:4] == ["redis://127.0.0.1:6379/14", "redis://127.0.0.1:6379/14", "dialtom-test-gw1", "dialtom-test-gw1"]
    # one process alone (no xdist) keeps the names it is given
    assert _settings(TEST_REDIS_URL="redis://127.0.0.1:6379/13")[:4] == [
        "redis://127.0.0.1:6379/13", "redis://127.0.0.1:6379/13", "dialtom-test", "dialtom-test"]


def test_a_process_a_test_starts_keeps_what_it_inherits_or_is_given():
    parent = _settings(PYTEST_XDIST_WORKER="gw1", TEST_REDIS_URL="redis://127.0.0.1:6379/15")
    inherited = {k: v for k, v in parent[4].items() if v is not None}
    assert inherited["TEST_REDIS_URL"] == "redis://127.0.0.1:6379/14"
    child = _settings(PYTEST_XDIST_WORKER="gw1", **inherited)
    assert child[:4] == parent[:4]  # not derived twice (…/13, dialtom-test-gw1-gw1)
    spare = _settings(PYTEST_XDIST_WORKER="gw1", **{**inherited, "TEST_REDIS_URL": "redis://127.0.0.1:6400/0",
                                                   "CELERY_TASK_DEFAULT_QUEUE": "dialtom-test-gw1-outage"})
    assert spare[:4] == ["redis://127.0.0.1:6400/0", "redis://127.0.0.1:6400/0", "dialtom-test-gw1", "dialtom-test-gw1-outage"]
