"""Test settings for the worker-kill test: unacknowledged tasks come back after 3 s
(instead of Redis's default hour), so a task lost with its worker is redelivered within the test.

kombu sweeps for such tasks when a worker starts and then every
unacked_restore_interval × unacked_restore_throttle seconds (10 × 10 by default): a new
worker that starts less than 3 s after the kill would otherwise wait 100 s for the next sweep.
"""
from dialtom_site.settings.test import *  # noqa: F401,F403

CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3, "unacked_restore_interval": 1, "unacked_restore_throttle": 1}
