"""Test settings for the broker-outage test's worker: the production Celery settings, plus
the test's own tasks (outage_tasks.py); the broker is the test's private Redis (TEST_REDIS_URL)."""
from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import CELERY_IMPORTS

CELERY_IMPORTS = [*CELERY_IMPORTS, "tests.reliability.outage_tasks"]
