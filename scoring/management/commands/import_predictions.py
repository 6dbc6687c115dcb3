from django.db import transaction

from scoring.services import model_run_create

from ._base import JsonCommand, read_lines


class Command(JsonCommand):
    help = "Upload a model's predictions (JSONL: item_id, prediction, reasoning?) and queue their scoring."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("path")
        parser.add_argument("--name", required=True, help="the run's unique slug")
        parser.add_argument("--model", required=True, help="the model's display name")
        parser.add_argument("--release", default="", help="the ready release to score on (default: the latest)")
        parser.add_argument("--description", default="")

    def run(self, **options):
        path = options["path"]
        with transaction.atomic():
            run = model_run_create(
                name=options["name"], model_name=options["model"], release=options["release"],
                description=options["description"], lines=read_lines(path), source=path,
            )
        run.refresh_from_db()
        return {
            "run": run.name, "id": run.pk, "release": run.release.version, "predictions": run.n_predictions,
            "status": run.status, "queued": True,
        }
