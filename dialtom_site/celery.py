import os

from celery import Celery

from . import broker_fixes  # noqa: F401 - a Redis outage must not end the worker (see the module)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.local")

app = Celery("dialtom_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
