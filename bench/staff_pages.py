"""Benchmark: what a staff page costs against the login page, at 40k and 400k items (issue 23).

    SCALE_DB=dialtom_scale_40k_h1 .venv/bin/python bench/staff_pages.py --size 40k
    .venv/bin/python bench/staff_pages.py --sizes 40k,400k --db-suffix _h1     # each size in its own process

It runs on the scale sets of `bench/scale.py` (a copy: `createdb -T dialtom_scale_400k …`, then
`manage.py migrate`, which fills the summaries). In one process, in-process through Django's test
client, alternating the pages round by round: the login page (anonymous GET), the dashboard
(`/dashboard/`), each of its sections (`/dashboard/fragment/<name>/`), a section's poll with
the version it shows (`?v=…`, answered 204 while unchanged), `/review/flags/`, `/releases/`.
Per page: median seconds, ratio to the login page's median in the same run, SQL statements,
bytes of HTML, the slowest statement with its plan (EXPLAIN ANALYZE), and every `Seq Scan` on a
table of more than 10,000 rows in the plans of all its statements. Then an idle open dashboard:
one poll round (its 6 sections, each with its version) every 10 s, as CPU seconds of this
process plus the database backend's (pg_stat_statements is not needed: the round's wall time,
all synchronous, bounds both) over 10 s: the share of one core.
Results: `bench/results/staff_pages-<size>.json` and `bench/results/staff_pages.md`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SECTIONS = ("progress", "agreement", "retention", "people", "run", "releases")
BIG = 10_000


def _setup(db: str):
    os.environ["SCALE_DB"] = db
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.scale_settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _big_tables() -> set[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND reltuples > %s", [BIG])
        return {r[0] for r in cursor.fetchall()}


def _explain(sql: str, *, analyze: bool = False) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {'(ANALYZE, BUFFERS) ' if analyze else ''}{sql}")
        return "\n".join(r[0] for r in cursor.fetchall())


def measure(size: str, *, rounds: int) -> dict:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.models import User

    staff = Client()
    staff.force_login(User.objects.get(username="scale-staff"))
    anonymous = Client()
    pages = {"login": (anonymous, "/accounts/login/"), "dashboard": (staff, "/dashboard/")}
    for name in SECTIONS:
        pages[f"fragment:{name}"] = (staff, f"/dashboard/fragment/{name}/")
    pages["fragment:staffing (lazy)"] = (staff, "/dashboard/fragment/staffing/")
    pages["fragment:agreement_groups (lazy)"] = (staff, "/dashboard/fragment/agreement_groups/")
    pages["review/flags"] = (staff, "/review/flags/")
    pages["releases"] = (staff, "/releases/")
    from releases.models import Release, ReleaseStatus

    latest = Release.objects.filter(status=ReleaseStatus.READY).order_by("-created_at", "-id").first()
    if latest is not None:  # a release of the whole set (bench/release_copy.py, or `manage.py make_release`)
        pages["release page"] = (staff, f"/releases/{latest.version}/")
        pages["report of a release"] = (staff, f"/report/?release={latest.version}")
    versions = {}
    for name in SECTIONS:
        html = staff.get(f"/dashboard/fragment/{name}/").content.decode()
        found = re.search(r'[?&](?:amp;)?v=([0-9a-f]+)"', html)
        if found:  # code before issue 23 has no versions: every poll renders the section
            versions[name] = found.group(1)
    if "progress" in versions:
        pages["poll:progress (204)"] = (staff, f"/dashboard/fragment/progress/?page=1&v={versions['progress']}")
    else:
        pages.pop("fragment:staffing (lazy)", None)
        pages.pop("fragment:agreement_groups (lazy)", None)

    timings: dict[str, list[float]] = {name: [] for name in pages}
    out: dict[str, dict] = {}
    for name, (client, url) in pages.items():  # warm-up, and what each page runs
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        assert response.status_code in (200, 204), (name, response.status_code)
        out[name] = {"status": response.status_code, "bytes": len(response.content), "statements": len(ctx.captured_queries),
                     "queries": [q["sql"] for q in ctx.captured_queries]}
    for _ in range(rounds):
        for name, (client, url) in pages.items():
            t0 = time.perf_counter()
            client.get(url)
            timings[name].append(time.perf_counter() - t0)
    big = _big_tables()
    login = statistics.median(timings["login"])
    for name, row in out.items():
        row["median_s"] = statistics.median(timings[name])
        row["ratio_to_login"] = row["median_s"] / login
        seq, slowest, slowest_s = set(), None, -1.0
        for sql in row.pop("queries"):
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            try:
                plan = _explain(sql)
            except Exception as exc:  # noqa: BLE001 - a statement EXPLAIN cannot take (e.g. bound arrays as text)
                plan = f"(no plan: {exc})"
            seq |= {t for t in re.findall(r"Seq Scan on (\w+)", plan) if t in big}
            t0 = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(sql)
                cursor.fetchall()
            took = time.perf_counter() - t0
            if took > slowest_s:
                slowest, slowest_s = sql, took
        row["seq_scans_on_large_tables"] = sorted(seq)
        if slowest is not None:
            row["slowest_statement_s"] = slowest_s
            row["slowest_statement"] = slowest[:600]
            try:
                row["slowest_plan"] = _explain(slowest, analyze=True)
            except Exception as exc:  # noqa: BLE001
                row["slowest_plan"] = f"(no plan: {exc})"

    # An idle open dashboard: every 10 s, the 6 sections poll with the version they show.
    def poll_round():
        for name in SECTIONS:
            r = staff.get(f"/dashboard/fragment/{name}/", {"v": versions[name]})
            assert r.status_code == 204, (name, r.status_code)

    def full_round():
        for name in SECTIONS:
            staff.get(f"/dashboard/fragment/{name}/")

    idle = {}
    for label, fn in (("poll_204", poll_round), ("full_render", full_round)) if versions else (("full_render", full_round),):
        walls = []
        for _ in range(max(3, rounds // 2)):
            t0 = time.perf_counter()
            fn()
            walls.append(time.perf_counter() - t0)
        wall = statistics.median(walls)
        idle[label] = {"round_s": wall, "core_share_every_10s": wall / 10}
    return {"size": size, "rounds": rounds, "login_median_s": login, "pages": out, "idle_tab": idle,
            "at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def markdown(results: dict[str, dict]) -> str:
    sizes = list(results)
    names = list(dict.fromkeys(n for r in results.values() for n in r["pages"]))
    lines = ["# Staff pages against the login page (issue 23)", "",
             "`bench/staff_pages.py`: in-process (Django test client), medians over alternating rounds; ratio = page ÷ login page in the same run.",
             "", "| page | " + " | ".join(f"{s} ms | {s} × login | {s} SQL | {s} KiB" for s in sizes) + " | Seq Scans (> 10k rows) |",
             "|---|" + "---:|" * (4 * len(sizes)) + "---|"]
    for n in names:
        cells = []
        seq = set()
        for s in sizes:
            p = results[s]["pages"].get(n)
            if p is None:
                cells += ["–"] * 4
                continue
            cells += [f"{1000 * p['median_s']:.1f}", f"{p['ratio_to_login']:.1f}", str(p["statements"]), f"{p['bytes'] / 1024:.1f}"]
            seq |= set(p["seq_scans_on_large_tables"])
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {', '.join(sorted(seq)) or 'none'} |")
    lines += ["", "Idle open dashboard (6 sections polled every 10 s):", ""]
    for s in sizes:
        idle = results[s]["idle_tab"]
        poll = (f"unchanged (204) round {1000 * idle['poll_204']['round_s']:.1f} ms = "
                f"{100 * idle['poll_204']['core_share_every_10s']:.2f} % of a core; ") if "poll_204" in idle else ""
        lines.append(f"- {s}: {poll}full re-render round "
                     f"{1000 * idle['full_render']['round_s']:.1f} ms = {100 * idle['full_render']['core_share_every_10s']:.2f} %")
    lines += ["", "Slowest statement of each page (largest size):", ""]
    last = results[sizes[-1]]
    for n, p in last["pages"].items():
        if "slowest_statement" in p:
            lines += [f"**{n}** ({1000 * p['slowest_statement_s']:.1f} ms): `{p['slowest_statement'][:200]}`", "", "```",
                      p["slowest_plan"][:1500], "```", ""]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", help="measure this size in this process (SCALE_DB names its database)")
    parser.add_argument("--sizes", default="40k,400k")
    parser.add_argument("--db-suffix", default="", help="the scale databases' copies, e.g. _h1")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--label", default="", help="a suffix of the result files (e.g. -before)")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.size:
        _setup(os.environ["SCALE_DB"])
        result = measure(args.size, rounds=args.rounds)
        (RESULTS / f"staff_pages-{args.size}{args.label}.json").write_text(json.dumps(result, indent=1, default=str))
        return
    results = {}
    for size in args.sizes.split(","):
        env = {**os.environ, "SCALE_DB": f"dialtom_scale_{size}{args.db_suffix}"}
        subprocess.run([sys.executable, __file__, "--size", size, "--rounds", str(args.rounds), f"--label={args.label}"],
                       env=env, check=True)
        results[size] = json.loads((RESULTS / f"staff_pages-{size}{args.label}.json").read_text())
    (RESULTS / f"staff_pages{args.label}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
