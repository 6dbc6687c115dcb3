#!/usr/bin/env python3
"""Benchmark of `import_dialtom` on the authors' unverified pool at full scale (issue 11).

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/dialtom_pool.py

What it does, in a throw-away database `test_<name of DATABASE_URL's database>`:
1. Makes a pool-shaped directory from the real sample
   (`../shared/data/dialtom-pool/MI_data_0_50.sample.json` beside the repository, or `--sample`): 55 files
   `{MI,ESC,PFG}_data_{start}_{count}.json`, 865 MI + 3,215 ESC + 1,863 PFG = 5,943
   records as in the authors' pool; each record is a sample record under a new
   "session, window" key, its texts made distinct (a numbered suffix), its roles renamed
   for ESC (supporter/seeker) and PFG (persuader/persuadee); 2,438 of them have
   `actions: null` (a session's last window), as in the real pool.
2. Times `import_dialtom` on it (everything: two passes over the files, validation,
   fingerprints, COPY, one transaction), then a second run (idempotent: creates nothing).
3. Takes the rows the import wrote (contexts and items, as COPY text), empties the tables
   and times a bare `COPY ... FROM STDIN` of exactly those rows: the floor of any import.
4. Memory: the peak of Python allocations (tracemalloc) while importing a quarter of the
   pool (every 4th file: files of the same size) and the whole pool into an empty
   database. Flat memory means the two are close.

Figures go to bench/results/dialtom_pool.md (and stdout). `--scale 0.1` for a quick try.
"""
import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")

SAMPLE = Path(os.environ.get("DIALTOM_POOL_SAMPLE")  # or ../shared, beside the repository
              or ROOT.parent / "shared" / "data" / "dialtom-pool" / "MI_data_0_50.sample.json")
POOL = {"MI": 865, "ESC": 3215, "PFG": 1863}  # records per domain in the authors' pool
LAST_WINDOWS = 2438  # records with actions: null
N_FILES = {"MI": 8, "ESC": 30, "PFG": 17}  # 55 files
ROLES = {"MI": ("counselor", "client"), "ESC": ("supporter", "seeker"), "PFG": ("persuader", "persuadee")}


def _retext(value, suffix: str, roles: tuple[str, str]):
    """The same record with distinct texts and the domain's role names."""
    if isinstance(value, str):
        text = value.replace("counselor:", f"{roles[0]}:").replace("client:", f"{roles[1]}:")
        if "\n" in text:  # a continuation: suffix each turn
            return "\n".join(f"{line} ({suffix})" for line in text.split("\n"))
        return f"{text} ({suffix})"
    if isinstance(value, dict):
        return {k: v if k == "correct_option" else _retext(v, suffix, roles) for k, v in value.items()}
    if isinstance(value, list):
        return [_retext(v, suffix, roles) for v in value]
    return value


