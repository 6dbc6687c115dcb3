"""Label Studio's WSGI app as bench/queue_compare.py serves it (run by LS's own venv, with
label_studio/ and this folder on PYTHONPATH).

Label Studio's own settings (`core.settings.label_studio`, as `label-studio start` uses) on
PostgreSQL (DJANGO_DB=default, POSTGRE_* from the environment), with, before anything
connects: persistent connections (CONN_MAX_AGE, 600 by default, as the studio) and RQ
pointed at a closed port so that, as in a plain community install without Redis, its
background jobs run in the request rather than in a Redis queue nobody consumes. DEBUG,
Sentry and the PyPI version check are switched off through the environment
(DEBUG=false SENTRY_DSN= LATEST_VERSION_CHECK=false).
"""
import os


def configure() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "core.settings.label_studio"
    from django.conf import settings

    settings.DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("CONN_MAX_AGE", "600"))
    for queue in settings.RQ_QUEUES.values():
        queue.update(HOST="127.0.0.1", PORT=9)


if __name__ != "__main__":
    configure()
    from core.wsgi import application  # noqa: E402,F401
