"""Test settings for the worker-kill test: unacknowledged tasks come back after 3 s
(instead of Redis's default hour), so a task lost with its worker is redelivered within the test."""
from dialtom_site.settings.test import *  # noqa: F401,F403

CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3}
