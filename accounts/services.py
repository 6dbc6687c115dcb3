"""Writes about people: creating them in bulk, one-time login links, exclusion, throttling."""
from __future__ import annotations

import csv
import hashlib
import io
import logging
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from redis.exceptions import RedisError
from rest_framework.authtoken.models import Token

from .admin_access import project_admins_group
from .models import Pool, Role, User

# Everyone created with a role joins the pool of that role, so `batch_open --pool verifiers` works.
logger = logging.getLogger(__name__)

ROLE_POOLS = {Role.VERIFIER: "verifiers", Role.CROWD_WORKER: "crowd-workers"}


class PeopleInputError(Exception):
    """Bad input, reported as `file:line: field: reason`."""


LOGIN_LINK_SALT = "accounts.login-link"


def _login_link_seconds() -> int:
    return int(getattr(settings, "DIALTOM_LOGIN_LINK_SECONDS", 3 * 24 * 3600))


def _login_state(user: User) -> str:
    """Changes when the person logs in or changes password: a used link stops working."""
    last = user.last_login.isoformat() if user.last_login else ""
    return salted_hmac(LOGIN_LINK_SALT, f"{user.pk}|{user.password}|{last}").hexdigest()[:24]


def login_link_token(*, user: User) -> str:
    """A signed, expiring, single-use login token."""
    return signing.dumps({"u": user.pk, "s": _login_state(user)}, salt=LOGIN_LINK_SALT)


def _login_link_check(*, token: str, users) -> User | None:
    try:
        data = signing.loads(token, salt=LOGIN_LINK_SALT, max_age=_login_link_seconds())
    except signing.BadSignature:
        return None
    user = users.filter(pk=data.get("u"), is_active=True).first()
    if user is None or not constant_time_compare(data.get("s", ""), _login_state(user)):
        return None
    return user


def login_link_user(*, token: str) -> User | None:
    """The person a login token is for, or None if it is forged, expired or already used.
    Only looks: `login_link_redeem` spends the link."""
    return _login_link_check(token=token, users=User.objects.all())


@transaction.atomic
def login_link_redeem(*, token: str) -> User | None:
    """Spend a login link: the person it is for, once. Checked and spent under the person's
    row lock, so of N simultaneous posts one gets the person and the others None (the
    spent state, a new last_login, is what they read once the lock is theirs)."""
    user = _login_link_check(token=token, users=User.objects.select_for_update())
    if user is None:
        return None
    user.last_login = timezone.now()
    user.save(update_fields=["last_login"])
    return user


@dataclass(frozen=True)
class PersonRow:
    username: str
    email: str
    role: str
    pools: tuple[str, ...] = ()


def people_parse_csv(*, text: str, filename: str = "people.csv") -> list[PersonRow]:
    """Read `username,email,role[,pools]` (pools separated by ';'); all errors are file:line: field: reason."""
    reader = csv.DictReader(io.StringIO(text))
    missing = {"username", "email", "role"} - set(reader.fieldnames or [])
    if missing:
        raise PeopleInputError(f"{filename}:1: header: missing column(s) {', '.join(sorted(missing))}")
    rows, seen = [], set()
    for line, raw in enumerate(reader, start=2):
        username = (raw.get("username") or "").strip()
        email = (raw.get("email") or "").strip()
        role = (raw.get("role") or "").strip().lower().replace(" ", "_").replace("-", "_")
        try:
            if not username:
                raise ValidationError("empty")
            User.username_validator(username)
        except ValidationError:
            raise PeopleInputError(f"{filename}:{line}: username: {username!r} is not a valid username") from None
        if username.lower() in seen:
            raise PeopleInputError(f"{filename}:{line}: username: {username!r} appears twice")
        seen.add(username.lower())
        try:
            validate_email(email)
        except ValidationError:
            raise PeopleInputError(f"{filename}:{line}: email: {email!r} is not an email address") from None
        if role not in Role.values:
            raise PeopleInputError(f"{filename}:{line}: role: {role!r} is not one of {', '.join(Role.values)}")
        pools = tuple(p.strip() for p in (raw.get("pools") or "").split(";") if p.strip())
        rows.append(PersonRow(username, email, role, pools))
    return rows


