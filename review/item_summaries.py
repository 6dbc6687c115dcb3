"""`annotation.ItemSummary`'s flag counts and decision in force (issue 23), refreshed by the
review services in the transaction that changes them, and the rebuild of every summary
from its sources (`manage.py item_summaries_rebuild`)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import CharField, Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from aggregation.summaries import item_summaries_results_refresh
from annotation.models import ItemSummary
from annotation.summaries import item_summaries_create
from verification.summaries import item_summaries_judgments_refresh

from .models import Adjudication, Flag, FlagStatus


def _rows(item_ids) -> QuerySet[ItemSummary]:
    return ItemSummary.objects.all() if item_ids is None else ItemSummary.objects.filter(pk__in=item_ids)


def item_summaries_flags_refresh(*, item_ids: Iterable[int] | QuerySet | None = None) -> int:
    """Count the open and all flags of these items (all: None) again."""
    def count(condition: Q) -> Coalesce:
        counted = (
            Flag.objects.filter(condition, item_id=OuterRef("item_id")).order_by().values("item_id")
            .annotate(n=Count("id")).values("n")
        )
        return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))

    return _rows(item_ids).update(flags_open=count(Q(status=FlagStatus.OPEN)), flags_total=count(Q()))


def item_summaries_decision_refresh(*, item_ids: Iterable[int] | QuerySet | None = None) -> int:
    """The decision in force (the latest adjudication) of these items (all: None)."""
    latest = Adjudication.objects.filter(item_id=OuterRef("item_id")).order_by("-decided_at", "-id").values("decision")[:1]
    return _rows(item_ids).update(decision=Coalesce(Subquery(latest, output_field=CharField()), Value("")))


@transaction.atomic
def item_summaries_rebuild() -> int:
    """Every item's summary again from scratch: rows from the items, then judgments, current
    aggregates, flags and decisions. Returns the number of rows."""
    ItemSummary.objects.all().delete()
    made = item_summaries_create()
    item_summaries_judgments_refresh()
    item_summaries_results_refresh()
    item_summaries_flags_refresh()
    item_summaries_decision_refresh()
    return made
