from django.conf import settings
from django.core.management.base import CommandError

from annotation.models import Batch
from scoring.services import easy_set_build

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Make the Easy variant of prospective items: distractors are true continuations from other sessions."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--batch", help="only the prospective items of this batch")
        parser.add_argument("--seed", type=int, default=settings.DIALTOM_SEED)
        parser.add_argument("--into-batch", help="put the new items in this batch (created if needed)")

    def run(self, **options):
        if options["batch"] and not Batch.objects.filter(name=options["batch"]).exists():
            raise CommandError(f"--batch: unknown batch {options['batch']}")
        return easy_set_build(seed=options["seed"], batch_name=options["batch"], into_batch=options["into_batch"])
