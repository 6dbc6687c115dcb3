from verification.services import judgments_exposure_mark

from ._base import JsonCommand


class Command(JsonCommand):
    help = (
        "Mark exposed the stored judgments of prospective items whose verifier read a dialogue showing "
        "the item's true continuation (before or after); with DIALTOM_EXPOSED_JUDGMENTS=exclude their "
        "items go back to the queue. Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count them, change nothing")
        super().add_arguments(parser)

    def run(self, **o):
        return judgments_exposure_mark(dry_run=o["dry_run"])

    def summary(self, report):
        verb = "would mark" if report["dry_run"] else "marked"
        yield f"{verb} {report['judgments']} judgment(s) exposed, on {report['items']} item(s) in {report['batches']} batch(es)"
