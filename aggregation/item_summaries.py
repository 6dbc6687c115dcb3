"""The aggregate columns of `annotation.ItemSummary` (issue 23): an item's current result
(from its batch's latest succeeded run, `selectors.current_item_results`), copied when a run
becomes current (`aggregation_run_finish`) and by the rebuild. One query either way."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import BooleanField, QuerySet, Case, ExpressionWrapper, F, FloatField, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Cast, Coalesce

from annotation.models import ItemSummary

from .models import ItemResult
from .selectors import current_item_results


def _current(field: str, output):
    result = (
        current_item_results().filter(item_id=OuterRef("item_id")).order_by("-run_id")
        .annotate(
            agreement=Case(
                When(n_judgments__gt=0, n_agree__isnull=False,
                     then=Cast("n_agree", FloatField()) / Cast("n_judgments", FloatField())),
                default=Value(-1.0), output_field=FloatField(),
            ),
            # an aggregate without a label (no judgment) disagrees with nothing
            disagrees=ExpressionWrapper(~Q(label=F("item__answer")) & ~Q(label=""), output_field=BooleanField()),
        )
        .values(field)[:1]
    )
    return Subquery(result, output_field=output)


def item_summaries_results_refresh(*, item_ids: Iterable[int] | QuerySet | None = None) -> int:
    """Copy the current aggregate of these items (all: None) into their summaries."""
    rows = ItemSummary.objects.all() if item_ids is None else ItemSummary.objects.filter(pk__in=item_ids)
    return rows.update(
        label=Coalesce(_current("label", ItemSummary._meta.get_field("label")), Value("")),
        posterior=Coalesce(_current("posterior", FloatField()), Value(-1.0)),
        n_agree=_current("n_agree", ItemSummary._meta.get_field("n_agree")),
        agreement=Coalesce(_current("agreement", FloatField()), Value(-1.0)),
        retained=_current("retained", BooleanField()),
        disagrees=_current("disagrees", BooleanField()),
    )


def item_summaries_run_apply(*, run_id: int) -> int:
    """A run became current: refresh the items it has results for, and those of its batches
    (an item the run has no result for no longer has a current one)."""
    items = ItemSummary.objects.filter(
        Q(pk__in=ItemResult.objects.filter(run_id=run_id).values("item_id"))
        | Q(batch_id__in=ItemResult.objects.filter(run_id=run_id).values("batch_id"))
    )
    return item_summaries_results_refresh(item_ids=items.values("pk"))
