from django.core.management.base import BaseCommand, CommandError

from dashboard.summaries import REBUILDERS, summaries_rebuild


class Command(BaseCommand):
    help = "Rebuild the staff pages' summaries (tallies, retention cells, flag counts) from their sources."

    def add_arguments(self, parser):
        parser.add_argument("--only", choices=sorted(REBUILDERS), help="rebuild this one only")

    def handle(self, *args, **o):
        try:
            names = summaries_rebuild(only=o["only"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"rebuilt: {', '.join(names)}")
