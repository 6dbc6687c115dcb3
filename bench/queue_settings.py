"""Settings for bench/queue_load.py's gunicorn: the test settings on a separate database,
persistent connections as in production, and a bench-only URL for the bare Django view."""
import os

from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import DATABASES

ROOT_URLCONF = "bench.queue_urls"
DATABASES["default"]["NAME"] = os.environ["QUEUE_BENCH_DB"]
DATABASES["default"]["CONN_MAX_AGE"] = 60
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("QUEUE_BENCH_CELERY_QUEUE", "dialtom-queue-bench")
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
