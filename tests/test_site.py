import importlib
import os
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse


def _load_production(monkeypatch, **env):
    for key in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DIALTOM_SHUFFLE_SECRET", "a-shuffle-secret-of-32-characters-or-more")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    sys.modules.pop("dialtom_site.settings.production", None)
    return importlib.import_module("dialtom_site.settings.production")


GOOD_SECRET = "k" * 20 + "A7x!q" + "z" * 30


def test_production_refuses_debug(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="DEBUG"):
        _load_production(monkeypatch, DEBUG="1", SECRET_KEY=GOOD_SECRET, ALLOWED_HOSTS="studio.example.org")


def test_production_refuses_default_secret(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        _load_production(monkeypatch, ALLOWED_HOSTS="studio.example.org")
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        _load_production(monkeypatch, SECRET_KEY="django-insecure-" + "x" * 60, ALLOWED_HOSTS="studio.example.org")


def test_production_secure_when_configured(monkeypatch):
    prod = _load_production(monkeypatch, SECRET_KEY=GOOD_SECRET, ALLOWED_HOSTS="studio.example.org")
    assert prod.DEBUG is False
    assert prod.SESSION_COOKIE_SECURE and prod.CSRF_COOKIE_SECURE
    assert prod.ALLOWED_HOSTS == ["studio.example.org"]


def test_tests_run_on_postgresql(db):
    from django.db import connection

    assert connection.vendor == "postgresql"


def test_home_requires_login(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_celery_app_is_configured():
    from dialtom_site.celery import app

    assert app.main == "dialtom_site"
    assert os.environ.get("DJANGO_SETTINGS_MODULE") == "dialtom_site.settings.test"


def test_production_redelivers_a_dead_workers_task_within_the_configured_timeout(monkeypatch):
    """acks_late tasks of a killed worker come back after the broker's visibility timeout:
    half an hour by default (kombu's is an hour), set from the environment."""
    prod = _load_production(monkeypatch, SECRET_KEY=GOOD_SECRET, ALLOWED_HOSTS="studio.example.org")
    assert prod.CELERY_TASK_ACKS_LATE is True
    assert prod.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] == 1800
    monkeypatch.delitem(sys.modules, "dialtom_site.settings.base")  # re-read the environment; restored after
    prod = _load_production(
        monkeypatch, SECRET_KEY=GOOD_SECRET, ALLOWED_HOSTS="studio.example.org", CELERY_VISIBILITY_TIMEOUT="600"
    )
    assert prod.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] == 600
