"""Shared shape of the verification commands: `--json` prints one JSON object as the last line."""
import json

from django.core.management.base import BaseCommand, CommandError

from verification.services import VerificationError


class JsonCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print one JSON object of what was done, last")

    def run(self, **options) -> tuple[str, dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def handle(self, *args, **options):
        try:
            text, result = self.run(**options)
        except VerificationError as exc:
            raise CommandError(f"{exc.field or 'input'}: {exc.message}") from None
        if options["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True, default=str))
        else:
            self.stdout.write(text)
