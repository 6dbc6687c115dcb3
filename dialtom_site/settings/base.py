"""Settings shared by every environment; everything variable is read from the environment.

local.py (the demo: SQLite and in-process tasks when nothing is configured),
test.py (PostgreSQL and Redis, as CI has them) and production.py (refuses to start
insecure) build on this file.
"""
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    if value.strip().lower() in {"1", "true", "yes", "on"}:
        return True
    if value.strip().lower() in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false)")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """A value out of `choices`; anything else (a typo included) refuses to start."""
    value = os.environ.get(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


INSECURE_SECRET_KEY = "django-insecure-dialtom-studio-development-key-do-not-use-in-production"
SECRET_KEY = env("SECRET_KEY", INSECURE_SECRET_KEY)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "accounts",
    "annotation",
    "references",
    "verification",
    "aggregation",
    "dashboard",
    "releases",
    "scoring",
    "review",
    "studies",
    "report",
    "demo",
]

MIDDLEWARE = [
    # outermost: JSON for every /api/ error, 503 + Retry-After for outages (dialtom_site/errors.py)
    "dialtom_site.middleware.ApiErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "dialtom_site.middleware.SecurityHeadersMiddleware",
    "dialtom_site.middleware.HostileInputMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "studies.middleware.StudyParticipantMiddleware",
]
# Headers Django 5.2 has no setting for, sent in every environment (so the tests and the
# browser tests run under the same policy as production): dialtom_site.middleware.
# script-src 'self': no inline script, no eval, no other origin (htmx, Chart.js and the
# API docs' Swagger UI are served from here: see STATICFILES_DIRS); inline `style`
# attributes (progress bars) are allowed, since no style-src is set.
SECURITY_EXTRA_HEADERS = {
    "Content-Security-Policy": (
        "script-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'"
    ),
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    "Cross-Origin-Resource-Policy": "same-origin",
}

ROOT_URLCONF = "dialtom_site.urls"
# A failed CSRF check answers JSON under /api/ (dialtom_site/errors.py), the usual page elsewhere.
CSRF_FAILURE_VIEW = "dialtom_site.errors.csrf_failure"  # JSON on /api/, the styled page elsewhere
# What a 503 (database or broker outage) tells the client to wait before retrying, in seconds.
DIALTOM_RETRY_AFTER_SECONDS = int(env("DIALTOM_RETRY_AFTER_SECONDS", "5"))
WSGI_APPLICATION = "dialtom_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PostgreSQL for real use and tests; local.py falls back to SQLite for the demo.
DATABASE_URL = env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=int(env("CONN_MAX_AGE", "0")))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A restarted PostgreSQL must not take the app down with it: check pooled connections
    # (CONN_HEALTH_CHECKS=0 spares even the socket poll: the rehearsal does).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("CONN_HEALTH_CHECKS", True)
    # --- issue 23: PgBouncer (deploy/pgbouncer/pgbouncer.ini) ---------------------------------
    # The health check polls the connection's socket instead of a `SELECT 1` round trip per
    # request (dialtom_site/db/base.py).
    DATABASES["default"]["ENGINE"] = "dialtom_site.db"
    # How the connections reach PostgreSQL: `session` (directly, or PgBouncer's session pool:
    # the Celery worker and beat) or `transaction` (PgBouncer's transaction pool: the web
    # processes). A server connection is then ours for one transaction only: no server-side
    # cursors (a named cursor outlives its transaction), no session state; the client
    # connection to PgBouncer is kept (CONN_MAX_AGE), its prepared statements are kept by
    # PgBouncer (max_prepared_statements, >= 1.21).
    DATABASE_POOLING = env_choice("DATABASE_POOLING", "session", ("session", "transaction"))
    if DATABASE_POOLING == "transaction":
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
        DATABASES["default"]["CONN_MAX_AGE"] = int(env("CONN_MAX_AGE", "600"))
    DATABASES["default"]["POOLING"] = DATABASE_POOLING
    # what a new session-pooled connection sets plan_cache_mode to (`auto`: PostgreSQL's default)
    DATABASES["default"]["PLAN_CACHE_MODE"] = env_choice(
        "DIALTOM_PLAN_CACHE_MODE", "force_generic_plan", ("force_generic_plan", "auto", "force_custom_plan"))
    # --- end issue 23 ---------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# htmx, Chart.js and Swagger UI (/api/docs/) come from the npm registry (package.json); `npm ci` puts them in
# node_modules and staticfiles serves them from there: no CDN, no vendored copy.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", BASE_DIR / "node_modules" / "htmx.org" / "dist"),
    ("vendor/chartjs", BASE_DIR / "node_modules" / "chart.js" / "dist"),
    ("vendor/swagger-ui", BASE_DIR / "node_modules" / "swagger-ui-dist"),
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(BASE_DIR / "media")))
MEDIA_URL = "media/"
# Release files are written here so a static host can serve them as well as the API.
RELEASE_ROOT = Path(env("RELEASE_ROOT", str(MEDIA_ROOT / "releases")))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (login throttling, rate limits): Redis when configured --------------------
REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
# A Redis that stops answering (down, or a black-holed host) must not hang a request: the
# login throttle then counts in process memory (accounts.services, login throttling).
CACHE_REDIS_OPTIONS = {
    "socket_connect_timeout": float(env("CACHE_REDIS_TIMEOUT", "1")),
    "socket_timeout": float(env("CACHE_REDIS_TIMEOUT", "1")),
}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", "dialtom"),
        "OPTIONS": CACHE_REDIS_OPTIONS,
    }
}

# --- Celery --------------------------------------------------------------------------
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", "dialtom")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker rides out a broker outage of any length: it keeps reconnecting (Celery's default
# gives up after 100 attempts and exits), and keeps a late-acknowledged task running rather
# than cancelling it (every task is safe to run twice, so a redelivery costs work, not data).
# kombu's restore-on-close bug that still ended it is fixed in dialtom_site/broker_fixes.py;
# docker-compose restarts a worker or beat that dies anyway (restart: unless-stopped).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# With acks_late, a task whose worker died (OOM, SIGKILL, a lost host) goes back to the
# queue after this many seconds; kombu's default for Redis is an hour. It must stay above
# the longest task (a full release build or aggregation takes a minute or two), or a
# running task would be handed to a second worker.
# `celery -A dialtom_site beat` (the compose file's `beat` service): the sweep that starts
# the run of a complete batch whose own trigger was lost while Redis was down.
# The jobs sweep (dialtom_site/jobs.py) queues jobs that waited for Redis and retries jobs
# whose worker died: a job holder beats every DIALTOM_JOB_HEARTBEAT_SECONDS; no beat for
# DIALTOM_JOB_STALE_SECONDS means its worker is gone (it is marked failed and queued again,
# up to DIALTOM_JOB_MAX_ATTEMPTS starts).
# A sweep still queued when the next one is due expires unrun (`expires`): a busy worker
# never piles up sweeps (issue 25's full rehearsal queued 19 of each behind its aggregation runs).
DIALTOM_AGGREGATE_SWEEP_SECONDS = float(env("DIALTOM_AGGREGATE_SWEEP_SECONDS", "300"))
DIALTOM_JOB_SWEEP_SECONDS = float(env("DIALTOM_JOB_SWEEP_SECONDS", "60"))
CELERY_BEAT_SCHEDULE = {
    "aggregate-due-batches": {
        "task": "aggregation.tasks.aggregate_due_batches",
        "schedule": DIALTOM_AGGREGATE_SWEEP_SECONDS,
        "options": {"expires": DIALTOM_AGGREGATE_SWEEP_SECONDS},
    },
    # adaptive overlap: refresh every unsettled adaptive batch whose per-judgment request was lost
    "overlap-refresh-due": {
        "task": "aggregation.tasks.overlap_refresh_due",
        "schedule": DIALTOM_AGGREGATE_SWEEP_SECONDS,
        "options": {"expires": DIALTOM_AGGREGATE_SWEEP_SECONDS},
    },
    "jobs-sweep": {
        "task": "dialtom_site.jobs.jobs_sweep_task",
        "schedule": DIALTOM_JOB_SWEEP_SECONDS,
        "options": {"expires": DIALTOM_JOB_SWEEP_SECONDS},
    },
}
CELERY_IMPORTS = ["dialtom_site.jobs"]
DIALTOM_JOB_HEARTBEAT_SECONDS = float(env("DIALTOM_JOB_HEARTBEAT_SECONDS", "15"))
DIALTOM_JOB_STALE_SECONDS = float(env("DIALTOM_JOB_STALE_SECONDS", "120"))
DIALTOM_JOB_MAX_ATTEMPTS = int(env("DIALTOM_JOB_MAX_ATTEMPTS", "3"))
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(env("CELERY_VISIBILITY_TIMEOUT", "1800"))}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# --- REST framework -------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"login": "10/min"},
    # JSON nested past DIALTOM_JSON_MAX_DEPTH, a NUL or a lone surrogate is a 400 (dialtom_site/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "dialtom_site.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
# No body the API accepts nests deeper than a few levels; 100,000 `[` crashed the json module.
DIALTOM_JSON_MAX_DEPTH = int(env("DIALTOM_JSON_MAX_DEPTH", "32"))
SPECTACULAR_SETTINGS = {
    "TITLE": "DialToM Studio API",
    "DESCRIPTION": "Verification queue, aggregation and releases of the DialToM benchmark.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/schema/ and /api/docs/ are for logged-in people and token holders only: the schema
    # maps every endpoint and field an attacker could aim at (issue 20, break 6).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # /api/docs/ works offline: Swagger UI from the npm package (STATICFILES_DIRS), no CDN, as
    # the CSP's script-src 'self' requires (and its init script is a separate request).
    "SWAGGER_UI_DIST": "/" + STATIC_URL.strip("/") + "/vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/" + STATIC_URL.strip("/") + "/img/favicon.svg",
    # Several models have a `status`: name each choice set after its model.
    "ENUM_NAME_OVERRIDES": {
        "ReleaseStatusEnum": "releases.models.ReleaseStatus",
        "AggregationRunStatusEnum": "aggregation.models.RunStatus",
        "BatchStatusEnum": "annotation.models.BatchStatus",
    },
}

# --- Domain settings -------------------------------------------------------------------
# Segmentation bounds (spec: "Segmentation rule"): close a window once it holds
# SEGMENT_MIN_WORDS words; windows over SEGMENT_MAX_WORDS are counted in the report.
DIALTOM_SEGMENT_MIN_WORDS = int(env("DIALTOM_SEGMENT_MIN_WORDS", "150"))
DIALTOM_SEGMENT_MAX_WORDS = int(env("DIALTOM_SEGMENT_MAX_WORDS", "200"))
# Seed used wherever an order is shuffled reproducibly (import_dialtom options, ...).
DIALTOM_SEED = int(env("DIALTOM_SEED", "7"))
# The secret the verification queue draws its orders from (option display order per verifier
# × item, queue positions): never the public seed above. Unset, it is derived from SECRET_KEY
# (verification.queue.shuffle_key); production refuses to start without a real one.
DIALTOM_SHUFFLE_SECRET = env("DIALTOM_SHUFFLE_SECRET", "")
# Judgments whose verifier had already seen a related item of the context (the queue's
# least-exposure fallback, recorded on Judgment.exposed): "exclude" drops them from the
# Dawid–Skene fit, "include" keeps them. Any other value (a typo of "exclude" silently kept
# them) refuses to start, in every settings module (they all build on this one).
EXPOSED_JUDGMENTS_CHOICES = ("exclude", "include")
DIALTOM_EXPOSED_JUDGMENTS = env_choice("DIALTOM_EXPOSED_JUDGMENTS", "exclude", EXPOSED_JUDGMENTS_CHOICES)
# Verification queue defaults (a batch may override them).
DIALTOM_DEFAULT_OVERLAP = int(env("DIALTOM_DEFAULT_OVERLAP", "3"))
DIALTOM_LEASE_MINUTES = int(env("DIALTOM_LEASE_MINUTES", "20"))
# The address participants reach the studio at: study links (manage.py study_create) are made from it.
DIALTOM_SITE_URL = env("DIALTOM_SITE_URL", "http://127.0.0.1:8000")
# API tokens found are remembered this long in each process (accounts/authentication.py); 0 = look up every time
DIALTOM_TOKEN_CACHE_SECONDS = float(env("DIALTOM_TOKEN_CACHE_SECONDS", "10"))
# Retention: an item is kept when DS confirms its intended answer with at least this posterior.
DIALTOM_RETENTION_THRESHOLD = float(env("DIALTOM_RETENTION_THRESHOLD", "0.5"))
# Dawid–Skene (crowd-kit) EM settings, recorded on every aggregation run.
DIALTOM_DS_N_ITER = int(env("DIALTOM_DS_N_ITER", "100"))
DIALTOM_DS_TOL = float(env("DIALTOM_DS_TOL", "1e-5"))
# Adaptive overlap (batches opened with --k-min/--k-max; aggregation/overlap.py): an item gets
# another judgment while the model's probability that its retention decision is wrong is above
# MAX_RISK; the model gives every verifier PRIOR_STRENGTH pseudo-judgments of PRIOR_ACCURACY; an
# adaptive batch is refitted at most once per REFRESH_SECONDS. Recorded on the batch when opened.
DIALTOM_OVERLAP_MAX_RISK = float(env("DIALTOM_OVERLAP_MAX_RISK", "0.03"))
DIALTOM_OVERLAP_PRIOR_STRENGTH = float(env("DIALTOM_OVERLAP_PRIOR_STRENGTH", "4"))
DIALTOM_OVERLAP_PRIOR_ACCURACY = float(env("DIALTOM_OVERLAP_PRIOR_ACCURACY", "0.7"))
DIALTOM_OVERLAP_REFRESH_SECONDS = float(env("DIALTOM_OVERLAP_REFRESH_SECONDS", "10"))
# An adaptive batch with no claim or judgment for this long whose short items nobody may take
# (the context rule) has them settled at what they hold, by the sweep (docs/overlap.md).
DIALTOM_OVERLAP_STALL_SECONDS = float(env("DIALTOM_OVERLAP_STALL_SECONDS", "60"))
# Dashboard: flag batches whose AC1 is below this; verifier outliers (median seconds per item
# under FAST_SECONDS, or one letter above LETTER_BIAS of their A–D answers, from 20 judgments on).
DIALTOM_AC1_FLAG_THRESHOLD = float(env("DIALTOM_AC1_FLAG_THRESHOLD", "0.6"))
# The study report's BERTScore column: a local Hugging Face encoder directory (nothing is downloaded).
DIALTOM_BERTSCORE_MODEL_DIR = env("DIALTOM_BERTSCORE_MODEL_DIR", "")
DIALTOM_FAST_SECONDS = float(env("DIALTOM_FAST_SECONDS", "5"))
DIALTOM_LETTER_BIAS = float(env("DIALTOM_LETTER_BIAS", "0.6"))
# Login throttling: failures per username+IP within the window before refusing.
DIALTOM_LOGIN_MAX_FAILURES = int(env("DIALTOM_LOGIN_MAX_FAILURES", "5"))
DIALTOM_LOGIN_WINDOW_SECONDS = int(env("DIALTOM_LOGIN_WINDOW_SECONDS", "900"))
# Model runs a release reader uploads (scoring.services.run_upload_check): the largest
# predictions file, and how many runs one reader may upload in 24 hours (staff: no limit).
DIALTOM_RUN_UPLOAD_MAX_BYTES = int(env("DIALTOM_RUN_UPLOAD_MAX_BYTES", str(20 * 1024 * 1024)))
DIALTOM_READER_RUNS_PER_DAY = int(env("DIALTOM_READER_RUNS_PER_DAY", "5"))
# The item list's total (review.item_list): counted exactly within this many milliseconds, past
# which the page shows PostgreSQL's estimate and says so, and asks for the exact count once it
# has loaded (/review/items-count/), which may take up to the second budget.
# A count whose plan PostgreSQL estimates to cost more than DIALTOM_ITEM_COUNT_MAX_COST (its
# planner's units) is not tried on the page at all: the estimate at once, the exact count later.
DIALTOM_ITEM_COUNT_BUDGET_MS = int(env("DIALTOM_ITEM_COUNT_BUDGET_MS", "10"))
DIALTOM_ITEM_COUNT_MAX_COST = float(env("DIALTOM_ITEM_COUNT_MAX_COST", "5000"))
DIALTOM_ITEM_COUNT_LATER_BUDGET_MS = int(env("DIALTOM_ITEM_COUNT_LATER_BUDGET_MS", "3000"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    # In-process (eager) tasks would log every call at INFO: keep the demo's console readable.
    "loggers": {"celery.app.trace": {"level": env("CELERY_TRACE_LOG_LEVEL", "WARNING")}},
}

# Files a release build freezes beside its own, written by apps above releases (named as
# strings, so releases never imports them): the study report's report.json and report.tex.
DIALTOM_RELEASE_FILE_WRITERS = ["report.services.report_files_write"]
