"""The simulated annotators of bench/queue_compare.py: one coroutine per annotator, each
with its own API token and kept-alive connection, in one or a few client processes.

A phase: every client process runs its annotators without a pause for `warmup` + `seconds`;
only the requests and pairs that complete in the last `seconds` (the window) count, and the
caller snapshots the servers' CPU when the window opens and closes, so the figures are those
of a steady state (no ramp-up, no tail). Annotators start no new cycle after the window.

Kinds of annotator loop (each cycle = one next + submit "pair"); an annotator told that
nothing is left for it (studio 204, Label Studio 404) moves on to the next batch/project of
its list, as a verifier does when a batch of the corpus is done:
  studio       GET /api/v1/next-item/?batch=B -> POST /api/v1/judgments/
  studio_next  POST /api/v1/judgments/?next=1 answers and carries the next item (one request
               per pair once the first item is in hand; a GET when it carries none)
  ls           GET /api/projects/P/next/ -> POST /api/tasks/T/annotations/?project=P
  bare         GET /bench/bare-sql/?id=N twice (a pair is two requests, as the others)
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import time
import uuid
from dataclasses import dataclass, field

from qc_http import Connection, HTTPError

LS_RESULT = [{"from_name": "choice", "to_name": "text", "type": "choices", "value": {"choices": ["A"]}}]


@dataclass
class Tally:
    """What one client process saw in the measured window."""

    latencies: dict = field(default_factory=dict)  # kind -> [ms]
    pair_ms: list = field(default_factory=list)
    statuses: dict = field(default_factory=dict)  # "kind status" -> n
    errors: list = field(default_factory=list)
    n_errors: int = 0
    pairs: int = 0
    requests: int = 0
    exhausted: int = 0  # annotators told there is nothing left
    keys: list = field(default_factory=list)  # acknowledged idempotency keys (studio)
    window: tuple = (0.0, float("inf"))  # what completes outside it (warm-up, the tail) is not counted

    def counts(self) -> bool:
        return self.window[0] <= time.monotonic() <= self.window[1]

    def record(self, kind: str, status: int, ms: float) -> None:
        if self.counts():
            self.requests += 1
            self.latencies.setdefault(kind, []).append(ms)
            key = f"{kind} {status}"
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def pair(self, ms: float, key: str | None = None) -> None:
        if self.counts():
            self.pairs += 1
            self.pair_ms.append(ms)
            if key:
                self.keys.append(key)

    def error(self, message: str) -> None:
        if self.counts():
            self.n_errors += 1
            if len(self.errors) < 10:
                self.errors.append(message[:300])


async def _timed(conn: Connection, method: str, path: str, headers: dict, body=None):
    started = time.perf_counter()
    try:
        status, data = await conn.request(method, path, headers=headers, body=body)
    except (HTTPError, asyncio.TimeoutError, OSError) as exc:
        return None, repr(exc).encode(), (time.perf_counter() - started) * 1000
    return status, data, (time.perf_counter() - started) * 1000


async def _studio(conn, spec, token, tally: Tally, deadline: float, rng: random.Random) -> None:
    headers = {"Authorization": f"Token {token}"}
    batches = iter(spec["batches"])
    next_path = f"/api/v1/next-item/?batch={next(batches)}"
    while time.monotonic() < deadline:
        status, data, ms_next = await _timed(conn, "GET", next_path, headers)
        tally.record("next", status, ms_next)
        if status == 204:  # nothing left for this annotator in this batch: on to the next one
            name = next(batches, None)
            if name is None:
                tally.exhausted += 1
                return
            next_path = f"/api/v1/next-item/?batch={name}"
            continue
        if status != 200:
            tally.error(f"next {status}: {data[:200]!r}")
            await asyncio.sleep(0.05)
            continue
        claim = json.loads(data).get("claim")
        if claim is None:
            tally.error(f"next 200 without a claim: {data[:200]!r}")
            continue
        key = str(uuid.uuid4())
        body = {"claim": claim, "choice": "A", "idempotency_key": key}
        status, data, ms_submit = await _timed(conn, "POST", "/api/v1/judgments/", headers, body)
        tally.record("submit", status, ms_submit)
        if status != 201:
            tally.error(f"submit {status}: {data[:200]!r}")
            continue
        tally.pair(ms_next + ms_submit, key)


async def _studio_next(conn, spec, token, tally: Tally, deadline: float, rng: random.Random) -> None:
    headers = {"Authorization": f"Token {token}"}
    batches = iter(spec["batches"])
    next_path = f"/api/v1/next-item/?batch={next(batches)}"
    item = None
    while time.monotonic() < deadline:
        ms_next = 0.0
        if item is None:
            status, data, ms_next = await _timed(conn, "GET", next_path, headers)
            tally.record("next", status, ms_next)
            if status == 204:
                name = next(batches, None)
                if name is None:
                    tally.exhausted += 1
                    return
                next_path = f"/api/v1/next-item/?batch={name}"
                continue
            if status != 200:
                tally.error(f"next {status}: {data[:200]!r}")
                await asyncio.sleep(0.05)
                continue
            item = json.loads(data)
            if "claim" not in item:
                tally.error(f"next 200 without a claim: {data[:200]!r}")
                item = None
                continue
        key = str(uuid.uuid4())
        body = {"claim": item["claim"], "choice": "A", "idempotency_key": key}
        status, data, ms = await _timed(conn, "POST", "/api/v1/judgments/?next=1", headers, body)
        tally.record("submit+next", status, ms)
        item = None
        if status != 201:
            tally.error(f"submit+next {status}: {data[:200]!r}")
            continue
        tally.pair(ms_next + ms, key)
        item = json.loads(data).get("next_item")


async def _ls(conn, spec, token, tally: Tally, deadline: float, rng: random.Random) -> None:
    headers = {"Authorization": f"Token {token}"}
    projects = iter(spec["projects"])
    project = next(projects)
    while time.monotonic() < deadline:
        status, data, ms_next = await _timed(conn, "GET", f"/api/projects/{project}/next/", headers)
        tally.record("next", status, ms_next)
        if status == 404:  # no task left for this annotator in this project: on to the next one
            project = next(projects, None)
            if project is None:
                tally.exhausted += 1
                return
            continue
        if status != 200:
            tally.error(f"next {status}: {data[:200]!r}")
            await asyncio.sleep(0.05)
            continue
        task = json.loads(data)["id"]
        body = {"result": LS_RESULT, "lead_time": round(rng.uniform(3, 30), 2)}
        status, data, ms_submit = await _timed(conn, "POST", f"/api/tasks/{task}/annotations/?project={project}", headers, body)
        tally.record("submit", status, ms_submit)
        if status != 201:
            tally.error(f"submit {status}: {data[:200]!r}")
            continue
        tally.pair(ms_next + ms_submit)


async def _bare(conn, spec, token, tally: Tally, deadline: float, rng: random.Random) -> None:
    ids = spec["ids"]
    while time.monotonic() < deadline:
        total, ok = 0.0, True
        for _ in range(2):
            status, data, ms = await _timed(conn, "GET", f"/bench/bare-sql/?id={rng.randint(*ids)}", {})
            tally.record("bare", status, ms)
            total += ms
            if status != 200:
                tally.error(f"bare {status}: {data[:200]!r}")
                ok = False
        if ok:
            tally.pair(total)


LOOPS = {"studio": _studio, "studio_next": _studio_next, "ls": _ls, "bare": _bare}


async def _client(spec: dict, tokens: list[str], warmup: float, seconds: float, go, t0) -> dict:
    loop_fn = LOOPS[spec["kind"]]
    conns = [Connection("127.0.0.1", spec["port"]) for _ in tokens]
    rngs = [random.Random(os.getpid() * 1000 + i) for i in range(len(tokens))]
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, go.wait)
    opens = t0.value + warmup
    tally = Tally(window=(opens, opens + seconds))
    cpu = {}
    loop.call_at(loop.time() + max(0.0, opens - time.monotonic()), lambda: cpu.setdefault("open", time.process_time()))
    loop.call_at(loop.time() + max(0.0, opens + seconds - time.monotonic()),
                 lambda: cpu.setdefault("close", time.process_time()))
    await asyncio.gather(*(loop_fn(c, spec, t, tally, opens + seconds, r) for c, t, r in zip(conns, tokens, rngs)))
    for c in conns:
        c.close()
    await asyncio.sleep(max(0.0, opens + seconds - time.monotonic()) + 0.01)
    cpu.setdefault("open", time.process_time())
    cpu.setdefault("close", time.process_time())
    return {**tally.__dict__, "cpu_s": cpu["close"] - cpu["open"]}


def _child(spec, tokens, warmup, seconds, go, t0, out) -> None:
    try:
        out.put(asyncio.run(_client(spec, tokens, warmup, seconds, go, t0)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the phase
        out.put({"fatal": repr(exc)})


def run_phase(spec: dict, tokens: list[str], *, seconds: float, warmup: float, procs: int,
              on_open=None, on_close=None) -> dict:
    """Run len(tokens) annotators of spec["kind"] against spec["port"] for warmup + seconds, all
    the time at full concurrency; only what completes in the last `seconds` (the window) counts.
    `on_open()` and `on_close()` are called when the window opens and closes (the caller's CPU
    snapshots of the servers). Returns the merged tally, the window's length and the client
    processes' CPU seconds in it."""
    ctx = multiprocessing.get_context("fork")
    procs = max(1, min(procs, len(tokens)))
    go, t0, out = ctx.Event(), ctx.Value("d", 0.0), ctx.Queue()
    shares = [tokens[i::procs] for i in range(procs)]
    children = [ctx.Process(target=_child, args=(spec, share, warmup, seconds, go, t0, out), daemon=True)
                for share in shares]
    for child in children:
        child.start()
    try:
        time.sleep(0.2)  # the children reach go.wait()
        t0.value = time.monotonic()
        go.set()
        opens = t0.value + warmup
        time.sleep(max(0.0, opens - time.monotonic()))
        if on_open is not None:
            on_open()
        time.sleep(max(0.0, opens + seconds - time.monotonic()))
        if on_close is not None:
            on_close()
        results = [out.get(timeout=300) for _ in children]
    finally:
        for child in children:
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
    fatal = [r["fatal"] for r in results if "fatal" in r]
    if fatal:
        raise RuntimeError(f"client process failed: {fatal[0]}")
    merged = Tally()
    for r in results:
        for kind, values in r["latencies"].items():
            merged.latencies.setdefault(kind, []).extend(values)
        for key, n in r["statuses"].items():
            merged.statuses[key] = merged.statuses.get(key, 0) + n
        merged.pair_ms.extend(r["pair_ms"])
        merged.errors.extend(r["errors"])
        merged.keys.extend(r["keys"])
        for name in ("n_errors", "pairs", "requests", "exhausted"):
            setattr(merged, name, getattr(merged, name) + r[name])
    return {**merged.__dict__, "errors": merged.errors[:10], "client_cpu_s": sum(r["cpu_s"] for r in results),
            "window_s": seconds, "client_procs": procs}