def make_pool(out: Path, sample: Path, scale: float = 1.0) -> dict:
    records = [v for v in json.loads(sample.read_text()).values() if v.get("actions")]
    out.mkdir(parents=True, exist_ok=True)
    total = sum(POOL.values())
    n_null = 0
    counts = {}
    for domain, n in POOL.items():
        n = max(1, round(n * scale))
        counts[domain] = n
        per_file = -(-n // N_FILES[domain])
        for start in range(0, n, per_file):
            entries = {}
            for i in range(start, min(n, start + per_file)):
                session, window = divmod(i, 5)
                record = _retext(records[i % len(records)], f"{domain}{i}", ROLES[domain])
                # a session's last window has no continuation: 2,438 of 5,943 in the real pool
                if (i * LAST_WINDOWS) // total != ((i + 1) * LAST_WINDOWS) // total:
                    record["actions"] = None
                    n_null += 1
                entries[f"{session}, {window}"] = record
            name = f"{domain}_data_{start}_{len(entries)}.json"
            (out / name).write_text(json.dumps(entries, indent=1, ensure_ascii=False))
    return {"records": sum(counts.values()), "files": len(list(out.iterdir())), "null_actions": n_null,
            "bytes": sum(p.stat().st_size for p in out.iterdir())}


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", default=str(SAMPLE))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", default=str(ROOT / "bench/results/dialtom_pool.md"))
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection, transaction

    from annotation.authors import dialtom_import

    work = Path(tempfile.mkdtemp(prefix="dialtom-pool-"))
    shape = make_pool(work / "full", Path(args.sample), args.scale)
    # a quarter of the pool in files of the same size: memory must follow the file, not the pool
    (work / "quarter").mkdir()
    for path in sorted((work / "full").iterdir())[::4]:
        shutil.copy(path, work / "quarter" / path.name)

    def truncate(*, batches: bool = True):
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE annotation_importedfile, annotation_context, annotation_item"
                           + (", annotation_batch" if batches else "")
                           + " RESTART IDENTITY CASCADE")

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
    try:
        t_import, report = timed(lambda: dialtom_import(directory=work / "full"))
        t_again, again = timed(lambda: dialtom_import(directory=work / "full"))  # unchanged files: skipped
        assert again["files"] == [] and len(again["unchanged"]) == shape["files"], again
        t_forced, forced = timed(lambda: dialtom_import(directory=work / "full", force=True))  # read again
        assert forced["created"]["items"] == 0 and forced["created"]["contexts"] == 0, forced["created"]
        n_items = report["created"]["items"]
        n_contexts = report["created"]["contexts"]

        # The very rows the import wrote, as COPY text (not timed), then a bare COPY of them.
        dumps = {}
        with connection.cursor() as cursor:
            for table in ("annotation_context", "annotation_item"):
                buffer = io.BytesIO()
                with cursor.copy(f"COPY {table} TO STDOUT") as copy:
                    for data in copy:
                        buffer.write(data)
                dumps[table] = buffer.getvalue()
        truncate(batches=False)  # the rows point at the batches

        def bare_copy():
            with transaction.atomic(), connection.cursor() as cursor:
                for table in ("annotation_context", "annotation_item"):
                    with cursor.copy(f"COPY {table} FROM STDIN") as copy:
                        copy.write(dumps[table])

        t_copy, _ = timed(bare_copy)
        dumps = None
        truncate()

        peaks = {}
        for name in ("quarter", "full"):
            truncate()
            tracemalloc.start()
            result = dialtom_import(directory=work / name)
            peaks[name] = (result["created"]["items"], tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()[0]
    lines = [
        "# `import_dialtom` on the authors' pool at full scale (issue 11)",
        "",
        "Rerun: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/dialtom_pool.py`",
        "(throw-away `test_…` database; the pool is made from `MI_data_0_50.sample.json`).",
        f"Machine: {os.cpu_count()} cores shared with other jobs, load average {load:.1f} at the end; "
        "all figures from this one run.",
        "",
        f"Pool: {shape['files']} files, {shape['records']:,} records ({shape['null_actions']:,} with `actions: null`), "
        f"{shape['bytes'] / 2**20:.1f} MiB of JSON → {n_contexts:,} contexts, {report['retrospective']:,} retrospective "
        f"and {report['prospective']:,} prospective items ({n_items:,} items).",
        "",
        "| what | seconds | items/s | vs bare COPY |",
        "| --- | ---: | ---: | ---: |",
        f"| `import_dialtom` (two passes, validation, fingerprints, COPY, one transaction) | {t_import:.1f} | "
        f"{n_items / t_import:,.0f} | {t_import / t_copy:.2f}× |",
        f"| `import_dialtom` again, files unchanged (skipped by content hash; {t_again / t_import:.3f}× the first "
        f"import) | {t_again:.2f} | – | {t_again / t_copy:.3f}× |",
        f"| `import_dialtom --force` again (every file read, idempotent: {forced['created']['items']} created; "
        f"{t_forced / t_import:.2f}× the first import) | {t_forced:.1f} | – | {t_forced / t_copy:.2f}× |",
        f"| bare `COPY FROM STDIN` of the same {n_contexts:,} contexts + {n_items:,} items (text prepared beforehand) "
        f"| {t_copy:.1f} | {n_items / t_copy:,.0f} | 1.00× |",
        "",
        "Peak of Python allocations (tracemalloc) during `import_dialtom` into an empty database: "
        + ", ".join(f"{n:,} items: {mb:.1f} MiB" for n, mb in peaks.values())
        + f" — {peaks['full'][0] / max(peaks['quarter'][0], 1):.1f}× the items for "
          f"{peaks['full'][1] / max(peaks['quarter'][1], 0.01):.2f}× the memory (one file in memory at a time; what "
          "is learnt across files — a fingerprint and the place of each context and item — goes to a temporary "
          "table, `dialtom_seen`, not to Python).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
