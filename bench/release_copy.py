#!/usr/bin/env python3
"""Benchmark: the release build against a bare `COPY … TO STDOUT` of the same rows (issue 23.4).

    .venv/bin/python bench/release_copy.py --sizes 40k,400k [--db-suffix _h4]

On a COPY of the scale databases (`createdb -T dialtom_scale_400k dialtom_scale_400k_h4`: the
build adds a release and its ReleaseItems, so never on the shared ones), for each size, each
phase in its own Python process (so its peak RSS is its own):

- `bare`: `COPY (SELECT …) TO STDOUT` into files of the rows a release is made of, with no
  formatting: the released items with their context (what items.jsonl/csv/parquet hold), every
  audited item's result (results.csv), every fitted judgment (judgments.csv);
- `build`: `release_build` as the worker runs it, with no record made yet (the records emptied
  first: a build that starts before the import's follow-up made them): the items' and contexts'
  records are made (releases.records), then every data file is written by PostgreSQL
  (releases.copyout); the report's per-batch AC1 summed in SQL;
- `records`: the import's follow-up alone (`services.release_records_refresh`, the records
  emptied first): what a worker spends after an import so that no build makes them;
- `rebuild`: the same build again, with the records kept (every release once the import's
  follow-up is done, the first included): after `records`, known up to date, so not checked
  (`records.records_current`); without it, checked item by item;
- `portable`: `release_build(portable=True)`: every file by Python, as on SQLite (the bytes are
  the same: tests/releases/test_release_copyout.py).

Prints a Markdown table (seconds, ratio to the bare COPY, peak RSS growth) and writes it to
bench/results/release_copy.md.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT_ROOT = Path("/tmp/dialtom-release-copy")


def _setup(size: str, suffix: str):
    os.environ["SCALE_DB"] = f"dialtom_scale_{size}{suffix}"
    os.environ["SCALE_RELEASE_ROOT"] = str(OUT_ROOT)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.scale_settings"
    import django

    django.setup()


def phase_bare(directory: Path) -> dict:
    from django.db import connection, transaction

    from dialtom_site.db.collation import code_points
    from releases import selectors
    from releases.selectors import RELEASE_VALUES
    from review.selectors import adjudicated

    pairs = selectors.current_batch_runs()
    by_id = code_points("item__item_id")  # the release's own order (dialtom_site.db.collation)
    queries = {
        "items": adjudicated(selectors.current_item_results(pairs=pairs)).filter(released=True)
        .order_by(by_id).values(*RELEASE_VALUES, "adjudication"),
        "results": selectors.audited_item_results(pairs=pairs).order_by(by_id)
        .values("item__item_id", "batch__name", "item__task", "item__attribute", "item__variant",
                "item__context__domain_id", "released_label", "posterior", "mv_label", "n_judgments", "released",
                "adjudication"),
        "judgments": selectors.release_judgments(pairs=pairs).order_by(by_id, "verifier_id")
        .values_list("item__item_id", "verifier_id", "label", "seconds_spent"),
    }
    rows = {}
    with transaction.atomic(), connection.cursor() as cursor:
        for name, qs in queries.items():
            sql, params = qs.query.sql_with_params()
            with open(directory / f"{name}.copy", "wb") as handle, cursor.copy(f"COPY ({sql}) TO STDOUT", params) as copy:
                for data in copy:
                    handle.write(data)
            rows[name] = cursor.rowcount
    return {"rows": rows, "bytes": sum(p.stat().st_size for p in directory.iterdir())}


STEPS = (("releases.records", "records_ensure", "records"), ("releases.copyout", "write_items", "items files"),
         ("releases.copyout", "write_results", "results.csv"), ("releases.copyout", "write_judgments", "judgments.csv"),
         ("releases.services", "_write_items", "items files (Python)"), ("releases.services", "_report_files", "report"),
         ("releases.services", "release_create", "create"), ("releases.services", "_release_items_insert", "release items"),
         ("releases.selectors", "release_warnings", "warnings"), ("releases.selectors", "retention_counts", "retention"),
         ("releases.selectors", "current_batch_results", "batch results"),
         ("releases.services", "overlap_allocation", "overlap"), ("releases.services", "adjudications_in_force", "decisions"),
         ("releases.services", "_references_rows", "references"))


def _timed(steps: dict) -> None:
    """Wrap the build's steps (STEPS) to add their seconds to `steps`."""
    import importlib

    for module_name, name, label in STEPS:
        module = importlib.import_module(module_name)
        function = getattr(module, name)

        def wrapper(*args, _function=function, _label=label, **kwargs):
            start = time.perf_counter()
            try:
                return _function(*args, **kwargs)
            finally:
                steps[_label] = steps.get(_label, 0.0) + time.perf_counter() - start

        setattr(module, name, wrapper)


def _records_empty() -> None:
    from django.db import connection

    from releases.models import ContextRecord, ItemRecord

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {ContextRecord._meta.db_table}, {ItemRecord._meta.db_table}")


def phase_records() -> dict:
    from releases.services import release_records_refresh

    _records_empty()
    start = time.perf_counter()
    made = release_records_refresh()
    return {"made": made, "steps": {"records": round(time.perf_counter() - start, 1)}}


