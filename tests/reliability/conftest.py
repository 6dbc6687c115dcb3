import subprocess
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .helpers import free_port


def _probe(port: int, timeout: float) -> redis.Redis:
    """A client that reports a refused connection at once (redis-py retries with backoff by default)."""
    return redis.Redis(port=port, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))


class SpareRedis:
    """A Redis of our own on a spare port: we may stop it without hurting anyone."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--pidfile", f"/tmp/dialtom-wt8-redis-{self.port}.pid"],
            check=True, capture_output=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if _probe(self.port, 0.5).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("spare redis did not start")

    def stop(self):
        try:
            _probe(self.port, 1).shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # shutdown closes the connection under us, or it was already down
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                _probe(self.port, 0.2).ping()
                time.sleep(0.05)
            except redis.ConnectionError:
                return

    def kill(self):
        """SIGKILL, as a crashed or OOM-killed Redis: no goodbye to its clients."""
        import os
        import signal

        pidfile = f"/tmp/dialtom-wt8-redis-{self.port}.pid"
        try:
            with open(pidfile) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.up:
            time.sleep(0.05)

    @property
    def up(self) -> bool:
        try:
            return bool(_probe(self.port, 0.5).ping())
        except redis.ConnectionError:
            return False


@pytest.fixture
def spare_redis():
    server = SpareRedis()
    server.start()
    yield server
    server.stop()
