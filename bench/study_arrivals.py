"""Study arrivals under load (issue 24): N participants arrive through a Prolific study link
within a time window, against gunicorn + PostgreSQL (a database of its own), and each must
reach a first item.

Open loop: arrival i starts at i × window / N seconds, whatever the server's pace. An
arrival is `GET /s/<token>/?PROLIFIC_PID=…` (account found or made, logged in, 302) and
then `GET /s/<token>/work/` with the session cookie (the first item claimed and shown): the
time from the first byte sent to the item page is what is measured. A share of the ids
arrives twice at the same instant (two tabs, a double click): they must land on one account
and one claim.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_h6 \\
    .venv/bin/python bench/study_arrivals.py --arrivals 500 --window 60

Writes bench/results/study_arrivals.md.
"""
import argparse
import http.client
import os
import re
import secrets
import sys
import threading
import time
from datetime import datetime, timezone
from http.cookies import SimpleCookie
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.queue_load import bench_database, free_port, percentile, start_gunicorn  # noqa: E402

CLAIM = re.compile(rb'name="claim" value="([0-9a-f-]{36})"')


def setup_database(args) -> dict:
    db_name, admin_url = bench_database("_studybench")
    from annotation.models import Batch, Context, Item
    from studies.services import study_create
    from verification.services import batch_queue_sync

    batch = Batch.objects.create(name="study-bench-b01", overlap=3)
    turns = [{"speaker": "initiator", "text": "So what brings you here today? " * 5},
             {"speaker": "recipient", "text": "My doctor said I should cut down on drinking. " * 5}]
    contexts = Context.objects.bulk_create(
        [Context(context_id=f"mi-s{i:05d}-w00", domain_id="mi", session_key=f"mi-s{i:05d}", window_index=0, turns=turns,
                 n_words=80) for i in range(args.items)]
    )
    Item.objects.bulk_create(
        [Item(item_id=f"{c.context_id}-trust", context=c, task="retrospective", attribute="trust", target_speaker="recipient",
              question="How much does the client trust the counselor at this point?",
              options=[f"option {n} of {c.context_id}" for n in "ABCD"], answer="C", batch=batch) for c in contexts]
    )
    batch_queue_sync(batch=batch)
    study = study_create(name="bench", platform="prolific", batches=[batch.name], quota=10,
                         completion_code="BENCH001", pay_per_item="0.10")
    return {"db": db_name, "token": study.token, "admin_url": admin_url}


