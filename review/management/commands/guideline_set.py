import json
from pathlib import Path

from django.core.exceptions import ValidationError

from dialtom_site.commands import ReportCommand
from dialtom_site.errors import validation_text
from review.services import guideline_set


class Command(ReportCommand):
    help = "Set a batch's guidelines from a Markdown file: guideline_set BATCH guidelines.md [--examples examples.json]"
    input_errors = (ValidationError, OSError, ValueError)

    def add_arguments(self, parser):
        parser.add_argument("batch")
        parser.add_argument("markdown", help="a Markdown file")
        parser.add_argument("--examples", help='a JSON file {"belief": "Markdown", …, "prospective": "…"}')
        super().add_arguments(parser)

    def run(self, **o):
        text = Path(o["markdown"]).read_text(encoding="utf-8")
        examples = None
        if o["examples"]:
            try:
                examples = json.loads(Path(o["examples"]).read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{o['examples']}:{exc.lineno}: not JSON: {exc.msg}") from None
            if not isinstance(examples, dict):
                raise ValueError(f"{o['examples']}:1: examples: an object of topic -> Markdown is needed")
        guideline = guideline_set(batch_name=o["batch"], text=text, examples=examples)
        return {"batch": guideline.batch.name, "characters": len(guideline.text), "examples": guideline.examples.count()}

    def error_text(self, exc):
        if isinstance(exc, ValidationError):
            return validation_text(exc)
        return str(exc)
