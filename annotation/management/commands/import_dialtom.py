from annotation.services import dialtom_import

from ._base import ReportCommand


class Command(ReportCommand):
    help = ("Import the DialToM authors' release files of DIR ({MI,ESC,PFG}_{retrospective,prospective,"
            "prospective-easy}_verified.json) as contexts and items. Re-running changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--seed", type=int, help="shuffle seed of prospective options (default settings.DIALTOM_SEED)")
        parser.add_argument("--batch", help="put every item in this batch (default: one batch per file)")
        super().add_arguments(parser)

    def run(self, *, directory, seed, batch, **options):
        return dialtom_import(directory=directory, seed=seed, batch=batch)

    def summary(self, report):
        yield (f"{', '.join(report['files'])}: {report['retrospective']} retrospective, {report['prospective']} "
               f"prospective, {report['easy']} easy, {report['counterfactual']} counterfactual items "
               f"({report['created']['items']} created) on {report['contexts']} contexts "
               f"({report['created']['contexts']} created)")
