from annotation.services import contexts_import

from ._base import ReportCommand


class Command(ReportCommand):
    help = "Import contexts.jsonl (one window a line). All or nothing: a bad record stops it with file:line: field."

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)

    def run(self, *, path, **options):
        return contexts_import(path=path)

    def summary(self, report):
        yield f"{report['created']} contexts created " + str(report["by_domain"])
