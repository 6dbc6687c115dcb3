"""`import_written_inferences DIR [--strict] [--set NAME] [--per-context K] [--json]`: the authors'
written inferences (written_inference.csv + combined_written_data.json) as accepted references."""
from pathlib import Path

from django.core.management.base import CommandError

from annotation.imported import unchanged_lines
from annotation.management.commands._base import problem_lines
from annotation.parsers import InputError
from dialtom_site.commands import ReportCommand
from references import written


class Command(ReportCommand):
    help = ("Import the DialToM authors' written inferences of DIR (written_inference.csv and "
            "combined_written_data.json) as the accepted references of a closed reference set. "
            "Bad rows are skipped and listed (--strict refuses them). Re-running changes nothing.")
    input_errors = (InputError, ValueError)

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--strict", action="store_true", help="refuse the files if any row cannot be imported")
        parser.add_argument("--force", action="store_true",
                            help="import again files whose content was imported before (skipped by default)")
        parser.add_argument("--set", dest="set_name", default=written.WRITTEN_SET, help="the reference set's name")
        parser.add_argument("--per-context", type=int, default=3, help="writers per (context, state), k (default 3)")
        super().add_arguments(parser)

    def run(self, *, directory, strict, set_name, per_context, force, **options):
        files = written.written_inference_files(directory)
        if files is None:
            raise CommandError(f"{directory}:0: files: no {written.WRITTEN_INFERENCES_FILE} with "
                               f"{written.WRITTEN_CONTEXTS_FILE} here")
        return written.written_inferences_import(
            inferences=files[0], contexts=files[1], strict=strict, set_name=set_name, per_context=per_context, force=force
        )

    def summary(self, report):
        if report["unchanged"]:
            yield from unchanged_lines(report)
            return
        yield (f"{report['reference_set']}: {report['references']} references on {report['units']} (context, state) "
               f"units of {report['contexts']} contexts by {report['workers']} workers "
               f"({report['created']['references']} created); {len(report['skipped'])} rows skipped")
        yield from problem_lines(report)
