"""The processes a rehearsal runs against: gunicorn on a free loopback port and a Celery
worker with its beat, on this process's database, settings and queue."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(**extra) -> dict:
    """This process's database, settings and queue, for gunicorn and the Celery worker."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres", safe="") + (":" + quote(s["PASSWORD"], safe="") if s.get("PASSWORD") else "")
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}",
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", settings.SETTINGS_MODULE),
        "RELEASE_ROOT": str(settings.RELEASE_ROOT), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
        "CELERY_TASK_DEFAULT_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
    })
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Servers:
    """gunicorn on a free loopback port and a Celery worker with its beat, for a `with` block."""

    def __init__(self, *, env: dict, workers: int, threads: int, log_dir: Path):
        self.env, self.port = env, _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        bin_dir = Path(sys.executable).parent
        self.commands = {
            "gunicorn": [str(bin_dir / "gunicorn"), "dialtom_site.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
                         "--workers", str(workers), "--threads", str(threads), "--timeout", "120",
                         "--graceful-timeout", "5", "--access-logfile", "/dev/null"],
            "celery": [sys.executable, "-m", "celery", "-A", "dialtom_site", "worker", "-B", "--pool", "threads",
                       "--concurrency", "2", "-Q", env["CELERY_TASK_DEFAULT_QUEUE"], "--loglevel", "WARNING",
                       "-s", str(log_dir / "celerybeat-schedule"), "-n", f"rehearsal-{uuid.uuid4().hex[:6]}@%h"],
        }
        self.log_dir, self.procs = log_dir, {}

    def __enter__(self):
        for name, command in self.commands.items():
            log = open(self.log_dir / f"{name}.log", "w")
            self.procs[name] = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=log,
                                                start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.procs["gunicorn"].poll() is not None:
                self.__exit__()
                raise RuntimeError(f"gunicorn exited: see {self.log_dir / 'gunicorn.log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("gunicorn did not answer within 60 s")

    def __exit__(self, *exc):
        for proc in self.procs.values():  # our own process groups only
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
