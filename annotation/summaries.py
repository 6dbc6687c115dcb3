"""The rows of `ItemSummary` (issue 23): one per item, made by a database trigger when an item
is inserted (whatever path: the ORM, `bulk_create`, COPY) and refreshed when the item row
changes. `item_summaries_create` makes them through the ORM for a rebuild; the columns that
come from judgments, results, flags and decisions are refreshed by the apps that own those
(`verification.summaries`, `aggregation.summaries`, `review.item_summaries`)."""
from __future__ import annotations

from django.db.models import F

from .models import Item, ItemSummary


def item_summaries_create() -> int:
    """A fresh row for every item (the rebuild's first step; the summaries must be empty)."""
    rows = (
        Item.objects.order_by("pk")
        .annotate(domain=F("context__domain_id"))
        .values_list("pk", "batch_id", "domain", "task", "attribute", "variant")
    )
    made = 0
    chunk: list[ItemSummary] = []
    for pk, batch_id, domain, task, attribute, variant in rows.iterator(chunk_size=5000):
        chunk.append(ItemSummary(item_id=pk, batch_id=batch_id, domain=domain, task=task, attribute=attribute, variant=variant))
        if len(chunk) == 5000:
            made += len(ItemSummary.objects.bulk_create(chunk))
            chunk = []
    made += len(ItemSummary.objects.bulk_create(chunk))
    return made
