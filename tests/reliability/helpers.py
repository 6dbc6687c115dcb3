"""Helpers shared by the reliability and security tests (no fixtures here: plain functions)."""
from __future__ import annotations

import os
import socket
import uuid
from urllib.parse import quote

from django.db import connection
from annotation.services import domains_ensure as ensure_domains  # noqa: F401,E402 (re-exported)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DOMAINS = [
    ("mi", "Motivational interviewing", "AnnoMI", "counselor", "client"),
    ("esc", "Emotional support", "ESConv", "supporter", "seeker"),
    ("pfg", "Persuasion", "PersuasionForGood", "persuader", "persuadee"),
]


def database_url(name: str | None = None) -> str:
    """A postgres:// URL for the test database (or another database on the same server)."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name or s['NAME']}"


def scratch_name(prefix: str) -> str:
    """A database name nobody else uses: this worktree's prefix plus a random suffix."""
    return f"{connection.settings_dict['NAME']}_{prefix}_{uuid.uuid4().hex[:10]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child process that must use THIS test database."""
    env = dict(os.environ)
    # The browser tests allow the sync ORM beside Playwright's event loop in this process
    # (tests/e2e/conftest.py); a child process has no such loop and must not inherit that.
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update({"DATABASE_URL": database_url(), "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra)
    return env


GOOD_SECRET = "prod-like-secret-" + "Zq8vN3kLw0pXr7Tb2mYs5Hc9Ue1Gj4Fa6Do" + "-not-a-default"


def production_env(**extra: str) -> dict[str, str]:
    """Environment for a child process on production settings against the test database."""
    values = {
        "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.production",
        "SECRET_KEY": GOOD_SECRET,
        "DIALTOM_SHUFFLE_SECRET": "prod-like-shuffle-secret-Vb7Qm2Xw9Lk4Rt",
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver,studio.example.org",
        **extra,
    }
    env = subprocess_env(**values)
    env.pop("DEBUG", None) if "DEBUG" not in extra else None
    return env


class Gunicorn:
    """`with Gunicorn(env=..., workers=2) as g:` serves the app on a free loopback port."""

    def __init__(self, *, env: dict[str, str], workers: int = 2, threads: int = 1, timeout: int = 30, log=None):
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [
            os.path.join(os.path.dirname(sys.executable), "gunicorn"), "dialtom_site.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers), "--threads", str(threads),
            "--timeout", str(timeout), "--graceful-timeout", "5", "--access-logfile", "-" if log else "/dev/null",
        ]
        self.env = env
        self.log = log
        self.proc = None

    def __enter__(self):
        import http.client
        import subprocess
        import time

        self.proc = subprocess.Popen(
            self.cmd, cwd=ROOT, env=self.env, stdout=self.log or subprocess.DEVNULL,
            stderr=self.log or subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.proc.returncode}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/accounts/login/", headers={"X-Forwarded-Proto": "https"})
                conn.getresponse().read()
                conn.close()
                return self  # it answers (any status is an answer)
            except OSError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("gunicorn did not answer within 30 s")

    def __exit__(self, *exc):
        import signal
        import subprocess

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
