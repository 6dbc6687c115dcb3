"""The demo and day-to-day development: works with nothing configured.

Without DATABASE_URL the data lives in an SQLite file; without REDIS_URL Celery tasks
run in-process and the cache is in memory. Set either to use the real service.
"""
import os

from .base import *  # noqa: F401,F403
from .base import BASE_DIR, DATABASES, LOGGING, dj_database_url, env, env_bool

DEBUG = env_bool("DEBUG", True)

if not os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(f"sqlite:///{BASE_DIR / 'demo.sqlite3'}")}
    DATABASES["default"]["OPTIONS"] = {"timeout": 20}

if not os.environ.get("REDIS_URL"):
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_BROKER_URL = "memory://localhost/"  # a hostname keeps kombu from warning that it has none
    CELERY_RESULT_BACKEND = "cache+memory://"
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

SECRET_KEY = env("SECRET_KEY", "django-insecure-dialtom-studio-local-demo")

# The demo's console shows requests and warnings; LOG_LEVEL=INFO shows the tasks' chatter too.
LOGGING = {**LOGGING, "root": {**LOGGING["root"], "level": env("LOG_LEVEL", "WARNING")}}
