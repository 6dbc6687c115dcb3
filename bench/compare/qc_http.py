"""A minimal HTTP/1.1 keep-alive client on asyncio streams (standard library only).

The load client of bench/queue_compare.py must cost much less CPU than the servers it
measures, on the same 2 cores: one coroutine per annotator, each with its own kept-alive
connection, and nothing between the socket and the JSON but a status line, headers and a
Content-Length (or chunked) body. Loopback only.
"""
from __future__ import annotations

import asyncio
import json

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class HTTPError(Exception):
    pass


class Connection:
    """One kept-alive connection to host:port; reconnects once when the server closed it."""

    def __init__(self, host: str, port: int, *, timeout: float = 60.0):
        if host not in LOOPBACK:
            raise ValueError("loopback only")
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, *, headers: dict[str, str] | None = None,
                      body: object = None) -> tuple[int, bytes]:
        """Send one request; returns (status, body bytes)."""
        payload = b"" if body is None else json.dumps(body).encode()
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append("Content-Type: application/json")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(payload)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
        for attempt in (1, 2):
            fresh = self.writer is None
            if fresh:
                await self._open()
            try:
                self.writer.write(raw)
                return await asyncio.wait_for(self._response(method), self.timeout)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                # A kept-alive connection the server had closed before reading this request.
                self.close()
                if fresh or attempt == 2:
                    raise HTTPError(f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    async def _response(self, method: str) -> tuple[int, bytes]:
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, _, header_block = head.partition(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length, chunked, close = None, False, False
        for line in header_block.split(b"\r\n"):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            data = b""
        elif chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            data = b"".join(parts)
        elif length is not None:
            data = await self.reader.readexactly(length)
        else:
            data = await self.reader.read()
            close = True
        if close:
            self.close()
        return status, data
