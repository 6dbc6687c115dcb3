from scoring.services import counterfactuals_import

from ._base import JsonCommand, read_lines


class Command(JsonCommand):
    help = "Import counterfactual profiles (JSONL: item_id, profile) as counterfactual items answered NOTA."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("path")
        parser.add_argument("--into-batch", help="put the new items in this batch (created if needed)")

    def run(self, **options):
        path = options["path"]
        return counterfactuals_import(lines=read_lines(path), source=path, into_batch=options["into_batch"])