def person_create(*, username: str, email: str, role: str, pools: tuple[str, ...] = ()) -> User:
    user = User(username=username, email=email, role=role, is_staff=role == Role.STAFF)
    user.set_unusable_password()
    user.save()
    if role == Role.STAFF:
        user.groups.add(project_admins_group())
    names = set(pools) | ({ROLE_POOLS[role]} if role in ROLE_POOLS else set())
    for name in sorted(names):
        Pool.objects.get_or_create(name=name)[0].members.add(user)
    return user


@transaction.atomic
def people_create(*, rows: list[PersonRow], filename: str = "people.csv") -> list[User]:
    """Create everyone or no one."""
    taken = set(User.objects.filter(username__in=[r.username for r in rows]).values_list("username", flat=True))
    for line, row in enumerate(rows, start=2):
        if row.username in taken:
            raise PeopleInputError(f"{filename}:{line}: username: {row.username!r} already exists")
    return [person_create(username=r.username, email=r.email, role=r.role, pools=r.pools) for r in rows]


def login_link_path(*, user: User) -> str:
    return reverse("accounts:link-login", args=[login_link_token(user=user)])


def api_token_for(*, user: User) -> str:
    return Token.objects.get_or_create(user=user)[0].key


@transaction.atomic
def api_token_replace(*, user: User) -> str:
    """A new API token for the person (the profile page's door): any token they had stops
    working. Returns the key, which the page shows once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


def api_token_revoke(*, user: User) -> bool:
    """The person's API token stops working; True if there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


@transaction.atomic
def verifier_exclusion_set(*, user: User, excluded: bool, reason: str = "") -> User:
    """Exclude a verifier's judgments from aggregation (they are kept), or include them again."""
    user = User.objects.select_for_update().get(pk=user.pk)
    user.excluded_from_aggregation = excluded
    user.exclusion_reason = reason.strip()[:500] if excluded else ""
    user.save(update_fields=["excluded_from_aggregation", "exclusion_reason"])
    return user


# --- login throttling (cache) ------------------------------------------------------------
# Counted per (username, address) in the shared cache (Redis). The username is normalised
# the way authentication reads it (the login form applies NFKC) and casefolded, so every
# spelling that reaches an account (full-width, upper case, padded) spends one counter.
# A success does not reset it: the counter only runs out with its window, so a login
# under another spelling (or another valid password) buys no extra guesses.
#
# Redis down: the throttle falls back to a per-process memory cache (logged), rather than
# refusing every login (nobody could work during the outage) or failing open (unbounded
# guessing). The bound during an outage is MAX_FAILURES per process serving logins.

_FALLBACK_CACHE = LocMemCache("login-throttle-fallback", {"MAX_ENTRIES": 10_000})


def throttle_username(username: str) -> str:
    """The one normalisation of a typed username for throttling: NFKC, trimmed, casefolded."""
    return unicodedata.normalize("NFKC", username).strip().casefold()


def _throttle_key(*, username: str, ip: str) -> str:
    digest = hashlib.sha256(throttle_username(username).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"login-failures:{digest}:{ip}"


def _with_throttle_cache(operation):
    """Run `operation(cache)` on the shared cache, or on this process's memory when it is down."""
    try:
        return operation(cache)
    except (RedisError, OSError) as exc:
        logger.warning("login throttle: shared cache unavailable (%s); counting in this process", exc)
        return operation(_FALLBACK_CACHE)


def login_is_throttled(*, username: str, ip: str) -> bool:
    key = _throttle_key(username=username, ip=ip)
    return _with_throttle_cache(lambda c: c.get(key, 0)) >= settings.DIALTOM_LOGIN_MAX_FAILURES


def login_failure_record(*, username: str, ip: str) -> int:
    key = _throttle_key(username=username, ip=ip)
    window = settings.DIALTOM_LOGIN_WINDOW_SECONDS

    def record(c) -> int:
        c.add(key, 0, timeout=window)
        try:
            return c.incr(key)
        except ValueError:  # expired between add and incr
            c.set(key, 1, timeout=window)
            return 1

    return _with_throttle_cache(record)
