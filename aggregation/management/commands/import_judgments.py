"""python manage.py import_judgments PATH [--json]: judgments gathered elsewhere (spec §3)."""
import json

from django.core.management.base import BaseCommand, CommandError

from aggregation.services import JudgmentImportError, judgments_import


class Command(BaseCommand):
    help = "Import a judgments CSV (item_id,worker,label): all or nothing, idempotent on item × worker."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--json", action="store_true", help="print one JSON object of what was done, last")

    def handle(self, *args, path, **options):
        try:
            result = judgments_import(path=path)
        except JudgmentImportError as exc:
            raise CommandError("\n".join(exc.errors)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"{result['created']} judgments imported, {result['unchanged']} already there, "
                f"{result['users_created']} verifiers created ({result['rows']} rows of {result['file']})"
            )
