"""Production settings: `check --deploy` clean, and the headers/cookies a real server sends.

Both run in subprocesses on `dialtom_site.settings.production` (the test process itself
runs on test settings), the second through gunicorn as it would be deployed.
"""
import http.client
import subprocess
import sys

import pytest

from tests.factories import UserFactory
from tests.reliability.helpers import ROOT, Gunicorn, production_env


def _check_deploy(**env):
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_env(**env), capture_output=True, text=True, timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings():
    done = _check_deploy()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_fails_when_a_protection_is_turned_off():
    """The check above could fail: switching HSTS off is reported (security.W004)."""
    done = _check_deploy(SECURE_HSTS_SECONDS="0")
    assert done.returncode != 0
    assert "W004" in done.stdout + done.stderr


@pytest.mark.parametrize("env, message", [
    ({"DEBUG": "1"}, "DEBUG"),
    ({"SECRET_KEY": "short"}, "SECRET_KEY"),
    ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS"),
    ({"DIALTOM_SHUFFLE_SECRET": ""}, "DIALTOM_SHUFFLE_SECRET"),
    ({"ALLOWED_HOSTS": "*"}, "ALLOWED_HOSTS"),  # issue 12, break 12: any Host header was accepted
    ({"ALLOWED_HOSTS": "studio.example.org,*"}, "ALLOWED_HOSTS"),
])
def test_production_refuses_to_start_insecure(env, message):
    done = _check_deploy(**env)
    assert done.returncode != 0 and message in done.stderr


def _request(port, method, path, headers=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers={"Host": "studio.example.org", **(headers or {})})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    """A STATIC_ROOT with a manifest naming every static file as itself.

    A real `collectstatic` compresses ~17 MB (Chart.js and its source maps) for 20-40 s on
    this machine: too slow for every run (RELIABILITY.md has the command and its time).
    The manifest storage only needs the manifest to render pages; the project's own CSS
    is copied so a static response can be checked too.
    """
    import json
    import shutil

    from django.contrib.staticfiles import finders

    root = tmp_path_factory.mktemp("static")
    paths = {}
    for finder in finders.get_finders():
        for path, storage in finder.list(["*.map", "*.ts"]):
            name = "/".join(filter(None, [getattr(storage, "prefix", None), path]))
            paths[name] = name
    (root / "staticfiles.json").write_text(json.dumps({"paths": paths, "version": "1.1", "hash": "test"}))
    shutil.copytree(f"{ROOT}/static/css", root / "css")
    return root


@pytest.mark.django_db(transaction=True)
def test_gunicorn_on_production_settings_sends_security_headers_and_secure_cookies(static_root):
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    # Production hashes with PBKDF2 (the test settings' MD5 is not accepted there).
    hasher = PBKDF2PasswordHasher()
    user = UserFactory(username="hdr-verifier")
    user.password = hasher.encode("pw-for-tests-1", hasher.salt())
    user.save(update_fields=["password"])
    with Gunicorn(env=production_env(STATIC_ROOT=str(static_root)), workers=1) as server:
        # Plain HTTP is redirected to HTTPS.
        plain = _request(server.port, "GET", "/accounts/login/")
        assert plain.status == 301 and plain.getheader("Location") == "https://studio.example.org/accounts/login/"

        # Over HTTPS (as the proxy says), the login page carries every protective header.
        https = {"X-Forwarded-Proto": "https"}
        page = _request(server.port, "GET", "/accounts/login/", https)
        assert page.status == 200
        assert page.getheader("Strict-Transport-Security") == "max-age=31536000; includeSubDomains; preload"
        assert page.getheader("X-Content-Type-Options") == "nosniff"
        assert page.getheader("X-Frame-Options") == "DENY"
        assert page.getheader("Referrer-Policy") == "same-origin"
        assert page.getheader("Cross-Origin-Opener-Policy") == "same-origin"
        csp = page.getheader("Content-Security-Policy")
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
        assert "script-src 'self';" in csp  # issue 12, break 12: no script-src at all
        assert "camera=()" in page.getheader("Permissions-Policy")
        csrf_cookie = next(c for c in page.headers.get_all("Set-Cookie") if c.startswith("__Host-csrftoken="))
        for flag in ("Secure", "HttpOnly", "SameSite=Lax", "Path=/"):
            assert flag in csrf_cookie
        assert "Domain=" not in csrf_cookie
        assert "Server" not in page.headers or "Django" not in page.getheader("Server")

        # A login sets the session cookie with the same protections.
        import re

        cookie_token = csrf_cookie.split(";")[0].split("=", 1)[1]
        form = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        form.request("GET", "/accounts/login/", headers={
            "Host": "studio.example.org", "Cookie": f"__Host-csrftoken={cookie_token}", **https})
        html = form.getresponse().read().decode()
        form.close()
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        login = _request(
            server.port, "POST", "/accounts/login/",
            {**https, "Content-Type": "application/x-www-form-urlencoded",
             "Referer": "https://studio.example.org/accounts/login/", "Cookie": f"__Host-csrftoken={cookie_token}"},
            f"username=hdr-verifier&password=pw-for-tests-1&csrfmiddlewaretoken={form_token}",
        )
        assert login.status == 302, login.status
        session_cookie = next(c for c in login.headers.get_all("Set-Cookie") if c.startswith("__Host-sessionid="))
        for flag in ("Secure", "HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"):
            assert flag in session_cookie

        # Static files come from WhiteNoise, with the same headers.
        static = _request(server.port, "GET", "/static/css/studio.css", https)
        assert static.status == 200 and static.getheader("X-Content-Type-Options") == "nosniff"
        assert static.getheader("Strict-Transport-Security")
