"""Test settings WITHOUT connection health checks: the negative control of test_db_faults."""
from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import DATABASES

DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
