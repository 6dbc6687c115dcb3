"""Settings of the studio's gunicorn in bench/queue_compare.py (on PYTHONPATH after the tree).

The test settings (as bench/queue_settings.py) on the database in DATABASE_URL, persistent
connections (CONN_MAX_AGE, 600 by default), quiet logs, and a URLconf that adds the bare
view (qc_studio_urls). Works for the working tree and for older commits of the studio.
"""
import os

from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import DATABASES

ROOT_URLCONF = "qc_studio_urls"
DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("CONN_MAX_AGE", "600"))
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
