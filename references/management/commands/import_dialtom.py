from pathlib import Path

from django.db import transaction

from annotation import dialtom
from annotation.authors import dialtom_import

from annotation.imported import unchanged_lines
from annotation.management.commands._base import ReportCommand, problem_lines


class Command(ReportCommand):
    help = ("Import the DialToM authors' files of DIR, whatever mix it holds: the unverified pool "
            "({MI,ESC,PFG}_data_{start}_{count}.json), the verified release ({MI,ESC,PFG}_{retrospective,"
            "prospective,prospective-easy}_verified.json), the counterfactuals ({MI,ESC,PFG}_counterfact.json) and the "
            "written inferences (written_inference.csv + combined_written_data.json, as references). "
            "Records that cannot be valid items are skipped and listed (--strict refuses them). Re-running "
            "changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--seed", type=int, help="shuffle seed of prospective options (default settings.DIALTOM_SEED)")
        parser.add_argument("--batch", help="put every item in this batch (default: one batch per file)")
        parser.add_argument("--strict", action="store_true",
                            help="refuse the import (writing nothing) if any record cannot be imported")
        parser.add_argument("--force", action="store_true",
                            help="import again the files whose content was imported before (skipped by default)")
        super().add_arguments(parser)

    def run(self, *, directory, seed, batch, strict, force, **options):
        from references.written import written_inference_files, written_inferences_import  # noqa: PLC0415

        written = written_inference_files(directory) if Path(directory).is_dir() else None
        with transaction.atomic():
            if written and not dialtom.source_files(Path(directory)):  # written inferences alone
                report = {"files": [], "unchanged": [], "references": 0, "created": {"references": 0}, "skipped": [],
                          "warnings": []}
            else:
                report = dialtom_import(directory=directory, seed=seed, batch=batch, strict=strict, force=force)
            if written:  # the references app: (context, state) units of accepted references
                refs = written_inferences_import(inferences=written[0], contexts=written[1], strict=strict, force=force)
                report["files"] += refs["files"]
                report["unchanged"] += refs["unchanged"]
                report["references"], report["created"]["references"] = refs["references"], refs["created"]["references"]
                report["skipped"] += refs["skipped"]
                report["warnings"] += refs["warnings"]
        return report

    def summary(self, report):
        created = report["created"]
        if "retrospective" not in report:  # written inferences alone
            if report["files"]:
                yield f"{', '.join(report['files'])}: {report['references']} references ({created['references']} created)"
        else:
            yield (f"{len(report['files'])} file(s): {report['retrospective']} retrospective, {report['prospective']} "
                   f"prospective, {report['easy']} easy, {report['counterfactual']} counterfactual items "
                   f"({created['items']} created, {report['retained_by_authors']} retained by the authors) on "
                   f"{report['contexts']} contexts ({created['contexts']} created), {report['references']} references "
                   f"({created['references']} created)")
        yield from unchanged_lines(report)
        yield from problem_lines(report)
