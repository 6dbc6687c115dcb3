#!/usr/bin/env python
"""The claim statement's own execution, run by run on a new connection (issue 23, part 5).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_h5 .venv/bin/python bench/claim_plan.py

PostgreSQL plans a prepared statement with its arguments (a custom plan) for the first five
runs on a connection, then keeps the generic plan when it looks no dearer. The claim
statement is ~22 KB of CTEs: planning it is most of its cost. This opens --connections new
connections for each plan_cache_mode (`auto`, PostgreSQL's default, and
`force_generic_plan`, what dialtom_site/db/base.py and deploy/pgbouncer/pgbouncer.ini set)
and times --runs claims on each (each by another verifier, so each claims a new item),
then prints the median per run number and over runs 2-5 (the custom-plan runs after the
first) and 7-N (settled). A fresh bench database beside DATABASE_URL's (`<name>_claimplan`),
dropped at the end.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--connections", type=int, default=6)
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()

    import psycopg

    from bench.queue_load import bench_database

    db_name, admin_url = bench_database("_claimplan")
    try:
        from django.db import connection

        from accounts.models import User
        from bench.load.fixture import load_fixture
        from verification import statements

        n_verifiers = 2 * args.connections * args.runs
        load_fixture(batch="plan-b01", n_verifiers=n_verifiers, n_items=args.items, overlap=3)
        ids = list(User.objects.filter(username__startswith="load-plan-b01-v").order_by("pk").values_list("pk", flat=True))
        times: dict[str, list[list[float]]] = {}
        verifier = iter(ids)
        for mode in ("auto", "force_generic_plan"):
            times[mode] = []
            for _ in range(args.connections):
                connection.close()
                with connection.cursor() as cursor:
                    cursor.execute(f"SET plan_cache_mode = {mode}")
                runs = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    result = statements.claim_next(verifier_id=next(verifier), batch_name="plan-b01")
                    runs.append((time.perf_counter() - started) * 1000)
                    assert result.claim is not None
                times[mode].append(runs)
        connection.close()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')

    def median_of(mode, runs):
        return statistics.median(t for conn in times[mode] for i, t in enumerate(conn, 1) if i in runs)

    print(f"claim statement, ms, median over {args.connections} new connections ({args.items} items)\n")
    print("| run | " + " | ".join(str(i) for i in range(1, args.runs + 1)) + " | runs 2-5 | runs 7+ |")
    print("|---|" + "---|" * (args.runs + 2))
    for mode in times:
        cells = [f"{statistics.median(conn[i] for conn in times[mode]):.1f}" for i in range(args.runs)]
        print(f"| {mode} | " + " | ".join(cells) + f" | {median_of(mode, range(2, 6)):.1f} | {median_of(mode, range(7, args.runs + 1)):.1f} |")
    auto, generic = median_of("auto", range(2, 6)), median_of("force_generic_plan", range(2, 6))
    print(f"\nruns 2-5: generic / auto = {generic / auto:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
