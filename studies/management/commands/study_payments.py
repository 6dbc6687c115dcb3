"""manage.py study_payments NAME --format prolific-bonus|csv|mturk"""
from django.core.management.base import BaseCommand, CommandError

from studies.models import Study
from studies.selectors import EXPORT_FORMATS, payments_export


class Command(BaseCommand):
    help = ("What a study's participants are owed: Prolific's bulk bonus lines (participant_id,amount), "
            "the whole ledger as CSV, or MTurk's approve and bonus rows")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--format", default="csv", choices=EXPORT_FORMATS)

    def handle(self, *args, **o):
        study = Study.objects.filter(name=o["name"]).first()
        if study is None:
            raise CommandError(f"no study named {o['name']!r}")
        self.stdout.write(payments_export(study=study, fmt=o["format"]), ending="")
