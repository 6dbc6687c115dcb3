"""Benchmark: a full-size release (41,601 items) built and streamed, against plain json.dumps.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_bench_release .venv/bin/python bench/release_export.py

Fills its own database (created if missing) with 5,943 contexts, 41,601 items (6
retrospective + 1 prospective per context, 21 batches) and one succeeded aggregation run
whose ItemResults retain about 83 % / 54 % of them, as in the paper. Then, each phase in a
fresh Python process so that peak memory is its own:

- `baseline`: the same rows read with one query into a list and written with `json.dumps`
  in a loop (the obvious way);
- `build`: `release_build` (items.jsonl + items.csv + items.parquet + manifest, streamed
  from a server-side cursor);
- `stream`: GET /api/v1/releases/<v>/items?format=jsonl (the whole file, FileResponse),
  consumed chunk by chunk through Django's test client;
- `stream_filtered`: the same with `task=retrospective` (each line parsed and filtered).

Prints a Markdown table with time and peak RSS growth (a run without tracemalloc), peak
Python memory (tracemalloc, a second run), and each phase's ratio to the baseline.
"""
import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom_bench_release")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.local")
os.environ.setdefault("RELEASE_ROOT", "/tmp/dialtom-bench-releases")

N_CONTEXTS = 5943
ATTRIBUTES = ("belief", "desire", "intention", "emotion", "knowledge", "trust")
VERSION = "bench"


def ensure_database():
    import psycopg

    url = os.environ["DATABASE_URL"]
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django():
    import django

    django.setup()


def fill():
    from django.core.management import call_command
    from django.db import transaction

    call_command("migrate", verbosity=0)
    from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus
    from annotation.models import Batch, Context, Domain, Item
    from releases.models import Release

    if ItemResult.objects.count() == 7 * N_CONTEXTS:
        return
    rng = random.Random(7)
    with transaction.atomic():
        Release.objects.all().delete()
        ItemResult.objects.all().delete()
        BatchResult.objects.all().delete()
        AggregationRun.objects.all().delete()
        Item.objects.all().delete()
        Context.objects.all().delete()
        Batch.objects.all().delete()
        domains = list(Domain.objects.order_by("code"))
        batches = Batch.objects.bulk_create([Batch(name=f"bench-b{n:02d}") for n in range(21)])
        words = "the client said that they would rather not talk about drinking today but maybe next week".split()
        contexts = Context.objects.bulk_create(
            [
                Context(
                    context_id=f"{domains[n % 3].code}-s{n:05d}-w00",
                    domain=domains[n % 3],
                    session_key=f"{domains[n % 3].code}-s{n:05d}",
                    window_index=0,
                    turns=[
                        {"speaker": "initiator" if t % 2 == 0 else "recipient", "text": " ".join(rng.choices(words, k=20))}
                        for t in range(8)
                    ],
                    n_words=160,
                )
                for n in range(N_CONTEXTS)
            ],
            batch_size=2000,
        )
        items = []
        for n, context in enumerate(contexts):
            batch = batches[n * len(batches) // N_CONTEXTS]
            options = [f"Option {x}: " + " ".join(rng.choices(words, k=12)) for x in "ABCD"]
            for attribute in ATTRIBUTES:
                items.append(Item(item_id=f"{context.context_id}-{attribute}", context=context, task="retrospective",
                                  attribute=attribute, target_speaker="recipient", question=f"What is the client's {attribute}?",
                                  options=options, answer=rng.choice("ABCD"), batch=batch))
            items.append(Item(item_id=f"{context.context_id}-prospective-trust", context=context, task="prospective",
                              attribute="trust",
                              question="Which continuation is most consistent with this profile?", options=options,
                              answer=rng.choice("ABCD"), batch=batch,
                              profile={a: f"The client's {a}: " + " ".join(rng.choices(words, k=10)) for a in ATTRIBUTES}))
        items = Item.objects.bulk_create(items, batch_size=5000)
        run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED, settings={"threshold": 0.5}, progress=1.0)
        results, per_batch = [], {}
        for item in items:
            keep = rng.random() < (0.8325 if item.task == "retrospective" else 0.543)
            results.append(ItemResult(run=run, item=item, batch_id=item.batch_id, label=item.answer if keep else "NONE",
                                      posterior=0.97 if keep else 0.31, mv_label=item.answer, n_judgments=3, retained=keep))
            total, kept = per_batch.get(item.batch_id, (0, 0))
            per_batch[item.batch_id] = (total + 1, kept + keep)
        ItemResult.objects.bulk_create(results, batch_size=5000)
        BatchResult.objects.bulk_create([
            BatchResult(run=run, batch_id=b, items=t, judgments=3 * t, retained=k, ac1=0.9, ac1_se=0.01,
                        ac1_ci_low=0.88, ac1_ci_high=0.92, kappa=0.6, alpha=0.61, is_current=True)
            for b, (t, k) in per_batch.items()
        ])
    from django.db import connection

    with connection.cursor() as cursor:  # fresh planner statistics for the bulk-inserted tables
        cursor.execute("ANALYZE")


