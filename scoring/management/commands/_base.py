import json

from django.core.management.base import BaseCommand, CommandError

from scoring.services import InputErrors


class JsonCommand(BaseCommand):
    """A command that takes --json and then prints one JSON object of what it did, last."""

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print a JSON summary as the last line")

    def handle(self, *args, **options):
        try:
            summary = self.run(**options)
        except InputErrors as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(summary, sort_keys=True))
        else:
            self.stdout.write(self.style.SUCCESS(self.describe(summary)))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def describe(self, summary: dict) -> str:
        return ", ".join(f"{key}: {value}" for key, value in summary.items())


def read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise CommandError(f"{path}:0: file: cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}:0: file: not UTF-8 ({exc.reason})") from exc
