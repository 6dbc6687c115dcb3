from django.core.management.base import CommandError

from annotation.models import Batch
from verification.selectors import gold_accuracy

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Each verifier's accuracy on gold items (optionally in one batch)"

    def add_arguments(self, parser):
        parser.add_argument("--batch")
        super().add_arguments(parser)

    def run(self, **o):
        batch = None
        if o["batch"]:
            batch = Batch.objects.filter(name=o["batch"]).first()
            if batch is None:
                raise CommandError(f"batch: no batch named {o['batch']!r}")
        return {"verifiers": gold_accuracy(batch=batch)}

    def summary(self, report):
        rows = report["verifiers"]
        if not rows:
            yield "no gold judgments yet"
        for r in rows:
            yield f"{r['verifier']}: {r['gold_correct']}/{r['gold_answered']}" + (" (excluded)" if r["excluded"] else "")
