"""The test suite: real PostgreSQL and Redis, as CI has them (see .ci/run)."""
from .base import *  # noqa: F401,F403
from .base import CACHE_REDIS_OPTIONS, env

DEBUG = False
SECRET_KEY = "test-secret-key-not-for-production-use-0123456789abcdefghijklmnopqrstuvwxyz"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = False
# A separate Redis database and queue for tests, so a developer's worker is never fed test jobs.
REDIS_URL = env("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
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
