"""Settings for bench/pgbouncer.py's gunicorn processes: the test settings (DATABASE_URL and
DATABASE_POOLING from the environment: PgBouncer's transaction pool), quiet logs, and a
bench-only middleware that counts the SQL statements of each request (bench/pgbouncer_count.py)."""
from dialtom_site.settings.test import *  # noqa: F401,F403
from dialtom_site.settings.test import MIDDLEWARE

MIDDLEWARE = ["bench.pgbouncer_count.count_statements", *MIDDLEWARE]
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