def phase_build(portable: bool, *, first: bool = False) -> dict:
    from releases.models import Release
    from releases.services import release_build, release_create

    if first:
        _records_empty()
    steps: dict[str, float] = {}
    _timed(steps)
    version = f"bench-copy-{'portable' if portable else 'copy'}-{int(time.time())}"
    release = release_create(version=version, build=False, acknowledge_warnings=True, trigger="command")
    release = release_build(release_id=release.pk, portable=portable)
    release = Release.objects.get(pk=release.pk)
    assert release.status == "ready", release.error
    out = {"items": release.n_items, "bytes": sum(m.get("bytes") or 0 for m in release.files.values()),
           "steps": {label: round(seconds, 1) for label, seconds in steps.items()}}
    shutil.rmtree(Path(release.files["manifest.json"]["path"]).parent, ignore_errors=True)
    _keep_one_earlier_release(release)
    return out


def _keep_one_earlier_release(release) -> None:
    """After the timing: the release just built is removed again where an earlier one exists, so
    every run builds "v2 beside v1" (each release's items enlarge the ReleaseItem indexes that the
    next build inserts into: four earlier releases made the insert ~70 % slower at 4M)."""
    from django.db import connection

    from releases.models import Release, ReleaseItem, ReleaseStatus

    if Release.objects.filter(status=ReleaseStatus.READY).exclude(pk=release.pk).exists():
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {ReleaseItem._meta.db_table} WHERE release_id = %s", [release.pk])
        Release.objects.filter(pk=release.pk).delete()


def child(args) -> None:
    _setup(args.size, args.db_suffix)
    # what a worker has imported already: the build's modules, and the report's (pandas, SciPy)
    import releases.services  # noqa: F401
    import report.services  # noqa: F401
    from django.urls import reverse

    reverse("login")  # the URL conf, loaded once in a worker
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    directory = OUT_ROOT / f"bare-{args.size}"
    directory.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.phase == "bare":
        result = phase_bare(directory)
    elif args.phase == "records":
        result = phase_records()
    else:
        result = phase_build(portable=args.phase == "portable", first=args.phase == "build")
    result["seconds"] = time.perf_counter() - start
    result["rss_growth_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    shutil.rmtree(directory, ignore_errors=True)
    print("RESULT " + json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="40k,400k")
    parser.add_argument("--db-suffix", default="_h4", help="the copies of the scale databases: dialtom_scale_<size><suffix>")
    parser.add_argument("--phases", default="bare,build,records,rebuild,portable")
    parser.add_argument("--out", default=str(ROOT / "bench/results/release_copy.md"))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args)

    results: dict[str, dict[str, dict]] = {}
    for size in args.sizes.split(","):
        for phase in args.phases.split(","):
            proc = subprocess.run(
                [sys.executable, __file__, "--phase", phase, "--size", size, "--db-suffix", args.db_suffix],
                capture_output=True, text=True, check=False)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                sys.exit(f"{size} {phase} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
            results.setdefault(size, {})[phase] = json.loads(line[7:])
            r = results[size][phase]
            print(f"{size} {phase}: {r['seconds']:.1f} s, +{r['rss_growth_mib']:.0f} MiB {r.get('steps', '')}", flush=True)

    load = os.getloadavg()
    lines = [
        "# Release build vs a bare `COPY … TO STDOUT` of the same rows (issue 23.4)",
        "",
        f"Rerun: `.venv/bin/python bench/release_copy.py --sizes {args.sizes} --db-suffix {args.db_suffix}` "
        "(on copies of the scale databases). "
        f"Machine: {os.cpu_count()} cores shared with other jobs, load average {load[0]:.1f} / {load[1]:.1f} "
        "(1 / 5 min) at the end; all figures from this one run.",
        "",
        "| size | phase | seconds | × bare COPY | peak RSS growth | steps (s) | what |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    what = {
        "bare": "COPY TO STDOUT into files, no formatting: released items + contexts, audited results, fitted judgments",
        "build": "release_build with no record made yet (emptied first: a build before the import's follow-up "
                 "ran): the items' and contexts' records made, then every data file by PostgreSQL (COPY)",
        "records": "the import's follow-up alone: every item's and context's record made (release_records_refresh)",
        "rebuild": "release_build again: the records are kept, none made (the first build once the import's "
                   "follow-up is done)",
        "portable": "release_build(portable=True): every file by Python (the same bytes)",
    }
    for size, phases in results.items():
        bare = phases.get("bare", {}).get("seconds")
        for phase, r in phases.items():
            ratio = f"{r['seconds'] / bare:.1f}×" if bare else "–"
            steps = ", ".join(f"{k} {v}" for k, v in r.get("steps", {}).items())
            lines.append(f"| {size} | {phase} | {r['seconds']:.1f} | {ratio} | {r['rss_growth_mib']:.0f} MiB | {steps} | "
                         f"{what[phase]} |")
        if "rebuild" in phases and "portable" in phases:
            lines.append(f"| {size} | rebuild ÷ portable | | {phases['rebuild']['seconds'] / phases['portable']['seconds']:.2f}× "
                         "| | | the same bytes either way (tested; versions differ here, so the hashes do) |")
    lines += ["", "Rows: " + "; ".join(f"{size}: {json.dumps(p['bare']['rows'])}" for size, p in results.items()
                                      if "bare" in p), ""]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
