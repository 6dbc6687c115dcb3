#!/usr/bin/env python3
"""The full-size rehearsal of a study (issue 25): `manage.py rehearse` on the authors' pool.

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/rehearsal.py [--scale 0.05]

Makes the pool-shaped directory of bench/dialtom_pool.py (55 files, 5,943 records at scale 1,
made from the real sample) in a temporary folder, creates a throw-away database
`test_<name of DATABASE_URL's database>` (dropped at the end, releases in a temporary
RELEASE_ROOT), and runs the rehearsal (report/rehearsal.py): simulated verifiers through the
HTTP API against gunicorn + PostgreSQL + a Celery worker, aggregation as batches complete, a
release, a baseline scored, the study report. Prints the budget table and writes
bench/results/rehearsal[-<scale>].json and .md; the figures are in bench/README.md. The sample
is ../shared/data/dialtom-pool/MI_data_0_50.sample.json, or $DIALTOM_POOL_SAMPLE, or --sample.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")


def run(*, scale: float, verifiers: int | None, pay: float, k_min: int, k_max: int, overlap: int | None,
        out: Path | None, sample: Path, timeout: float, keep_db: bool = False, dashboard_every: float = 10.0) -> dict:
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import override_settings

    from bench.dialtom_pool import make_pool
    from report.rehearsal import VerifierModel, rehearse, summary_lines

    work = Path(tempfile.mkdtemp(prefix="rehearsal-pool-"))
    shape = make_pool(work / "pool", sample, scale)
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
    try:
        with override_settings(RELEASE_ROOT=work / "releases"):
            result = rehearse(directory=work / "pool", model=VerifierModel.load(verifiers=verifiers), k_min=k_min,
                              k_max=k_max, overlap=overlap, pay_per_item=pay, timeout=timeout,
                              dashboard_every=dashboard_every,
                              log=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if not keep_db:
            connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(work, ignore_errors=True)  # the pool and the release files
    result["scale"], result["pool"] = scale, shape
    lines = summary_lines(result)
    print("\n".join(lines))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.joinpath(out.name + ".json").write_text(  # not with_suffix: "-0.05" holds a dot
            json.dumps(result, indent=2))
        out.parent.joinpath(out.name + ".md").write_text(
            f"# Rehearsal at scale {scale} ({time.strftime('%Y-%m-%d %H:%M')})\n\n"
            f"Pool: {shape['records']} records in {shape['files']} files. Rerun: "
            f"`DATABASE_URL=... .venv/bin/python bench/rehearsal.py --scale {scale}`\n\n" + "\n".join(lines) + "\n")
    return result


def main():
    from bench.dialtom_pool import SAMPLE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--verifiers", type=int)
    parser.add_argument("--pay-per-item", type=float, default=0.15)
    parser.add_argument("--k-min", type=int, default=2)
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--overlap", type=int, help="fixed k instead of adaptive")
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--timeout", type=float, default=6 * 3600)
    parser.add_argument("--dashboard-every", type=float, default=10.0, help="seconds between dashboard loads")
    parser.add_argument("--keep-db", action="store_true", help="keep the throw-away database (drop it yourself)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    suffix = "" if args.scale == 1 else f"-{args.scale:g}"
    out = args.out or ROOT / "bench" / "results" / f"rehearsal{suffix}"
    result = run(scale=args.scale, verifiers=args.verifiers, pay=args.pay_per_item, k_min=args.k_min, k_max=args.k_max,
                 overlap=args.overlap, out=out, sample=args.sample, timeout=args.timeout,
                 dashboard_every=args.dashboard_every, keep_db=args.keep_db)
    return 1 if result["invariants"]["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
