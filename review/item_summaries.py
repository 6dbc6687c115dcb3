"""`annotation.ItemSummary`'s flag counts and decision in force (issue 23), refreshed by the
review services in the transaction that changes them, and the rebuild of every summary
from its sources (`manage.py item_summaries_rebuild`)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import CharField, Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus
from aggregation.item_summaries import item_summaries_results_refresh
from annotation.models import Context, Item, ItemSummary
from annotation.summaries import item_summaries_create
from verification.models import Judgment
from verification.summaries import item_summaries_judgments_refresh

from .models import DecisionInForce, Flag, FlagStatus


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
    in_force = DecisionInForce.objects.filter(item_id=OuterRef("item_id")).values("decision")
    return _rows(item_ids).update(decision=Coalesce(Subquery(in_force, output_field=CharField()), Value("")))


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _rebuild_sql() -> str:
    """The whole rebuild as one set-based statement (PostgreSQL): each source read once, hash
    joined, where the refresh functions above read item by item. The same values: the
    randomized history test compares what those maintained with what this makes."""
    return f"""
INSERT INTO {_table(ItemSummary)} (item_id, batch_id, domain, task, attribute, variant, judgments, flags_open, flags_total,
                                   label, posterior, n_agree, agreement, retained, disagrees, decision)
WITH cur AS (
    SELECT br.batch_id, max(br.run_id) AS run_id FROM {_table(BatchResult)} br
    JOIN {_table(AggregationRun)} r ON r.id = br.run_id WHERE r.status = '{RunStatus.SUCCEEDED.value}' GROUP BY br.batch_id
), res AS (
    SELECT DISTINCT ON (ir.item_id) ir.item_id, ir.label, ir.posterior, ir.n_agree, ir.n_judgments, ir.retained
    FROM {_table(ItemResult)} ir JOIN cur ON cur.batch_id = ir.batch_id AND cur.run_id = ir.run_id
    ORDER BY ir.item_id, ir.run_id DESC
), jn AS (
    SELECT item_id, count(*) AS n FROM {_table(Judgment)} GROUP BY item_id
), fl AS (
    SELECT item_id, count(*) FILTER (WHERE status = '{FlagStatus.OPEN.value}') AS open, count(*) AS total
    FROM {_table(Flag)} GROUP BY item_id
), dec AS (
    SELECT item_id, decision FROM {_table(DecisionInForce)}
)
SELECT i.id, i.batch_id, c.domain_id, i.task, i.attribute, i.variant, coalesce(jn.n, 0), coalesce(fl.open, 0),
       coalesce(fl.total, 0), coalesce(res.label, ''), coalesce(res.posterior, -1), res.n_agree,
       CASE WHEN res.n_judgments > 0 AND res.n_agree IS NOT NULL THEN res.n_agree::float8 / res.n_judgments::float8 ELSE -1 END,
       res.retained, CASE WHEN res.item_id IS NOT NULL THEN res.label <> i.answer AND res.label <> '' END,
       coalesce(dec.decision, '')
FROM {_table(Item)} i JOIN {_table(Context)} c ON c.id = i.context_id
LEFT JOIN res ON res.item_id = i.id LEFT JOIN jn ON jn.item_id = i.id
LEFT JOIN fl ON fl.item_id = i.id LEFT JOIN dec ON dec.item_id = i.id
"""


@transaction.atomic
def item_summaries_rebuild() -> int:
    """Every item's summary again from scratch: rows from the items, then judgments, current
    aggregates, flags and decisions. Returns the number of rows. One statement on PostgreSQL
    (`_rebuild_sql`); elsewhere (SQLite: the demo) the refresh functions, one source at a time."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {_table(ItemSummary)}")  # not TRUNCATE: deferred FK checks may be pending
            cursor.execute(_rebuild_sql())
            return cursor.rowcount
    ItemSummary.objects.all().delete()
    made = item_summaries_create()
    item_summaries_judgments_refresh()
    item_summaries_results_refresh()
    item_summaries_flags_refresh()
    item_summaries_decision_refresh()
    return made
