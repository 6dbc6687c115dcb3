from verification.services import batch_close

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Close a batch: no new or changed answers; live claims are released"

    def add_arguments(self, parser):
        parser.add_argument("name")
        super().add_arguments(parser)

    def run(self, **o):
        batch = batch_close(name=o["name"])
        return {"batch": batch.name, "status": batch.status}

    def summary(self, report):
        yield f"batch {report['batch']} is {report['status']}"
