"""Make every item's summary (the staff's item list) again from its sources."""
import time

from django.core.management.base import BaseCommand

from review.item_summaries import item_summaries_rebuild


class Command(BaseCommand):
    help = "Rebuild the item summaries (annotation.ItemSummary) from judgments, current aggregates, flags and decisions."

    def handle(self, *args, **options):
        started = time.perf_counter()
        rows = item_summaries_rebuild()
        self.stdout.write(f"{rows} item summaries rebuilt in {time.perf_counter() - started:.1f} s")