class Arrival(threading.Thread):
    def __init__(self, port, token, pid, start_at, session):
        super().__init__(daemon=True)
        self.port, self.token, self.pid, self.start_at, self.session = port, token, pid, start_at, session
        self.ms, self.error, self.claim = None, None, None

    def run(self):
        delay = self.start_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        begin = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            conn.request("GET", f"/s/{self.token}/?PROLIFIC_PID={self.pid}&STUDY_ID=benchstudy&SESSION_ID={self.session}",
                         headers={"User-Agent": "study-arrivals-bench"})
            first = conn.getresponse()
            first.read()
            if first.status != 302:
                raise RuntimeError(f"arrival answered {first.status}")
            jar = SimpleCookie()
            for value in first.headers.get_all("Set-Cookie") or []:
                jar.load(value)
            cookie = "; ".join(f"{k}={m.value}" for k, m in jar.items())
            conn.request("GET", first.headers["Location"], headers={"Cookie": cookie, "User-Agent": "study-arrivals-bench"})
            page = conn.getresponse()
            body = page.read()
            found = CLAIM.search(body)
            if page.status != 200 or not found:
                raise RuntimeError(f"work page answered {page.status} without an item")
            self.claim = found.group(1).decode()
            self.ms = (time.perf_counter() - begin) * 1000
            conn.close()
        except Exception as exc:  # noqa: BLE001 — counted and reported
            self.error = f"{type(exc).__name__}: {exc}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrivals", type=int, default=500)
    parser.add_argument("--window", type=float, default=60.0, help="seconds the arrivals are spread over")
    parser.add_argument("--twins", type=float, default=0.1, help="share of arrivals that are a second tab of another")
    parser.add_argument("--items", type=int, default=400, help="items in the study's batch (k = 3 each)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "study_arrivals.md"))
    args = parser.parse_args()
    os.environ.setdefault("QUEUE_BENCH_CELERY_QUEUE", "dialtom-study-bench")
    setup = setup_database(args)
    port = free_port()
    server = start_gunicorn(args, port)
    try:
        twins = int(args.arrivals * args.twins)
        singles = args.arrivals - 2 * twins
        ids = [secrets.token_hex(12) for _ in range(singles + twins)]
        plan = [(pid, 0) for pid in ids] + [(pid, 1) for pid in ids[singles:]]  # a twin: the same id, again
        plan.sort(key=lambda p: ids.index(p[0]))
        t0 = time.monotonic() + 1.0
        step = args.window / max(1, len(ids))
        arrivals = [Arrival(port, setup["token"], pid, t0 + ids.index(pid) * step, f"sess{n}") for pid, n in plan]
        started = time.monotonic()
        for a in arrivals:
            a.start()
        for a in arrivals:
            a.join(timeout=args.window + 120)
        wall = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    from accounts.models import User
    from studies.models import Entry, Participant

    latencies = [a.ms for a in arrivals if a.ms is not None]
    errors = [a.error for a in arrivals if a.error]
    participants = Participant.objects.count()
    accounts = User.objects.filter(username__startswith="study~").count()
    by_pid: dict[str, set] = {}
    for a in arrivals:
        if a.claim:
            by_pid.setdefault(a.pid, set()).add(a.claim)
    split_twins = sum(1 for claims in by_pid.values() if len(claims) > 1)
    result = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "arrivals": len(arrivals), "ids": len(ids), "twins": twins, "window": args.window, "wall": round(wall, 1),
        "p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1),
        "max": round(max(latencies), 1) if latencies else None, "reached": len(latencies), "errors": len(errors),
        "participants": participants, "accounts": accounts, "duplicates": accounts - len(ids),
        "twins_split": split_twins, "entries": Entry.objects.count(),
        "gunicorn": f"{args.workers} workers × {args.threads} threads (gthread)",
        "load": os.getloadavg()[0],
    }
    report = f"""# Study arrivals (issue 24)

{result['when']}, {result['gunicorn']} on 127.0.0.1, PostgreSQL database `{setup['db']}` (own), 2 shared cores
(load average at the end: {result['load']:.1f}).

{result['arrivals']} arrivals through a Prolific link over {args.window:.0f} s (open loop: arrival i at i × window / ids),
{result['ids']} distinct ids, of which {twins} arrive twice at the same instant (a second tab). An arrival is the link
(account found or made, logged in) and then the work page with its first item claimed; measured from the first byte
sent to the item page received.

| arrivals | reached a first item | errors | p50 ms | p95 ms | max ms | accounts | duplicate accounts | twins on two claims | entries logged |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| {result['arrivals']} | {result['reached']} | {result['errors']} | {result['p50']} | {result['p95']} | {result['max']} | {result['accounts']} | {result['duplicates']} | {result['twins_split']} | {result['entries']} |

Rerun: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/study_arrivals.py --arrivals 500 --window 60`
"""
    if errors:
        report += "\nFirst errors:\n\n" + "\n".join(f"- {e}" for e in errors[:5]) + "\n"
    Path(args.out).write_text(report)
    print(report)
    with __import__("psycopg").connect(setup["admin_url"], autocommit=True) as conn:
        from django.db import connections

        connections.close_all()
        conn.execute(f'DROP DATABASE IF EXISTS "{setup["db"]}" WITH (FORCE)')
    return 0 if not errors and result["duplicates"] == 0 and not split_twins else 1


if __name__ == "__main__":
    sys.exit(main())
