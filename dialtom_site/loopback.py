"""A keep-alive HTTP/1.1 client to a server on this machine, for the load drivers that play
verifiers against the studio (bench/load/driver.py, the rehearsal in report/rehearsal.py):
no traffic leaves loopback."""
from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class LoopbackClient:
    """One keep-alive connection; `request` answers (status, body, seconds)."""

    def __init__(self, base_url: str, headers: dict, *, timeout: float = 120):
        parts = urlsplit(base_url)
        assert parts.hostname in LOOPBACK, "loopback only"
        self.host, self.port, self.headers, self.timeout, self.conn = parts.hostname, parts.port or 80, headers, timeout, None

    def request(self, method: str, path: str, body=None) -> tuple[int, bytes, float]:
        payload = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=payload, headers=self.headers)
                response = self.conn.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return response.status, data, time.perf_counter() - started
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()  # a kept-alive connection the server closed: nothing was processed
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
