from annotation.services import dialtom_import

from ._base import ReportCommand


class Command(ReportCommand):
    help = ("Import the DialToM authors' files of DIR, whatever mix it holds: the unverified pool "
            "({MI,ESC,PFG}_data_{start}_{count}.json), the verified release ({MI,ESC,PFG}_{retrospective,"
            "prospective,prospective-easy}_verified.json) and the counterfactuals ({MI,ESC,PFG}_counterfact.json). "
            "Records that cannot be valid items are skipped and listed (--strict refuses them). Re-running "
            "changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--seed", type=int, help="shuffle seed of prospective options (default settings.DIALTOM_SEED)")
        parser.add_argument("--batch", help="put every item in this batch (default: one batch per file)")
        parser.add_argument("--strict", action="store_true",
                            help="refuse the import (writing nothing) if any record cannot be imported")
        super().add_arguments(parser)

    def run(self, *, directory, seed, batch, strict, **options):
        return dialtom_import(directory=directory, seed=seed, batch=batch, strict=strict)

    def summary(self, report):
        created = report["created"]
        yield (f"{len(report['files'])} file(s): {report['retrospective']} retrospective, {report['prospective']} "
               f"prospective, {report['easy']} easy, {report['counterfactual']} counterfactual items "
               f"({created['items']} created, {report['retained_by_authors']} retained by the authors) on "
               f"{report['contexts']} contexts ({created['contexts']} created), {report['references']} references")
        for problem in report["skipped"]:
            yield f"skipped {problem['file']}:{problem['line']} [{problem['key']}]: {problem['field']}: {problem['reason']}"
        for problem in report["warnings"]:
            yield f"warning {problem['file']}:{problem['line']} [{problem['key']}]: {problem['field']}: {problem['reason']}"
