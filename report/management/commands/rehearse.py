"""`manage.py rehearse DIR`: a rehearsal of a study on the authors' files, to budget it (report/rehearsal.py)."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from report.rehearsal import MODEL_FILE, VerifierModel, rehearse, summary_lines


class Command(BaseCommand):
    help = ("Import the authors' files in DIR (one batch a file), have simulated verifiers work them through the HTTP "
            "API against gunicorn + a Celery worker, make a release, score a baseline, fetch the study report; print "
            "and write the budget (judgments, verifier-hours, cost, wall time) for the run's policy and fixed k=3, k=5. "
            "Use a scratch database: the run's rows stay.")

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--model", type=Path, default=MODEL_FILE, help="the verifier model (JSON; default: %(default)s)")
        parser.add_argument("--verifiers", type=int, help="how many simulated verifiers (default: the model's)")
        parser.add_argument("--k-min", type=int, default=2)
        parser.add_argument("--k-max", type=int, default=5)
        parser.add_argument("--overlap", type=int, help="fixed k instead of adaptive k-min..k-max")
        parser.add_argument("--pay-per-item", type=float, default=0.0, help="pay per judgment, for the cost column")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--gunicorn-workers", type=int, default=2)
        parser.add_argument("--gunicorn-threads", type=int, default=4)
        parser.add_argument("--refresh-seconds", type=float, default=2.0, help="adaptive overlap refresh interval")
        parser.add_argument("--dashboard-every", type=float, default=5.0, help="seconds between dashboard loads")
        parser.add_argument("--timeout", type=float, default=3600.0)
        parser.add_argument("--stall-seconds", type=float, default=120.0, help="fail when no judgment comes for this long")
        parser.add_argument("--prefix", default="rehearsal", help="usernames, pool and release version start with it")
        parser.add_argument("--out", type=Path, help="write the result as JSON here")

    def handle(self, *args, **opts):
        if not opts["directory"].is_dir():
            raise CommandError(f"{opts['directory']}: not a directory")
        model = VerifierModel.load(opts["model"], verifiers=opts["verifiers"])
        result = rehearse(
            directory=opts["directory"], model=model, k_min=opts["k_min"], k_max=opts["k_max"], overlap=opts["overlap"],
            pay_per_item=opts["pay_per_item"], seed=opts["seed"], gunicorn_workers=opts["gunicorn_workers"],
            gunicorn_threads=opts["gunicorn_threads"], refresh_seconds=opts["refresh_seconds"],
            dashboard_every=opts["dashboard_every"], timeout=opts["timeout"], stall_seconds=opts["stall_seconds"], prefix=opts["prefix"],
            log=lambda line: self.stderr.write(line),
        )
        for line in summary_lines(result):
            self.stdout.write(line)
        if opts["out"]:
            opts["out"].parent.mkdir(parents=True, exist_ok=True)
            opts["out"].write_text(json.dumps(result, indent=2))
        self.stdout.write(json.dumps(result))
        if result["invariants"]["violations"]:
            raise CommandError("; ".join(result["invariants"]["violations"]))
