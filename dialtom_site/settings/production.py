"""Production: refuses to start insecure (DEBUG on, default or short secret, no hosts)."""
from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import DATABASES, INSECURE_SECRET_KEY, env, env_bool, env_list

DEBUG = env_bool("DEBUG", False)
if DEBUG:
    raise ImproperlyConfigured("DEBUG must be off in production (unset DEBUG or set DEBUG=0).")

SECRET_KEY = env("SECRET_KEY", "")
_weak_secret = (
    not SECRET_KEY
    or SECRET_KEY == INSECURE_SECRET_KEY
    or SECRET_KEY.startswith("django-insecure")
    or "replace" in SECRET_KEY.lower()
    or len(SECRET_KEY) < 50
    or len(set(SECRET_KEY)) < 5
)
if _weak_secret:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a real secret in production (50+ characters, not the default)."
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name the hosts this site is served on.")

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = int(env("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
DATABASES["default"]["CONN_MAX_AGE"] = int(env("CONN_MAX_AGE", "60"))
