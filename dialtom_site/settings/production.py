"""Production: refuses to start insecure (DEBUG on, a default, short or low-entropy secret, no hosts).

Everything `manage.py check --deploy` asks for is on (tests/security/test_deploy.py runs
it in a subprocess and fails on any warning), plus a few headers Django does not set by
itself (dialtom_site/middleware.py). The site is served over HTTPS behind a proxy that
sets X-Forwarded-Proto; plain HTTP is redirected.
"""
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from dialtom_site.secret_strength import secret_weakness

from .base import *  # noqa: F401,F403
from .base import BASE_DIR, DATABASES, INSECURE_SECRET_KEY, env, env_bool, env_list

DEBUG = env_bool("DEBUG", False)
if DEBUG:
    raise ImproperlyConfigured("DEBUG must be off in production (unset DEBUG or set DEBUG=0).")

SECRET_KEY = env("SECRET_KEY", "")
# Length is not strength: "abcde" × 11 passed a length check (dialtom_site/secret_strength.py).
_secret_weakness = secret_weakness(SECRET_KEY, min_length=50, min_bits=128)
if (
    _secret_weakness
    or SECRET_KEY == INSECURE_SECRET_KEY
    or SECRET_KEY.startswith("django-insecure")
    or "replace" in SECRET_KEY.lower()
):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a real secret in production (50+ characters, random, not the default"
        + (f"; this one has {_secret_weakness}" if _secret_weakness else "")
        + "). Generate one: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )

# The queue's display orders are drawn from this secret (a verifier who knew it could undo
# the option shuffle): its own value, not the public seed nor a copy of SECRET_KEY.
DIALTOM_SHUFFLE_SECRET = env("DIALTOM_SHUFFLE_SECRET", "")
_shuffle_weakness = secret_weakness(DIALTOM_SHUFFLE_SECRET, min_length=32, min_bits=90)
if _shuffle_weakness or DIALTOM_SHUFFLE_SECRET == SECRET_KEY:
    raise ImproperlyConfigured(
        "DIALTOM_SHUFFLE_SECRET must be set in production (32+ characters, random, not the SECRET_KEY"
        + (f"; this one has {_shuffle_weakness}" if _shuffle_weakness else "")
        + "). Generate one: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
if not ALLOWED_HOSTS or any("*" in host for host in ALLOWED_HOSTS):
    # A wildcard lets any Host header through: password-reset and absolute links built from it.
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must name the hosts this site is served on (no '*' wildcard, not empty)."
    )

# --- Cookies: only over HTTPS, not readable from JavaScript, not sent cross-site --------
# The `__Host-` prefix makes browsers refuse the cookie unless it is Secure, has Path=/ and
# no Domain: a sibling subdomain cannot plant or overwrite it.
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_NAME = "__Host-sessionid"
SESSION_COOKIE_AGE = int(env("SESSION_COOKIE_AGE", str(12 * 3600)))  # one working day
CSRF_COOKIE_SECURE = True
# htmx sends the token from <body hx-headers>, never from the cookie: JS need not read it.
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_NAME = "__Host-csrftoken"
LANGUAGE_COOKIE_SECURE = True
LANGUAGE_COOKIE_HTTPONLY = True

# --- Transport and headers ------------------------------------------------------------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = int(env("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The CSP, Permissions-Policy and CORP headers come from base.py (SECURITY_EXTRA_HEADERS),
# sent in every environment.

STATIC_ROOT = Path(env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
DATABASES["default"]["CONN_MAX_AGE"] = int(env("CONN_MAX_AGE", "60"))
