"""Simulated verifiers doing next/submit over HTTP (loopback only, bounded in time and requests).

Standard library only (threads + http.client keep-alive connections), so it runs the same
from the CI test (tests/reliability/test_load_short.py) and from bench/load/run.py.

Each simulated verifier, with its own API token and connection, loops:
  GET  /api/v1/next-item/?batch=NAME   -> 200 (an item, with its claim) or 204 (nothing left)
  POST /api/v1/judgments/              -> 201 (stored) ... and sometimes the SAME post again
                                          (a retry after a timeout)         -> 200 (same judgment)
It records every submission the server acknowledged, so the caller can check that what
was acknowledged is exactly what is stored.

With `submit_and_next`, the answer is POST /api/v1/judgments/?next=1 and its `next_item`
is the next item (null: nothing left; absent: the queue was busy, ask GET next-item). A
503 `busy` (claims contending this instant) is waited out as its Retry-After says (at most
a second) and counted, not an error.
"""
from __future__ import annotations

import json
import random
import threading
import time
import uuid
from dataclasses import dataclass, field

from dialtom_site.loopback import LoopbackClient

CHOICES = ("A", "B", "C", "D", "NONE", "MULTIPLE")


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"next": [], "submit": [], "retry": []})
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    acknowledged: dict[str, int] = field(default_factory=dict)  # idempotency key -> judgment id
    retried_same: int = 0
    busy: int = 0
    retried_different: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    finished_verifiers: int = 0
    requests: int = 0
    started: float = 0.0
    elapsed: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            self.requests += 1
            self.latencies[kind].append(seconds)
            self.statuses.setdefault(kind, {})
            self.statuses[kind][status] = self.statuses[kind].get(status, 0) + 1

    def summary(self) -> dict:
        def pct(values: list[float], p: float) -> float | None:
            if not values:
                return None
            ordered = sorted(values)
            return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] * 1000, 1)

        all_latencies = [x for v in self.latencies.values() for x in v]
        return {
            "requests": self.requests,
            "seconds": round(self.elapsed, 1),
            "throughput_rps": round(self.requests / self.elapsed, 1) if self.elapsed else None,
            "acknowledged_submissions": len(self.acknowledged),
            "retries_same_judgment": self.retried_same,
            "busy_503": self.busy,
            "retries_different_judgment": len(self.retried_different),
            "verifiers_finished_queue": self.finished_verifiers,
            "statuses": {k: {str(s): n for s, n in sorted(v.items())} for k, v in self.statuses.items()},
            "latency_ms": {
                kind: {"p50": pct(v, 50), "p95": pct(v, 95), "p99": pct(v, 99), "max": pct(v, 100), "n": len(v)}
                for kind, v in {**self.latencies, "all": all_latencies}.items()
            },
            "errors": self.errors[:20],
            "n_errors": len(self.errors),
        }


class _Verifier(threading.Thread):
    def __init__(self, *, base_url: str, token: str, batch: str, stats: Stats, deadline: float,
                 budget: threading.Semaphore, retry_rate: float, seed: int, think_seconds: float,
                 submit_and_next: bool = False):
        super().__init__(daemon=True)
        self.client = LoopbackClient(
            base_url, {"Authorization": f"Token {token}", "Content-Type": "application/json", "Host": "127.0.0.1"},
            timeout=60)
        self.batch, self.stats, self.deadline, self.budget = batch, stats, deadline, budget
        self.retry_rate, self.rng, self.think = retry_rate, random.Random(seed), think_seconds
        self.submit_and_next = submit_and_next

    def _busy(self, status: int, data: bytes) -> bool:
        """A 503 `busy`: wait (Retry-After, at most a second) and ask again."""
        if status != 503 or b'"busy"' not in data:
            return False
        with self.stats.lock:
            self.stats.busy += 1
        time.sleep(self.rng.uniform(0.2, 1.0))
        return True

    def run(self) -> None:
        try:
            item = None  # the next item, when submit-and-next's answer carried it
            while time.monotonic() < self.deadline and self.budget.acquire(blocking=False):
                if item is None:
                    status, data, seconds = self.client.request("GET", f"/api/v1/next-item/?batch={self.batch}")
                    self.stats.record("next", status, seconds)
                    if status == 204:
                        with self.stats.lock:
                            self.stats.finished_verifiers += 1
                        return
                    if self._busy(status, data):
                        continue
                    if status != 200:
                        self.stats.errors.append(f"next-item {status}: {data[:200]!r}")
                        continue
                    item = json.loads(data)
                if self.think:
                    time.sleep(self.rng.uniform(0, self.think))
                body = {
                    "claim": item["claim"],
                    "choice": self.rng.choice([c for c in CHOICES if c in item.get("choices", CHOICES) or c in ("NONE", "MULTIPLE")]),
                    "idempotency_key": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
                    "seconds_spent": round(self.rng.uniform(3, 30), 2),
                }
                body["label"] = body["choice"]
                path = "/api/v1/judgments/?next=1" if self.submit_and_next else "/api/v1/judgments/"
                item = None
                status, data, seconds = self.client.request("POST", path, body)
                self.stats.record("submit", status, seconds)
                if status != 201:
                    self.stats.errors.append(f"submit {status}: {data[:200]!r}")
                    continue
                answer = json.loads(data)
                judgment_id = answer["id"]
                with self.stats.lock:
                    self.stats.acknowledged[body["idempotency_key"]] = judgment_id
                if self.submit_and_next and "next_item" in answer:
                    if answer["next_item"] is None:
                        with self.stats.lock:
                            self.stats.finished_verifiers += 1
                        return
                    item = answer["next_item"]
                if self.rng.random() < self.retry_rate:
                    status, data, seconds = self.client.request("POST", "/api/v1/judgments/", body)
                    self.stats.record("retry", status, seconds)
                    if status in (200, 201) and json.loads(data)["id"] == judgment_id:
                        with self.stats.lock:
                            self.stats.retried_same += 1
                    else:
                        self.stats.retried_different.append(f"retry {status}: {data[:200]!r}")
        except Exception as exc:  # noqa: BLE001 - every failure is a finding, reported in the stats
            self.stats.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()


def run_load(*, base_url: str | list[str], tokens: list[str], batch: str, seconds: float, max_requests: int,
             retry_rate: float = 0.05, think_seconds: float = 0.0, seed: int = 8, submit_and_next: bool = False) -> Stats:
    """Run len(tokens) simulated verifiers at once until the time, the request budget (one
    unit per next+submit cycle) or the queue runs out. Returns the stats. Several base URLs
    (servers): the verifiers are dealt out among them."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    stats = Stats()
    budget = threading.Semaphore(max_requests)
    stats.started = time.monotonic()
    deadline = stats.started + seconds
    threads = [
        _Verifier(base_url=urls[i % len(urls)], token=t, batch=batch, stats=stats, deadline=deadline, budget=budget,
                  retry_rate=retry_rate, seed=seed * 1000 + i, think_seconds=think_seconds,
                  submit_and_next=submit_and_next)
        for i, t in enumerate(tokens)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    stats.elapsed = time.monotonic() - stats.started
    return stats
