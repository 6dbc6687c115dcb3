#!/usr/bin/env python3
"""Benchmark of the imports: full-size synthetic sets, against bare bulk_create and COPY.

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/bench_imports.py

What it does, in a throw-away database `test_<name of DATABASE_URL's database>`:
1. Items: makes the full-size synthetic set (`make_synthetic.py OUT --contexts 5943`:
   5,943 contexts, 41,601 items), imports the contexts, then times `import_items`
   (validation, streaming, chunks of 2,000, one transaction) and, on the same rows
   already parsed into memory, a bare `bulk_create` and a bare `COPY`.
2. Memory: the peak of Python allocations (tracemalloc) while importing the items of a
   1,000-context set and of the full set. Flat memory means the two peaks are close.
3. Corpora: a synthetic AnnoMI full CSV the size of the real one (133 transcripts,
   ~9,700 utterances, a third of them repeated by a second annotator) and a synthetic
   PFG full_dialog.csv the size of the real one (1,017 dialogues, ~21,000 sentences);
   times `ingest_corpus` and `segment_contexts` on them.

Figures go to bench/results/imports.md (and stdout).
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")

WORDS = ("feel want plan trust worry know think help money health family change talk donate child future "
         "stress sleep job friend doctor hope afraid sure drink week really okay yeah").split()


NOTES = """## Reading the figures

- `import_items` does everything the bare inserts do not: decode and parse each line,
  validate every field, resolve context ids (one query a chunk), create batches by name,
  count per domain and task, keep unknown fields as metadata — and it still writes
  with `COPY` (`annotation/bulk.py`), in chunks of 2,000, each under a savepoint inside the
  one transaction of the import.
- Django 5.2's `bulk_create` on PostgreSQL sends each column as an array (`UNNEST`); with
  psycopg's client-side binding the JSON columns (options, profile, metadata) are quoted in
  Python, which is why the bare `bulk_create` is slower than the whole validated import.
  A first version of `import_items` that used `bulk_create` took about as long as the bare
  `bulk_create` does here.
- Duplicate ids and a second item for the same context × task × attribute × variant are
  left to the unique constraints on the happy path; when one fires, the chunk is checked
  against the database to name the line (`file:line: field: reason`), and everything is
  rolled back.
- The machine is 2 cores shared by about eight people running tests (see the load
  average above): absolute seconds vary by ±50 % between runs; the ratios of one run are
  the figures to quote.
