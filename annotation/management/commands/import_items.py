from annotation.services import items_import

from ._base import ReportCommand


class Command(ReportCommand):
    help = ("Import items.jsonl (one multiple-choice item a line), streaming, batches created by name. "
            "All or nothing: a bad record stops it with file:line: field: reason.")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--chunk-size", type=int, default=2000, help="records written per INSERT")
        super().add_arguments(parser)

    def run(self, *, path, chunk_size, **options):
        if chunk_size < 1:
            raise ValueError("--chunk-size must be at least 1")
        return items_import(path=path, chunk_size=chunk_size)

    def summary(self, report):
        yield f"{report['created']} items created " + str(report["by_domain"])
        if report["batches_created"]:
            yield "batches created: " + ", ".join(report["batches_created"])
