"""API token authentication that remembers a token briefly.

DRF's `TokenAuthentication` looks the token and its user up on every request: one query of
the two or three a queue request makes. This keeps what it found for
`DIALTOM_TOKEN_CACHE_SECONDS` (10 s) in the process. A token deleted or a user changed
(deactivated, role changed) is forgotten at once in this process (signals below) and within
those seconds in the others.
"""
from __future__ import annotations

import copy
import threading
import time

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from .models import User

MAX_ENTRIES = 10_000
_remembered: dict[str, tuple[float, User, Token]] = {}
_lock = threading.Lock()


class CachedTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        ttl = settings.DIALTOM_TOKEN_CACHE_SECONDS
        now = time.monotonic()
        hit = _remembered.get(key)
        if hit is not None and hit[0] > now:
            return copy.copy(hit[1]), hit[2]  # a copy: a request may change its user object
        user, token = super().authenticate_credentials(key)  # raises on a bad or inactive token
        if ttl > 0:
            with _lock:
                if len(_remembered) >= MAX_ENTRIES:
                    _remembered.clear()
                _remembered[key] = (now + ttl, user, token)
        return copy.copy(user), token


def forget(*, user_id: int | None = None, key: str | None = None) -> None:
    with _lock:
        for k in [k for k, (_, user, _t) in _remembered.items() if k == key or user.pk == user_id]:
            _remembered.pop(k, None)


@receiver([post_save, post_delete], sender=Token)
def _token_changed(sender, instance, **kwargs):
    forget(key=instance.key)


@receiver([post_save, post_delete], sender=User)
def _user_changed(sender, instance, **kwargs):
    forget(user_id=instance.pk)
