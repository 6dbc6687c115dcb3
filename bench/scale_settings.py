"""Settings for bench/scale.py: the test settings (real PostgreSQL and Redis) on the size's own
database (SCALE_DB), releases written under SCALE_RELEASE_ROOT, follow-up tasks published to a
queue no worker reads (emptied by the bench when it is done)."""
import os

from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import DATABASES

DATABASES["default"]["NAME"] = os.environ["SCALE_DB"]
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("SCALE_CELERY_QUEUE", "dialtom-scale-bench")
RELEASE_ROOT = os.path.join(os.environ.get("SCALE_RELEASE_ROOT", "/tmp/dialtom-scale"), os.environ["SCALE_DB"], "releases")
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
CACHES["default"]["KEY_PREFIX"] = "dialtom-scale-bench"  # noqa: F405