"""


def find_tool(given: str | None) -> Path:
    for candidate in [given, os.environ.get("DIALTOM_SYNTHETIC_TOOL"), ROOT.parent / "shared/tools/make_synthetic.py"]:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    sys.exit("make_synthetic.py not found: pass --tool PATH")


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_annomi(path: Path, rng: random.Random) -> int:
    header = ["mi_quality", "transcript_id", "video_title", "video_url", "topic", "utterance_id", "interlocutor",
              "timestamp", "utterance_text", "annotator_id"]
    rows = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for t in range(133):
            utterances = [(u, "therapist" if u % 2 == 0 else "client", sentence(rng, rng.randint(2, 30)))
                          for u in range(rng.randint(30, 116))]
            annotators = [rng.randint(1, 10)] + ([rng.randint(11, 20)] if t % 3 == 0 else [])
            for annotator in annotators:
                for u, who, text in utterances:
                    w.writerow(["high", t, f"Video {t}", "https://example.org", "topic", u, who, "00:00:00", text, annotator])
                    rows += 1
    return rows


def make_pfg(path: Path, rng: random.Random) -> int:
    rows = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "Unit", "Turn", "B4", "B2"])
        for d in range(1017):
            n, turn = 0, 0
            for _ in range(rng.randint(8, 13)):
                for role in (0, 1):
                    for _ in range(rng.randint(1, 2)):
                        w.writerow([n, sentence(rng, rng.randint(3, 18)), turn, role, f"2018-{d:05d}_live"])
                        n += 1
                        rows += 1
                turn += 1
    return rows


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", help="path of make_synthetic.py")
    parser.add_argument("--contexts", type=int, default=5943)
    parser.add_argument("--out", default=str(ROOT / "bench/results/imports.md"))
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection, transaction

    from annotation.bulk import bulk_insert
    from annotation.models import Context, Item, Session
    from annotation.services import contexts_import, contexts_segment, corpus_ingest, items_import

    tool = find_tool(args.tool)
    work = Path(tempfile.mkdtemp(prefix="dialtom-bench-"))
    for name, n in (("full", args.contexts), ("small", 1000)):
        subprocess.run([sys.executable, str(tool), str(work / name), "--contexts", str(n)], check=True,
                       stdout=subprocess.DEVNULL)
    full, small = work / "full", work / "small"
    n_items = sum(1 for _ in open(full / "items.jsonl"))

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
    lines = []
    try:
        def clear_items():
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE annotation_item, annotation_batch RESTART IDENTITY CASCADE")

        t_contexts, _ = timed(lambda: contexts_import(path=full / "contexts.jsonl"))
        t_import, report = timed(lambda: items_import(path=full / "items.jsonl"))
        assert report["created"] == n_items

        # The same rows, parsed and resolved in memory beforehand (not timed): what a bare insert costs.
        clear_items()
        contexts = dict(Context.objects.values_list("context_id", "pk"))
        rows = []
        for line in open(full / "items.jsonl"):
            r = json.loads(line)
            rows.append({"item_id": r["item_id"], "context_id": contexts[r["context_id"]], "task": r["task"],
                         "attribute": r.get("attribute", ""), "variant": r["variant"],
                         "target_speaker": r.get("target_speaker", ""), "question": r["question"],
                         "options": r["options"], "answer": r["answer"], "profile": r.get("profile", {}),
                         "batch_id": None, "metadata": {}})
        objects = [Item(**row) for row in rows]

        def bare_bulk_create():
            with transaction.atomic():
                for i in range(0, len(objects), 2000):
                    Item.objects.bulk_create(objects[i:i + 2000])

        t_bulk, _ = timed(bare_bulk_create)
        clear_items()

        def bare_copy():
            with transaction.atomic():
                bulk_insert(Item, rows)

        t_copy, _ = timed(bare_copy)
        clear_items()
        objects = rows = None  # free them before the memory measurement

        # Memory: Python allocation peak while importing a small and the full set.
        peaks = {}
        for name, directory in (("small", small), ("full", full)):
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE annotation_context, annotation_item, annotation_batch RESTART IDENTITY CASCADE")
            contexts_import(path=directory / "contexts.jsonl")
            tracemalloc.start()
            report = items_import(path=directory / "items.jsonl")
            peaks[name] = (report["created"], tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()

        # Corpora of the real size.
        rng = random.Random(7)
        annomi_rows = make_annomi(work / "annomi.csv", rng)
        pfg_rows = make_pfg(work / "pfg.csv", rng)
        t_annomi, annomi = timed(lambda: corpus_ingest(corpus="annomi", path=work / "annomi.csv"))
        t_pfg, pfg = timed(lambda: corpus_ingest(corpus="pfg", path=work / "pfg.csv"))
        t_again, again = timed(lambda: corpus_ingest(corpus="pfg", path=work / "pfg.csv"))
        t_segment, segment = timed(lambda: contexts_segment())
        n_sessions = Session.objects.count()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    cpus = os.cpu_count()
    load = os.getloadavg()[0]
    lines += [
        "# Import benchmarks (issue 2)",
        "",
        "Rerun: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/bench_imports.py`",
        f"(uses a throw-away `test_…` database; synthetic data from `make_synthetic.py --contexts {args.contexts}`).",
        f"Machine: {cpus} cores shared with other jobs, load average {load:.1f} at the end of the run; "
        "all figures from this one run.",
        "",
        "## Items (41,601 of the full-size synthetic set)",
        "",
        "| what | seconds | rows/s | vs bare COPY | vs bare bulk_create |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| `import_items` (stream, validate, chunks of 2,000, one transaction) | {t_import:.1f} | {n_items / t_import:,.0f} "
        f"| {t_import / t_copy:.2f}× | {t_import / t_bulk:.2f}× |",
        f"| bare `COPY` of the same rows, pre-parsed in memory | {t_copy:.1f} | {n_items / t_copy:,.0f} | 1.00× | "
        f"{t_copy / t_bulk:.2f}× |",
        f"| bare `bulk_create` (2,000 a query) of the same rows, pre-built | {t_bulk:.1f} | {n_items / t_bulk:,.0f} "
        f"| {t_bulk / t_copy:.2f}× | 1.00× |",
        "",
        f"`import_contexts` of the 5,943 contexts: {t_contexts:.1f} s.",
        "",
        "Peak of Python allocations (tracemalloc) during `import_items`: "
        + ", ".join(f"{n:,} items: {mb:.1f} MiB" for n, mb in peaks.values())
        + f" — {peaks['full'][0] / peaks['small'][0]:.1f}× the items for "
          f"{peaks['full'][1] / peaks['small'][1]:.2f}× the memory (records are read a line at a time, written "
          "2,000 at a time; duplicates are found by the database's unique constraints, not by a set of every id seen).",
        "",
        "## Corpora of the real size",
        "",
        "| what | rows | sessions | turns | seconds |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| `ingest_corpus annomi` (133 transcripts, full CSV) | {annomi_rows:,} | {annomi['created']['sessions']} | "
        f"{annomi['created']['turns']:,} | {t_annomi:.1f} |",
        f"| `ingest_corpus pfg` (1,017 dialogues, one sentence a row) | {pfg_rows:,} | {pfg['created']['sessions']} | "
        f"{pfg['created']['turns']:,} | {t_pfg:.1f} |",
        f"| `ingest_corpus pfg` again (idempotent: {again['created']['sessions']} created) | {pfg_rows:,} | 0 | 0 | "
        f"{t_again:.1f} |",
        f"| `segment_contexts` over both ({n_sessions:,} sessions) | | | {segment['created']['contexts']:,} contexts "
        f"| {t_segment:.1f} |",
        "",
        NOTES,
    ]
    text = "\n".join(lines)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
