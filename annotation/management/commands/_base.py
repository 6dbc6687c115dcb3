"""Shared by the annotation commands: `--json` prints the report as the last line, and
bad input (`parsers.InputError`) becomes a CommandError `file:line: field: reason`."""
import json

from django.core.management.base import BaseCommand, CommandError

from annotation.parsers import InputError


class ReportCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object, last line")

    def handle(self, *args, **options):
        try:
            report = self.run(**options)
        except InputError as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for line in self.summary(report):
            self.stdout.write(line)
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def summary(self, report: dict):
        return []


def domain_lines(domains: dict, keys: tuple[str, ...]):
    for code, row in domains.items():
        yield f"  {code}: " + ", ".join(f"{key.replace('_', ' ')} {row[key]}" for key in keys)