def ensure_release():
    import shutil

    from releases import services
    from releases.models import Release

    if Release.objects.filter(version=VERSION, status="ready").exists():
        return
    Release.objects.filter(version=VERSION).delete()
    shutil.rmtree(services.release_root() / VERSION, ignore_errors=True)
    release = services.release_create(version=VERSION, build=False)
    services.release_build(release_id=release.id)


def phase(name: str, *, trace: bool) -> dict:
    """Runs one phase in this process; returns its measurements.

    Time is measured in a run without tracemalloc (it slows Python down several times);
    peak Python memory in a second run with it."""
    from django.test import Client

    from accounts.models import Role, User

    out_path = Path("/tmp/dialtom-bench-baseline.jsonl")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    n_bytes = 0
    if name == "baseline":
        from releases import export, selectors

        pairs = selectors.current_batch_runs()
        roles = selectors.domain_roles()
        agreement = {br.batch_id: br.ac1 for br in selectors.current_batch_results(pairs=pairs)}
        rows = list(selectors.current_item_results(pairs=pairs).filter(retained=True)
                    .order_by("item__item_id").values(*selectors.RELEASE_VALUES))
        with open(out_path, "w", encoding="utf-8") as handle:
            for row in rows:
                record = export.release_record(row, version=VERSION, roles=roles, agreement=agreement)
                handle.write(json.dumps(record) + "\n")
        n_bytes = out_path.stat().st_size
    elif name == "build":
        import shutil

        from releases import services
        from releases.models import Release

        Release.objects.filter(version="bench-build").delete()
        shutil.rmtree(services.release_root() / "bench-build", ignore_errors=True)
        release = services.release_create(version="bench-build", build=False)
        release = services.release_build(release_id=release.id)
        n_bytes = sum(meta.get("bytes") or 0 for meta in release.files.values())
    elif name in ("stream", "stream_filtered"):
        user, _ = User.objects.get_or_create(username="bench-reader", defaults={"role": Role.RELEASE_READER})
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        url = f"/api/v1/releases/{VERSION}/items?format=jsonl" + ("&task=retrospective" if name == "stream_filtered" else "")
        response = client.get(url)
        assert response.status_code == 200, response.status_code
        with open("/tmp/dialtom-bench-stream.jsonl", "wb") as handle:
            for chunk in response.streaming_content:
                handle.write(chunk)
                n_bytes += len(chunk)
        response.close()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    return {"phase": name, "seconds": seconds, "peak_mib": peak / 2**20, "rss_growth_mib": rss / 1024, "bytes": n_bytes}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    if args.phase:
        setup_django()
        print(json.dumps(phase(args.phase, trace=args.trace)))
        return
    ensure_database()
    setup_django()
    t0 = time.perf_counter()
    fill()
    ensure_release()
    from releases.models import Release

    n_items = Release.objects.get(version=VERSION).n_items
    print(f"data ready in {time.perf_counter() - t0:.1f} s; release {VERSION}: {n_items} retained items of 41,601", file=sys.stderr)
    results = {}
    for name in ("baseline", "build", "stream", "stream_filtered"):
        runs = []
        for extra in ([], ["--trace"]):
            out = subprocess.run([sys.executable, __file__, "--phase", name, *extra], capture_output=True, text=True, env=os.environ)
            if out.returncode:
                sys.exit(out.stderr)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        results[name] = {**runs[0], "peak_mib": runs[1]["peak_mib"]}
    base = results["baseline"]
    print("| phase | time (s) | × baseline | peak Python memory (MiB) | × baseline | peak RSS growth (MiB) | × baseline | bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['seconds']:.2f} | {r['seconds'] / base['seconds']:.2f} | {r['peak_mib']:.1f} | "
              f"{r['peak_mib'] / base['peak_mib']:.3f} | {r['rss_growth_mib']:.1f} | "
              f"{r['rss_growth_mib'] / max(base['rss_growth_mib'], 1e-9):.3f} | {r['bytes']:,} |")


if __name__ == "__main__":
    main()
