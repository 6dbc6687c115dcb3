from django.core.management.base import CommandError

from scoring.models import ModelRun
from scoring.services import ScoringError, model_run_score

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Score a model run now, in this process (the upload queues the same job on Celery)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("name")

    def run(self, **options):
        run = ModelRun.objects.filter(name=options["name"]).first()
        if run is None:
            raise CommandError(f"name: unknown run {options['name']}")
        try:
            run = model_run_score(run_id=run.pk)
        except ScoringError as exc:
            raise CommandError(str(exc)) from exc
        return {"run": run.name, "release": run.release.version, "status": run.status, "overall": run.scores["overall"], "stats": run.stats}
