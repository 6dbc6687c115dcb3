from verification.services import batch_pause

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Pause a batch: no new items are handed out; held items can still be answered"

    def add_arguments(self, parser):
        parser.add_argument("name")
        super().add_arguments(parser)

    def run(self, **o):
        batch = batch_pause(name=o["name"])
        return {"batch": batch.name, "status": batch.status}

    def summary(self, report):
        yield f"batch {report['batch']} is {report['status']}"
