"""Break 7, first half (issue 12): with Redis down, browser login answered 500 because the
login throttle's cache raised, so nobody could log in during the outage.

The cache here is a Redis of our own on a spare port, really stopped (not a mock): login
must still work, and the throttle must still refuse a guesser (it falls back to counting
in this process, and says so in the log)."""
import logging

import pytest
from django.conf import settings
from django.test import Client, override_settings

from tests.factories import UserFactory


def _login(client, username, password):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR="203.0.113.70")


@pytest.fixture
def cache_on_spare_redis(spare_redis):
    caches = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": spare_redis.url,
        "KEY_PREFIX": "redis-down-login",
        "OPTIONS": settings.CACHE_REDIS_OPTIONS,
    }}
    with override_settings(CACHES=caches):
        yield spare_redis


def test_login_works_and_is_still_throttled_with_redis_down(db, cache_on_spare_redis, caplog):
    user = UserFactory(username="outage-verifier")
    # Given Redis up: the counter lives there.
    assert _login(Client(), user.username, "wrong-password").status_code == 200

    # When Redis stops
    cache_on_spare_redis.stop()
    assert not cache_on_spare_redis.up

    # Then the right password still logs in ...
    client = Client(raise_request_exception=True)
    with caplog.at_level(logging.WARNING, logger="accounts.services"):
        response = _login(client, user.username, "pw-for-tests-1")
    assert response.status_code == 302 and "_auth_user_id" in client.session
    assert "shared cache unavailable" in caplog.text

    # ... and a guesser is still refused after DIALTOM_LOGIN_MAX_FAILURES wrong passwords.
    guesser = Client(raise_request_exception=True)
    for _ in range(settings.DIALTOM_LOGIN_MAX_FAILURES):
        assert _login(guesser, user.username, "wrong-password").status_code == 200
    assert _login(guesser, user.username, "pw-for-tests-1").status_code == 429
    assert "_auth_user_id" not in guesser.session
