"""python manage.py import_judgments PATH [--json]: judgments gathered elsewhere (spec §3)."""
from aggregation.services import JudgmentImportError, judgments_import
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = "Import a judgments CSV (item_id,worker,label): all or nothing, idempotent on item × worker."
    input_errors = (JudgmentImportError,)

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)

    def run(self, *, path, **options):
        return judgments_import(path=path)

    def summary(self, report):
        yield (
            f"{report['created']} judgments imported, {report['unchanged']} already there, "
            f"{report['users_created']} verifiers created ({report['rows']} rows of {report['file']})"
        )

    def error_text(self, exc):
        return "\n".join(exc.errors)
