"""Bench: `/review/verifiers/` (and its CSV and API) against the login page, in the same run (issue 23).

    .venv/bin/python bench/verifier_pages.py --sizes 40k,400k --db-suffix _h2

On the sets of `bench/scale.py` (`dialtom_scale_<size>` + `--db-suffix`: a copy, migrated, its
summaries built once with `manage.py verifier_summaries_rebuild`; the bench never writes to it).
Each size in its own process (`--measure SIZE`), through Django's test client, staff logged in:
`--rounds` rounds, each requesting the login page (anonymous) and then every staff door in turn,
so both see the same machine; the p50 of each, and its ratio to the login page's p50. Then, for
each door, the SQL statements one request runs and the plan of each (EXPLAIN ANALYZE, BUFFERS),
a `Seq Scan` on a table of more than 10,000 rows reported. Results: `results/verifier_pages.md`
(and `.json`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PG = os.environ.get("SCALE_PG", "postgres://postgres@127.0.0.1:5432/")

DOORS = {
    "verifiers page": "/review/verifiers/",
    "verifiers page, one batch": "/review/verifiers/?batch={batch}",
    "verifiers page, one task": "/review/verifiers/?task=prospective&sort=pairwise",
    "pairs CSV": "/review/verifiers/pairs.csv",
    "pairs API": "/api/v1/verifier-pairs/",
}
LOGIN = "/accounts/login/"


def _django(db: str) -> None:
    os.environ["SCALE_DB"] = db
    os.environ["DATABASE_URL"] = PG + db
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.scale_settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def measure(size: str, db: str, *, rounds: int) -> dict:
    _django(db)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.models import User
    from annotation.models import Batch
    from bench.scale import _explain_again, _large_tables, seq_scans
    from verification.models import VerifierPairTotal

    if not VerifierPairTotal.objects.exists():
        raise SystemExit(f"{db}: no summaries; run manage.py verifier_summaries_rebuild on it first")
    batch = Batch.objects.filter(status="closed").order_by("name").values_list("name", flat=True).first()
    doors = {name: url.format(batch=batch) for name, url in DOORS.items()}
    anonymous, staff = Client(), Client()
    staff.force_login(User.objects.get(username="scale-staff"))

    def get(client, url):
        t0, c0 = time.perf_counter(), time.thread_time()
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
        cpu[url] = time.thread_time() - c0
        return time.perf_counter() - t0, len(response.content)

    cpu: dict[str, float] = {}

    for _ in range(2):  # warm-up: plans, caches
        get(anonymous, LOGIN)
        for url in doors.values():
            get(staff, url)
    times = {"login page": []}
    times.update({name: [] for name in doors})
    cpus = {name: [] for name in times}
    sizes = {}
    for _ in range(rounds):
        times["login page"].append(get(anonymous, LOGIN)[0])
        cpus["login page"].append(cpu[LOGIN])
        for name, url in doors.items():
            seconds, sizes[name] = get(staff, url)
            times[name].append(seconds)
            cpus[name].append(cpu[url])
    login = statistics.median(times["login page"])
    login_cpu = statistics.median(cpus["login page"])
    large = _large_tables()
    out = {"size": size, "db": db, "rounds": rounds, "login_p50_ms": login * 1000, "login_cpu_p50_ms": login_cpu * 1000,
           "load": os.getloadavg()[0], "doors": {}}
    for name, url in doors.items():
        with CaptureQueriesContext(connection) as captured:
            get(staff, url)
        statements = [q["sql"] for q in captured.captured_queries]
        plans = []
        for sql in statements:
            if "django_session" in sql or "accounts_user" in sql and "WHERE \"accounts_user\".\"id\" = " in sql:
                continue  # the session and the user: every page pays them
            plan = _explain_again(sql)
            plans.append({"sql": sql, "plan": plan, "seq_scans": seq_scans(plan, large)})
        p50, cpu50 = statistics.median(times[name]), statistics.median(cpus[name])
        out["doors"][name] = {
            "url": url, "p50_ms": p50 * 1000, "x_login": p50 / login, "cpu_p50_ms": cpu50 * 1000, "cpu_x_login": cpu50 / login_cpu,
            "statements": len(statements), "bytes": sizes[name],
            "seq_scans": sorted({s for p in plans for s in p["seq_scans"]}), "plans": plans,
        }
        print(f"  {size} {name}: p50 {p50 * 1000:.1f} ms = {p50 / login:.1f}× login ({login * 1000:.2f} ms); "
              f"Python CPU {cpu50 * 1000:.1f} ms = {cpu50 / login_cpu:.1f}× login's ({login_cpu * 1000:.2f} ms), "
              f"{len(statements)} statements, {sizes[name]:,} bytes, Seq Scans on large tables: {out['doors'][name]['seq_scans'] or 'none'}",
              flush=True)
    return out


def report(results: dict, command: str) -> str:
    sizes = list(results)
    lines = ["# /review/verifiers/ against the login page (issue 23)", "", f"`{command}`", "",
             "p50 of each door over the rounds (wall), its ratio to the login page's p50 measured in the same run, the same for the",
             "request's own CPU time in the web process (steadier on a shared machine: no time waiting for a core), statements per request.",
             "Load average at the end of each size: " + ", ".join(f"{s} {results[s].get('load', 0):.1f}" for s in sizes) + ".", ""]
    head = "| door | " + " | ".join(f"{s} p50 ms | {s} × login | {s} CPU × login | {s} statements" for s in sizes)
    if len(sizes) > 1:
        head += f" | {sizes[0]}→{sizes[-1]} |"
    lines += [head, "|" + "---|" * (1 + 4 * len(sizes) + (1 if len(sizes) > 1 else 0))]
    lines.append("| login page | " + " | ".join(f"{results[s]['login_p50_ms']:.2f} | 1 | 1 | – " for s in sizes)
                 + (f"| ×{results[sizes[-1]]['login_p50_ms'] / results[sizes[0]]['login_p50_ms']:.2f} |" if len(sizes) > 1 else "|"))
    for name in DOORS:
        cells = []
        for s in sizes:
            d = results[s]["doors"][name]
            cells.append(f"{d['p50_ms']:.1f} | {d['x_login']:.1f} | {d['cpu_x_login']:.1f} | {d['statements']}")
        growth = ""
        if len(sizes) > 1:
            growth = f" ×{results[sizes[-1]]['doors'][name]['p50_ms'] / results[sizes[0]]['doors'][name]['p50_ms']:.2f} |"
        lines.append(f"| {name} | " + " | ".join(cells) + " |" + growth)
    lines += ["", "Seq Scans on a table of more than 10,000 rows: "
              + ("; ".join(f"{s} {n}: {', '.join(d['seq_scans'])}" for s in sizes for n, d in results[s]["doors"].items() if d["seq_scans"])
                 or "none."), ""]
    biggest = sizes[-1]
    door = results[biggest]["doors"]["verifiers page"]
    slowest = max(door["plans"], key=lambda p: _execution_ms(p["plan"]), default=None)
    if slowest:
        lines += [f"The page's slowest statement at {biggest}:", "", "```sql", slowest["sql"], "```", "", "```", slowest["plan"], "```", ""]
    return "\n".join(lines)


def _execution_ms(plan: str) -> float:
    for line in plan.splitlines():
        if line.strip().startswith("Execution Time:"):
            return float(line.split(":")[1].split()[0])
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="40k,400k")
    parser.add_argument("--db-suffix", default="", help="measure dialtom_scale_<size><suffix> (a copy)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--measure", metavar="SIZE", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        result = measure(args.measure, f"dialtom_scale_{args.measure}{args.db_suffix}", rounds=args.rounds)
        Path(args.out).write_text(json.dumps(result))
        return 0
    results = {}
    for size in args.sizes.split(","):
        out = Path(f"/tmp/verifier_pages_{size}{args.db_suffix}.json")
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", size, "--db-suffix", args.db_suffix,
                        "--rounds", str(args.rounds), "--out", str(out)], check=True)
        results[size] = json.loads(out.read_text())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "verifier_pages.json").write_text(json.dumps(results, indent=1))
    text = report(results, ".venv/bin/python bench/verifier_pages.py " + " ".join(sys.argv[1:]))
    (RESULTS / "verifier_pages.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
