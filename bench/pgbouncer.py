#!/usr/bin/env python
"""Many web processes behind PgBouncer (issue 23, part 5).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_h5 \\
      .venv/bin/python bench/pgbouncer.py --verifiers 100,1000 --modes next,submit-and-next

Two gunicorn processes (each --workers x --threads, gthread) on loopback, both on PgBouncer
(>= 1.21: scripts/ensure-pgbouncer.sh) in transaction pooling with prepared statements kept
(`max_prepared_statements`), configured from deploy/pgbouncer/pgbouncer.ini with the host,
port and database replaced. PgBouncer on PostgreSQL: a fresh bench database beside
DATABASE_URL's (`<name>_pgb`, dropped at the end unless --keep-db). At each number of
simulated verifiers (bench/load/driver.py, dealt out between the two servers) and each mode
(`next`: GET next-item + POST judgment; `submit-and-next`: POST judgment?next=1 carrying the
next item), a batch of its own is worked until its queue runs out or --seconds pass, then:

- pairs/s (judgments acknowledged per second), p50/p95 of next and submit;
- the claim statement's runs per request that claims (next-item, or submit-and-next),
  and all SQL statements per request, counted in the app (bench/pgbouncer_count.py);
- PgBouncer's own counters: queries, transactions, client Parse vs server Parse (a
  prepared statement kept is parsed on a server connection once, not per client), the
  most server connections in use and clients waiting;
- exactly-k: items over k, (item, verifier) pairs judged twice, errors, acknowledged =
  stored, and (when the queue ran out) every item at exactly k.

Prints a markdown table and writes bench/out/pgbouncer.json. Loopback only, bounded.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer")
    if not found:
        subprocess.run(["bash", str(ROOT / "scripts" / "ensure-pgbouncer.sh")], check=True)
        found = shutil.which("pgbouncer") or "/usr/local/bin/pgbouncer"
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    minor = int(re.search(r"1\.(\d+)", version).group(1))
    if minor < 21:
        raise SystemExit(f"{version}: max_prepared_statements needs PgBouncer >= 1.21 (scripts/ensure-pgbouncer.sh)")
    return found


class PgBouncer:
    """deploy/pgbouncer/pgbouncer.ini on loopback, in front of the bench database."""

    def __init__(self, *, binary: str, db_host: str, db_port: int, db_name: str, user: str, port: int, pool_size: int,
                 plan: str = "force_generic_plan"):
        self.binary, self.port, self.user = binary, port, user
        self.dir = Path(tempfile.mkdtemp(prefix="dialtom-pgb-"))
        ini = (ROOT / "deploy" / "pgbouncer" / "pgbouncer.ini").read_text()
        ini = ini.replace("host=db port=5432 dbname=dialtom", f"host={db_host} port={db_port} dbname={db_name}")
        ini = ini.replace("plan_cache_mode = force_generic_plan", f"plan_cache_mode = {plan}")
        settings = {
            "listen_addr": "127.0.0.1", "listen_port": str(port), "auth_type": "trust",
            "auth_file": str(self.dir / "userlist.txt"), "admin_users": user, "stats_users": user,
            "default_pool_size": str(pool_size), "logfile": str(self.dir / "pgbouncer.log"),
            "pidfile": str(self.dir / "pgbouncer.pid"),
        }
        for key, value in settings.items():
            ini, n = re.subn(rf"^{key} =.*$", f"{key} = {value}", ini, flags=re.M)
            if not n:
                ini = ini.replace("[pgbouncer]\n", f"[pgbouncer]\n{key} = {value}\n")
        (self.dir / "userlist.txt").write_text(f'"{user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(ini)
        self.proc = None

    def __enter__(self):
        import psycopg

        command = [self.binary, str(self.dir / "pgbouncer.ini")]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root: as the postgres system user
            for path in (self.dir, *self.dir.iterdir()):
                shutil.chown(path, "postgres")
            command[1:1] = ["-u", "postgres"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with self.admin():
                    return self
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError(f"pgbouncer did not start: {(self.dir / 'pgbouncer.log').read_text()[-2000:]}")

    def admin(self):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="pgbouncer", autocommit=True)

    def show(self, what: str) -> list[dict]:
        import psycopg

        with self.admin() as conn:
            cur = conn.cursor()
            cur.execute(f"SHOW {what}", prepare=False)
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        raise psycopg.OperationalError("unreachable")

    def stats(self, database: str) -> dict:
        return next((row for row in self.show("STATS") if row["database"] == database), {})

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PoolWatch(threading.Thread):
    """The most server connections PgBouncer held for the web alias, and clients waiting."""

    def __init__(self, bouncer: PgBouncer, database: str):
        super().__init__(daemon=True)
        self.bouncer, self.database, self.stop = bouncer, database, threading.Event()
        self.max_servers = self.max_waiting = self.max_clients = 0

    def run(self):
        while not self.stop.wait(0.5):
            try:
                for row in self.bouncer.show("POOLS"):
                    if row["database"] == self.database:
                        servers = sum(row.get(k, 0) or 0 for k in ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"))
                        self.max_servers = max(self.max_servers, servers)
                        self.max_waiting = max(self.max_waiting, row.get("cl_waiting", 0) or 0)
                        self.max_clients = max(self.max_clients, (row.get("cl_active", 0) or 0) + (row.get("cl_waiting", 0) or 0))
            except Exception:  # noqa: BLE001 - a missed sample is only a missed sample
                pass


def gunicorn_class():
    from tests.reliability.helpers import Gunicorn

    class SlowStartGunicorn(Gunicorn):
        """The test helper's gunicorn, given 3 tries to answer (30 s each) on a loaded machine."""

        def __enter__(self):
            for attempt in range(3):
                try:
                    return super().__enter__()
                except RuntimeError:
                    self.__exit__()
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")

    return SlowStartGunicorn


