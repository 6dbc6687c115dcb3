"""The test suite: real PostgreSQL and Redis, as CI has them (see .ci/run)."""
import os

from .base import *  # noqa: F401,F403
from .base import CACHE_REDIS_OPTIONS, env

DEBUG = False
SECRET_KEY = "test-secret-key-not-for-production-use-0123456789abcdefghijklmnopqrstuvwxyz"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = False
# A separate Redis database and queue for tests, so a developer's worker is never fed test jobs.
REDIS_URL = env("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# `make test` runs the suite in two processes (pytest-xdist: gw0, gw1). pytest-django gives each
# its own database (test_<name>_gw0, …); here each gets its own Redis database (15, 14, … down from
# TEST_REDIS_URL's: every test clears its cache, a FLUSHDB), queue and cache prefix, so one process's
# worker never takes the other's tasks. They are written back to the environment, so the processes a
# test starts (workers, the demo) inherit them as they are, or replace them (a spare Redis).
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("DIALTOM_TEST_PROCESS") != _worker:
    _server, _, _db = REDIS_URL.rpartition("/")
    os.environ.update(
        DIALTOM_TEST_PROCESS=_worker,
        TEST_REDIS_URL=f"{_server}/{int(_db or 0) - int(_worker.removeprefix('gw'))}",
        CACHE_KEY_PREFIX=env("CACHE_KEY_PREFIX", "dialtom-test") + f"-{_worker}",
        CELERY_TASK_DEFAULT_QUEUE=env("CELERY_TASK_DEFAULT_QUEUE", "dialtom-test") + f"-{_worker}",
    )
    REDIS_URL = os.environ["TEST_REDIS_URL"]
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", "dialtom-test"),
        "OPTIONS": CACHE_REDIS_OPTIONS,
    }
}
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", "dialtom-test")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
