#!/usr/bin/env python
"""Aggregation benchmark: the full-size synthetic set end to end through Celery vs bare crowd-kit.

  .venv/bin/python bench/aggregate.py [--contexts 5943] [--concurrency 1] [--keep]

1. Generates the synthetic set (tests/aggregation/make_synthetic.py, a copy of
   ../shared/tools/make_synthetic.py): 5,943 contexts, 41,601 items in 84 batches of 500,
   124,803 judgments by 22 workers.
2. Loads it into a fresh PostgreSQL database (items by bulk insert, judgments through
   `import_judgments`' service), reporting the import time.
3. Starts a real worker subprocess (`celery -A dialtom_site worker`) and times a run over
   every batch: a Celery group (one task per batch) and a chord callback, from the request
   to the run being SUCCEEDED (reading judgments, DS + MV, agreement, retention, writing
   every result row, the summary).
4. Times bare crowd-kit on the same batches in the same process run: for each batch,
   DawidSkene(n_iter, tol).fit_predict_proba + MajorityVote().fit_predict on an in-memory
   frame built beforehand from the CSV (nothing else: no database, no agreement).
   Bare crowd-kit is timed before and after the pipeline; the mean is used.
Prints both times and the ratio (goal: within 1.3x), and checks the labels agree.

Environment: DATABASE_URL names the server and, if its name starts with dialtom_bench, the
database (else BENCH_DATABASE, default dialtom_bench); that database is dropped and recreated. REDIS_URL / TEST_REDIS_URL the broker,
CELERY_TASK_DEFAULT_QUEUE the queue (default dialtom-bench).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def configure_env() -> dict:
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom")
    parsed = urlparse(server)
    # bench/run_all.py hands each benchmark DATABASE_URL=.../dialtom_bench_<name>: use that
    # database; any other name (say, your real `dialtom`) is never dropped: dialtom_bench is.
    given = parsed.path.lstrip("/")
    name = os.environ.get("BENCH_DATABASE") or (given if given.startswith("dialtom_bench") else "dialtom_bench")
    env = {
        "DATABASE_URL": urlunparse(parsed._replace(path=f"/{name}")),
        "REDIS_URL": os.environ.get("REDIS_URL") or os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "CELERY_TASK_DEFAULT_QUEUE": os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "dialtom-bench"),
        "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.local",
        "DEBUG": "0",
        "CONN_MAX_AGE": os.environ.get("CONN_MAX_AGE", "60"),  # persistent connections, as production.py
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    return {"server": urlunparse(parsed._replace(path="/postgres")), "name": name, **env}


def recreate_database(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def bare_crowdkit(frames, *, n_iter: int, tol: float):
    from crowdkit.aggregation import DawidSkene, MajorityVote

    labels = {}
    t0, c0 = time.perf_counter(), time.process_time()
    for frame in frames:
        ds = DawidSkene(n_iter=n_iter, tol=tol)
        ds.fit_predict_proba(frame)
        MajorityVote().fit_predict(frame)
        labels.update(ds.labels_.to_dict())
    return time.perf_counter() - t0, time.process_time() - c0, labels


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of the worker process and its pool children."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--contexts", type=int, default=5943)
    p.add_argument("--concurrency", type=int, default=1, help="worker processes (1 = same CPU as bare crowd-kit)")
    p.add_argument("--keep", action="store_true", help="keep the generated files")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()

    env = configure_env()
    recreate_database(env["server"], env["name"])
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    import pandas as pd

    from aggregation import services
    from aggregation.dawid_skene import sorted_frame
    from aggregation.models import ItemResult, RunStatus
    from tests.aggregation import synthetic

    out = Path(tempfile.mkdtemp(prefix="dialtom-bench-"))
    t = time.perf_counter()
    synthetic.generate(out, contexts=a.contexts)
    t_generate = time.perf_counter() - t
    t = time.perf_counter()
    batches = synthetic.load_items(out)
    t_items = time.perf_counter() - t
    t = time.perf_counter()
    imported = services.judgments_import(path=out / "judgments.csv")
    t_import = time.perf_counter() - t
    from django.db import connection

    with connection.cursor() as cursor:  # fresh statistics after the bulk load, as autovacuum would do
        cursor.execute("ANALYZE")
    print(f"set: {a.contexts} contexts, {len(batches)} batches, {imported['created']} judgments "
          f"(generate {t_generate:.1f}s, items bulk insert {t_items:.1f}s, import_judgments {t_import:.1f}s)", flush=True)

    # Bare crowd-kit input: the CSV's rows per batch, in memory, in the same canonical order.
    items = pd.read_json(out / "items.jsonl", lines=True)[["item_id", "batch"]]
    rows = pd.read_csv(out / "judgments.csv").rename(columns={"item_id": "task"})
    rows = rows.merge(items, left_on="task", right_on="item_id")
    frames = [sorted_frame(g) for _, g in rows.groupby("batch", sort=True)]
    n_iter, tol = settings.DIALTOM_DS_N_ITER, settings.DIALTOM_DS_TOL

    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "celery"), "-A", "dialtom_site", "worker", "-Q", env["CELERY_TASK_DEFAULT_QUEUE"],
         "-c", str(a.concurrency), "--pool", "prefork", "-l", "warning", "-n", f"bench-{os.getpid()}@%h"],
        cwd=ROOT, env=os.environ.copy(),
    )
    try:
        from dialtom_site.celery import app

        app.control.purge()
        from aggregation.tasks import ping

        ping.delay().get(timeout=120)  # the worker is up

        bare_before, bare_cpu_before, _ = bare_crowdkit(frames, n_iter=n_iter, tol=tol)
        print(f"bare crowd-kit (before): {bare_before:.2f}s", flush=True)

        cpu0 = tree_cpu_seconds(worker.pid)
        t = time.perf_counter()
        run = services.aggregation_run_create(batch_ids=sorted(batches.values()), trigger="bench")
        run.refresh_from_db()
        if run.celery_id:  # wait on the chord's result (Redis), not by polling the database
            from celery.result import AsyncResult

            AsyncResult(run.celery_id, app=app).get(timeout=7200, propagate=False)
        while True:
            run.refresh_from_db()
            if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
                break
            time.sleep(0.05)
        pipeline = time.perf_counter() - t
        pipeline_cpu = tree_cpu_seconds(worker.pid) - cpu0
        if run.status != RunStatus.SUCCEEDED:
            raise SystemExit(f"run failed: {run.error}")
        print(f"pipeline through Celery ({a.concurrency} worker process(es)): {pipeline:.2f}s", flush=True)

        bare_after, bare_cpu_after, bare_labels = bare_crowdkit(frames, n_iter=n_iter, tol=tol)
        print(f"bare crowd-kit (after): {bare_after:.2f}s", flush=True)
    finally:
        worker.terminate()
        worker.wait(timeout=60)

    bare = (bare_before + bare_after) / 2
    bare_cpu = (bare_cpu_before + bare_cpu_after) / 2
    ours = dict(ItemResult.objects.filter(run=run).values_list("item__item_id", "label"))
    same = sum(ours[k] == v for k, v in bare_labels.items())
    truth = synthetic.read_truth(out)
    retained = dict(ItemResult.objects.filter(run=run).values_list("item__item_id", "retained"))
    tracks = sum(retained[i] == keep for i, (_, keep) in truth.items()) / len(truth)
    result = {
        "contexts": a.contexts,
        "items": len(ours),
        "judgments": imported["created"],
        "batches": len(batches),
        "worker_concurrency": a.concurrency,
        "import_judgments_seconds": round(t_import, 2),
        "pipeline_seconds": round(pipeline, 2),
        "bare_crowdkit_seconds": round(bare, 2),
        "bare_before_after": [round(bare_before, 2), round(bare_after, 2)],
        "ratio": round(pipeline / bare, 3),
        "pipeline_worker_cpu_seconds": round(pipeline_cpu, 2),
        "bare_crowdkit_cpu_seconds": round(bare_cpu, 2),
        "cpu_ratio": round(pipeline_cpu / bare_cpu, 3),
        "labels_equal": f"{same}/{len(bare_labels)}",
        "retention_matches_truth": round(tracks, 4),
        "retention": run.summary["totals"]["retention"],
        "run_timings": {k: round(v, 2) for k, v in run.timings.items()},
    }
    print(f"ratio pipeline / bare crowd-kit = {result['ratio']:.3f} wall (goal <= 1.3), "
          f"{result['cpu_ratio']:.3f} CPU (worker processes vs bare); labels equal {result['labels_equal']}")
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| set | {a.contexts} contexts, {result['items']} items, {result['judgments']} judgments, {result['batches']} batches |")
    print(f"| import_judgments | {t_import:.1f} s |")
    print(f"| pipeline through Celery ({a.concurrency} worker process) | {pipeline:.2f} s |")
    print(f"| bare crowd-kit (mean of {bare_before:.2f} and {bare_after:.2f}) | {bare:.2f} s |")
    print(f"| ratio (goal <= 1.3) | {result['ratio']:.3f} wall, {result['cpu_ratio']:.3f} CPU |")
    print(f"| labels equal to bare crowd-kit | {result['labels_equal']} |")
    if a.json:
        print(json.dumps(result))
    if not a.keep:
        import shutil

        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
