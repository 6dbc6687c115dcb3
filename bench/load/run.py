"""Long-form load test: >= 100 simulated verifiers doing next/submit against gunicorn + PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_wt8 \\
    .venv/bin/python bench/load/run.py --verifiers 120 --seconds 180 --items 6000 --overlap 3

It creates a scratch database next to DATABASE_URL's (`<name>_loadbench`, dropped first),
migrates it, loads a batch (bench/load/fixture.py), starts gunicorn on a free loopback
port, runs the verifiers (bench/load/driver.py) bounded by --seconds and --max-cycles,
stops gunicorn, checks the invariants and prints one JSON object (last line): latency
percentiles per request kind, throughput, statuses, and the invariants. Exit status 1 if
any invariant is broken or any request failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verifiers", type=int, default=120)
    parser.add_argument("--items", type=int, default=6000)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--max-cycles", type=int, default=200_000, help="next+submit cycles at most, over all verifiers")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--think", type=float, default=0.0, help="max seconds a verifier 'reads' an item (uniform)")
    parser.add_argument("--retry-rate", type=float, default=0.05)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "load.json"))
    args = parser.parse_args()

    import dj_database_url
    import psycopg

    base_url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom")
    cfg = dj_database_url.parse(base_url)
    bench_db = f"{cfg['NAME']}_loadbench"
    admin = base_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{bench_db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{bench_db}"')
    bench_url = base_url.rsplit("/", 1)[0] + "/" + bench_db
    env = {**os.environ, "DATABASE_URL": bench_url, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test",
           "CONN_MAX_AGE": "60", "PYTHONPATH": str(ROOT)}
    os.environ.update(env)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)

    import django

    django.setup()
    from bench.load.driver import run_load
    from bench.load.fixture import check_invariants, load_fixture
    from tests.reliability.helpers import Gunicorn

    started = time.monotonic()
    tokens = load_fixture(batch="load-bench", n_verifiers=args.verifiers, n_items=args.items, overlap=args.overlap)
    setup_seconds = time.monotonic() - started
    from django.db import connection

    connection.close()
    with Gunicorn(env=env, workers=args.workers, threads=args.threads) as server:
        stats = run_load(base_url=server.url, tokens=tokens, batch="load-bench", seconds=args.seconds,
                         max_requests=args.max_cycles, retry_rate=args.retry_rate, think_seconds=args.think)
    invariants = check_invariants(batch="load-bench", acknowledged=stats.acknowledged,
                                  queue_exhausted=stats.finished_verifiers == len(tokens))
    result = {
        "verifiers": args.verifiers, "items": args.items, "overlap": args.overlap, "gunicorn": f"{args.workers}x{args.threads}",
        "setup_seconds": round(setup_seconds, 1), **stats.summary(), "invariants": invariants,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{bench_db}" WITH (FORCE)')
    lat = result["latency_ms"]
    inv = result["invariants"]
    print(f"| {args.verifiers} verifiers, {result['seconds']} s, gunicorn {result['gunicorn']} | value |\n|---|---|")
    print(f"| requests (req/s) | {result['requests']} ({result['throughput_rps']}) |")
    print(f"| submissions acknowledged / stored | {result['acknowledged_submissions']} / {inv['stored_judgments']} |")
    print(f"| retries answered with the same judgment | {result['retries_same_judgment']} |")
    print(f"| items over k / duplicate pairs / errors | {inv['items_over_k']} / {inv['duplicate_pairs']} / {result['n_errors']} |")
    for kind in ("next", "submit", "all"):
        print(f"| latency {kind} p50 / p95 / p99 (ms) | {lat[kind]['p50']} / {lat[kind]['p95']} / {lat[kind]['p99']} |")
    print(f"| invariants | {'all hold' if not inv['violations'] else '; '.join(inv['violations'])} |")
    print(json.dumps(result))
    return 1 if invariants["violations"] or stats.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
