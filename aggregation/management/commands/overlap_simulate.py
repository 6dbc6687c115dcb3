"""python manage.py overlap_simulate --items items.jsonl --judgments judgments.csv [--truth truth.csv]
--k-min 2 --k-max 5 [--json]: replay a judgments file through the adaptive-overlap policy."""
from pathlib import Path

from django.core.management.base import CommandError

from aggregation.overlap import policy_from_settings
from aggregation.overlap_replay import ReplayInputError, read_replay_files, simulate
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = (
        "Replay judgments (in file order per item) through the same adaptive-overlap policy the live queue "
        "uses, and compare judgments spent and retention accuracy with fixed k (2, 3 and k-max)."
    )
    input_errors = (ReplayInputError,)

    def add_arguments(self, parser):
        parser.add_argument("--items", required=True, type=Path, help="items.jsonl (item_id, answer, task, batch)")
        parser.add_argument("--judgments", required=True, type=Path, help="judgments.csv (item_id,worker,label)")
        parser.add_argument("--truth", type=Path, help="truth.csv (item_id,...,keep): accuracy is scored against keep")
        parser.add_argument("--k-min", type=int, default=2)
        parser.add_argument("--k-max", type=int, default=5)
        parser.add_argument("--max-risk", type=float, help="override DIALTOM_OVERLAP_MAX_RISK")
        parser.add_argument("--fixed", default="2,3", help="fixed k to compare with, besides k-max (comma-separated)")
        parser.add_argument("--naive", action="store_true", help="also score the naive stopping rule (2 agree / 3 equal / 5)")
        super().add_arguments(parser)

    def run(self, **o):
        try:
            policy = policy_from_settings(k_min=o["k_min"], k_max=o["k_max"])
            if o["max_risk"] is not None:
                policy = policy.__class__(**{**policy.__dict__, "max_risk": o["max_risk"]})
        except ValueError as exc:
            raise CommandError(f"k-min/k-max: {exc}") from None
        try:
            fixed = [int(k) for k in o["fixed"].split(",") if k.strip()]
        except ValueError:
            raise CommandError(f"fixed: {o['fixed']!r} is not a comma-separated list of integers") from None
        data = read_replay_files(items=o["items"], judgments=o["judgments"], truth=o["truth"])
        return simulate(data, policy=policy, fixed=fixed, naive=o["naive"])

    def summary(self, report):
        def acc(x):
            return "-" if x is None else f"{x:.4f}"

        kmax = str(report["policy"]["k_max"])
        yield f"{report['items']} items in {report['batches']} batches, {report['judgments_available']} judgments in the file"
        yield (
            f"adaptive k={report['policy']['k_min']}..{kmax}: {report['adaptive_judgments']} judgments "
            f"({report['adaptive_judgments'] / max(report['fixed_judgments'][kmax], 1):.3f} of fixed k={kmax}), "
            f"accuracy {acc(report['adaptive_accuracy'])}, same decision as k={kmax} on "
            f"{report['adaptive_agreement_with_kmax']:.4f}"
        )
        for k, n in report["fixed_judgments"].items():
            yield f"fixed k={k}: {n} judgments, accuracy {acc(report['fixed_accuracy'][k])}"
        if "naive_judgments" in report:
            yield f"naive rule: {report['naive_judgments']} judgments, accuracy {acc(report['naive_accuracy'])}"

    def error_text(self, exc):
        return "\n".join(exc.errors)