def delta(after: dict, before: dict, key: str) -> int:
    return int(after.get(key, 0) or 0) - int(before.get(key, 0) or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verifiers", default="100,1000", help="comma-separated levels")
    parser.add_argument("--modes", default="next", help="next, submit-and-next (comma-separated)")
    parser.add_argument("--items", type=int, default=2400, help="items per level and mode (its queue runs out)")
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--workers", type=int, default=2, help="per gunicorn process")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pool-size", type=int, default=20, help="PgBouncer's server connections per pool")
    parser.add_argument("--plans", default="force_generic_plan",
                        help="plan_cache_mode(s) PgBouncer sets on its server connections: force_generic_plan, auto")
    parser.add_argument("--direct", action="store_true",
                        help="the gunicorn processes straight on PostgreSQL (session pooling; DIALTOM_PLAN_CACHE_MODE per --plans)")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "pgbouncer.json"))
    args = parser.parse_args()
    levels = [int(x) for x in args.verifiers.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    plans = [m.strip() for m in args.plans.split(",")]

    binary = pgbouncer_binary()
    import dj_database_url
    import psycopg

    from bench.queue_load import bench_database, free_port

    base = dj_database_url.parse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom"))
    db_name, admin_url = bench_database("_pgb")
    log(f"bench database {db_name}; {subprocess.run([binary, '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
    from django.db import connection

    from bench.load.driver import run_load
    from bench.load.fixture import check_invariants, load_fixture
    SlowStartGunicorn = gunicorn_class()  # noqa: N806
    results = []
    counters_key = None
    import redis

    from bench.pgbouncer_count import KEY as COUNT_KEY

    counters = redis.Redis.from_url(os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
    counters_key = COUNT_KEY
    try:
        with contextlib.ExitStack() as stack:
            # one PgBouncer per plan_cache_mode, all up at once: the plans alternate within each level and mode
            bouncers = {plan: stack.enter_context(PgBouncer(
                binary=binary, db_host=base["HOST"] or "127.0.0.1", db_port=int(base["PORT"] or 5432), db_name=db_name,
                user=base["USER"] or "postgres", port=free_port(), pool_size=args.pool_size, plan=plan)) for plan in plans}
            for n in levels:
                for mode in modes:
                    for plan, bouncer in bouncers.items():
                        web_url = f"postgres://{base['USER'] or 'postgres'}@127.0.0.1:{bouncer.port}/dialtom"
                        pooling = "transaction"
                        if args.direct:  # the control: straight to PostgreSQL, the plan mode set by the app
                            web_url, pooling = admin_url.rsplit("/", 1)[0] + "/" + db_name, "session"
                        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.pgbouncer_settings", "DATABASE_URL": web_url,
                               "DATABASE_POOLING": pooling, "DIALTOM_PLAN_CACHE_MODE": plan,
                               "CONN_MAX_AGE": "600", "PYTHONPATH": str(ROOT),
                               "CELERY_TASK_DEFAULT_QUEUE": f"{os.environ.get('CELERY_TASK_DEFAULT_QUEUE', 'dialtom-test')}-pgbench"}
                        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
                        batch = f"pgb-{n}-{mode}-{plan[:4]}"
                        started = time.monotonic()
                        tokens = load_fixture(batch=batch, n_verifiers=n, n_items=args.items, overlap=args.overlap, pool=f"pool-{batch}")
                        connection.close()
                        log(f"{n} verifiers, {mode}, {plan}: {args.items} items ready in {time.monotonic() - started:.0f} s")
                        counters.delete(counters_key)
                        before = bouncer.stats("dialtom")
                        watch = PoolWatch(bouncer, "dialtom")
                        with SlowStartGunicorn(env=env, workers=args.workers, threads=args.threads, timeout=120) as one, \
                                SlowStartGunicorn(env=env, workers=args.workers, threads=args.threads, timeout=120) as two:
                            watch.start()
                            stats = run_load(base_url=[one.url, two.url], tokens=tokens, batch=batch, seconds=args.seconds,
                                             max_requests=10 * args.items * args.overlap, retry_rate=0.05, seed=8 + len(results),
                                             submit_and_next=mode == "submit-and-next")
                            watch.stop.set()
                        after = bouncer.stats("dialtom")
                        counted = {k.decode(): int(v) for k, v in counters.hgetall(counters_key).items()}
                        invariants = check_invariants(batch=batch, acknowledged=stats.acknowledged,
                                                      queue_exhausted=stats.finished_verifiers == len(tokens))
                        connection.close()
                        summary = stats.summary()
                        claiming = "submit_next" if mode == "submit-and-next" else "next"
                        claim_requests = counted.get(f"{claiming}:requests", 0) + (counted.get("next:requests", 0) if claiming != "next" else 0)
                        claims = counted.get(f"{claiming}:claim", 0) + (counted.get("next:claim", 0) if claiming != "next" else 0)
                        requests = sum(v for k, v in counted.items() if k.endswith(":requests"))
                        row = {
                            "verifiers": n, "mode": mode, "plan_cache_mode": plan, "direct": args.direct, "items": args.items, "overlap": args.overlap,
                            "gunicorn": f"2 x ({args.workers} workers x {args.threads} threads)",
                            "seconds": summary["seconds"], "pairs": len(stats.acknowledged),
                            "pairs_per_s": round(len(stats.acknowledged) / stats.elapsed, 1) if stats.elapsed else None,
                            "latency_ms": summary["latency_ms"], "statuses": summary["statuses"], "busy_503": summary["busy_503"],
                            "claim_statements_per_claiming_request": round(claims / claim_requests, 3) if claim_requests else None,
                            "sql_per_request": round(sum(v for k, v in counted.items() if k.endswith(":sql")) / requests, 3) if requests else None,
                            "app_counts": counted,
                            "pgbouncer": {
                                "queries": delta(after, before, "total_query_count"),
                                "transactions": delta(after, before, "total_xact_count"),
                                "client_parses": delta(after, before, "total_client_parse_count"),
                                "server_parses": delta(after, before, "total_server_parse_count"),
                                "binds": delta(after, before, "total_bind_count"),
                                "max_server_connections": watch.max_servers, "max_clients_waiting": watch.max_waiting,
                            },
                            "errors": summary["errors"], "n_errors": summary["n_errors"], "invariants": invariants,
                        }
                        results.append(row)
                        log(json.dumps({k: row[k] for k in ("verifiers", "mode", "plan_cache_mode", "pairs_per_s", "claim_statements_per_claiming_request",
                                                             "sql_per_request", "pgbouncer", "n_errors")}))
                        log(f"invariants: {invariants['violations'] or 'all hold'}")
    finally:
        connection.close()
        counters.delete(counters_key)
        if not args.keep_db:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2, default=str))
    print("\n| verifiers | mode | plan_cache_mode | pairs/s | next p50 / p95 ms | submit p50 / p95 ms | claim stmt / claiming req | SQL / req "
          "| PgBouncer server conns (max) | client / server Parse | over k | dup | errors | acked = stored | busy 503 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        lat, inv, pgb = r["latency_ms"], r["invariants"], r["pgbouncer"]
        print(f"| {r['verifiers']} | {r['mode']} | {r['plan_cache_mode']} | {r['pairs_per_s']} | {lat['next']['p50']} / {lat['next']['p95']} "
              f"| {lat['submit']['p50']} / {lat['submit']['p95']} | {r['claim_statements_per_claiming_request']} | {r['sql_per_request']} "
              f"| {pgb['max_server_connections']} | {pgb['client_parses']} / {pgb['server_parses']} | {inv['items_over_k']} "
              f"| {inv['duplicate_pairs']} | {r['n_errors']} | {inv['acknowledged_submissions']} = {inv['stored_judgments']} "
              f"{'yes' if inv['acknowledged_submissions'] == inv['stored_judgments'] else 'NO'} | {r['busy_503']} |")
    broken = [r for r in results if r["invariants"]["violations"] or r["n_errors"]]
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
