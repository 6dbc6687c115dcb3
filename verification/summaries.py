"""The judgment counts of `annotation.ItemSummary` (issue 23).

The answer statement counts an answer in its own CTE (`statements.item_summary_sql`); the
step-by-step answer and the judgments import call these, in their transaction."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import ItemSummary

from .models import Judgment


def item_summary_judged(*, item_id: int) -> None:
    """One more judgment of the item."""
    ItemSummary.objects.filter(pk=item_id).update(judgments=F("judgments") + 1)


def item_summaries_judgments_refresh(*, item_ids: Iterable[int] | QuerySet | None = None) -> int:
    """Count the judgments of these items (all items: None) again."""
    counted = (
        Judgment.objects.filter(item_id=OuterRef("item_id")).order_by().values("item_id")
        .annotate(n=Count("id")).values("n")
    )
    rows = ItemSummary.objects.all() if item_ids is None else ItemSummary.objects.filter(pk__in=item_ids)
    return rows.update(judgments=Coalesce(Subquery(counted, output_field=IntegerField()), Value(0)))
