"""The one shape of the studio's management commands.

A command's `run()` does its work through the services and returns a report (a dict);
`summary(report)` gives the lines a person reads; with `--json` the report follows as one
JSON object on the last line (what scripts and CI read). Bad input, in the exceptions listed
in `input_errors`, stops the command with a CommandError carrying its message
(`file:line: field: reason` for files), and nothing is written.
"""
import json

from django.core.management.base import BaseCommand, CommandError


class ReportCommand(BaseCommand):
    input_errors: tuple[type[Exception], ...] = (ValueError,)

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object, last line")

    def handle(self, *args, **options):
        try:
            report = self.run(**options)
        except self.input_errors as exc:
            raise CommandError(self.error_text(exc)) from None
        for line in self.summary(report):
            self.stdout.write(line)
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True, default=str))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def summary(self, report: dict):
        """The lines a person reads; by default `key: value, …` on one line."""
        yield ", ".join(f"{key}: {value}" for key, value in report.items())

    def error_text(self, exc: Exception) -> str:
        return str(exc)
