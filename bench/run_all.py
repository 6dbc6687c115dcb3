#!/usr/bin/env python
"""Run every benchmark in turn (`make bench`); each prints its own Markdown table.

Each benchmark makes its own database (named below) so it never touches your data, and
writes nothing into the repository: copy the figures into bench/results/ by hand when
they are worth keeping. Quote ratios measured in one run: this machine is shared.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432/"

BENCHMARKS = [
    ("imports", ["bench/bench_imports.py"], "dialtom_bench_imports"),
    ("dialtom pool import", ["bench/dialtom_pool.py"], "dialtom_bench_pool"),
    ("aggregation", ["bench/aggregate.py"], "dialtom_bench_aggregate"),
    ("release export", ["bench/release_export.py"], "dialtom_bench_release"),
    ("scoring", ["bench/scoring.py"], "dialtom_bench_scoring"),
    ("verification queue", ["bench/queue_load.py"], "dialtom_bench_queue"),
    ("load (100+ verifiers)", ["bench/load/run.py", "--verifiers", "120", "--seconds", "120"], "dialtom_bench_load"),
]


def main() -> int:
    only = set(sys.argv[1:])
    failed = []
    for name, command, database in BENCHMARKS:
        if only and name.split()[0] not in only:
            continue
        print(f"\n## {name}\n", flush=True)
        env = {**os.environ, "DATABASE_URL": PG + database}
        if subprocess.run([sys.executable, *command], cwd=ROOT, env=env).returncode:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
