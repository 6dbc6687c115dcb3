"""Reads of the staff's item list at any size (issue 23): one `annotation.ItemSummary` row per
item, filtered, sorted and paged by keyset (never OFFSET), with a total counted up to a cap
and within a time budget (past it, the planner's estimate, said to be one).

A page is a fixed number of statements whatever the size of the data: the batch named in
the filters (when there is one), the count (a LIMITed subquery), the page (LIMIT size + 1 on
an index of the sort key, the item id breaking ties), its items by primary key. The page and `GET /api/v1/items/`
both read `ItemFilterForm`'s cleaned data through `item_page`."""
from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

from annotation.models import Item, ItemSummary

COUNT_CAP = 10_000
# a count's time budget (ms): a combination of filters matching a few thousand items spread over
# millions cannot be counted from an index; past the budget the page shows the planner's estimate
COUNT_BUDGET_MS = settings.DIALTOM_ITEM_COUNT_BUDGET_MS
# nor is a count tried whose plan PostgreSQL estimates above this cost (its planner's units, about
# a page read from the cache: ~3 µs a unit measured at 400k; a count that stops at 10,001 rows of
# an index costs ~360, one over a posterior range, a domain and an attribute ~17,500 and 48 ms)
COUNT_MAX_COST = settings.DIALTOM_ITEM_COUNT_MAX_COST
# a page whose count ran out of its budget shows the estimate and asks for the exact count
# after it has loaded (`/review/items-count/`), with this longer budget
COUNT_LATER_BUDGET_MS = settings.DIALTOM_ITEM_COUNT_LATER_BUDGET_MS
_QUERY_CANCELED = "57014"
PAGE_SIZE = 50
# sort name -> the summary's column (each has an index `(column, item_id)`)
SORT_COLUMNS = {
    "posterior": "posterior",
    "agreement": "agreement",
    "judgments": "judgments",
    "flags": "flags_open",
    "decision": "decision",
    "item": None,
}
DEFAULT_SORT = "posterior"


class BadCursor(ValueError):
    pass


def cursor_encode(value, pk: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([value, pk], separators=(",", ":")).encode()).decode().rstrip("=")


def cursor_decode(text: str, *, sort: str) -> tuple:
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, TypeError) as exc:
        raise BadCursor("not a cursor of this list") from exc
    kind = str if sort == "decision" else (type(None) if sort == "item" else (int, float))
    if not isinstance(pk, int) or not isinstance(value, kind) or isinstance(value, bool):
        raise BadCursor("not a cursor of this sort")
    return value, pk


def items_filtered(*, filters: dict) -> QuerySet[ItemSummary]:
    """The summaries the filters (`ItemFilterForm.cleaned_data`) let through."""
    rows = ItemSummary.objects.all()
    if filters.get("batch"):
        rows = rows.filter(batch_id=filters["batch"].pk)
    for field in ("domain", "task", "attribute", "variant"):
        if filters.get(field):
            rows = rows.filter(**{field: filters[field]})
    for field in ("retained", "disagrees"):
        if filters.get(field):
            rows = rows.filter(**{field: filters[field] == "yes"})
    low, high = filters.get("posterior_min"), filters.get("posterior_max")
    if low is not None or high is not None:
        rows = rows.filter(posterior__gte=max(low or 0.0, 0.0))  # -1: no aggregate, never in a range
        if high is not None:
            rows = rows.filter(posterior__lte=high)
    if filters.get("flagged") == "yes":
        rows = rows.filter(flags_open__gt=0)
    elif filters.get("flagged") == "no":
        rows = rows.filter(flags_open=0)
    decided = filters.get("decided")
    if decided == "yes":
        rows = rows.exclude(decision="")
    elif decided == "no":
        rows = rows.filter(decision="")
    elif decided in ("keep", "drop"):
        rows = rows.filter(decision=decided)
    return rows


class _Counted(Exception):
    def __init__(self, n: int):
        self.n = n


def _plan(queryset: QuerySet) -> dict:
    """The top node of PostgreSQL's plan for the rows of `queryset` (EXPLAIN, not run)."""
    sql, params = queryset.values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return plan[0]["Plan"]


def bounded_count(queryset: QuerySet, *, budget_ms: int, max_cost: float | None = None) -> tuple[int, bool]:
    """(rows of `queryset`, whether that is the planner's estimate). Given `max_cost`, first the plan
    (EXPLAIN): where its estimated cost is over it (a filter matching few items spread over
    millions, which no index can count) the estimate, not counted; else counted exactly when
    PostgreSQL does it within `budget_ms` (statement_timeout, set in a savepoint that is always
    rolled back, so the connection's own setting is untouched), past which the estimate too (the
    plan read then, if not before)."""
    if connection.vendor != "postgresql":
        return queryset.count(), False
    plan = _plan(queryset) if max_cost is not None else None
    if plan is not None and plan["Total Cost"] > max_cost:
        return int(plan["Plan Rows"]), True
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [f"{max(1, int(budget_ms))}ms"])
            raise _Counted(queryset.count())  # rolls the savepoint back: the timeout was local to it
    except _Counted as counted:
        return counted.n, False
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) != _QUERY_CANCELED:
            raise
    return int((plan or _plan(queryset))["Plan Rows"]), True


def items_count(rows: QuerySet[ItemSummary], *, later: bool = False) -> tuple[int, bool, bool]:
    """(how many, whether there are more than COUNT_CAP, whether it is an estimate): one count
    reading at most COUNT_CAP + 1 index entries, within COUNT_BUDGET_MS and COUNT_MAX_COST (see
    `bounded_count`), or `later` (asked for once a page showing an estimate has loaded) within
    COUNT_LATER_BUDGET_MS whatever its cost."""
    capped = rows.order_by()[: COUNT_CAP + 1]
    n, estimated = (bounded_count(capped, budget_ms=COUNT_LATER_BUDGET_MS) if later
                    else bounded_count(capped, budget_ms=COUNT_BUDGET_MS, max_cost=COUNT_MAX_COST))
    return min(n, COUNT_CAP), n > COUNT_CAP, estimated


@dataclass(frozen=True)
class ItemPage:
    rows: list[ItemSummary]
    total: int
    capped: bool  # more than `total` (COUNT_CAP) items match
    estimated: bool  # `total` is the planner's estimate: counting took longer than COUNT_BUDGET_MS
    next: str | None  # cursor of the next page
    previous: str | None  # cursor of the page before
    sort: str
    descending: bool


def _key(row: ItemSummary, column: str | None):
    return None if column is None else getattr(row, column)


def item_list_count(*, filters: dict) -> tuple[int, bool, bool]:
    """The count a page could not make within its budget, asked for once the page has loaded."""
    return items_count(items_filtered(filters=filters), later=True)


def item_page(*, filters: dict, count: bool = True) -> ItemPage:
    """One page of the list: `filters` also carry `sort`, `dir`, `after` / `before` (cursors) and `size`.
    Raises BadCursor for a cursor this list did not make."""
    sort = filters.get("sort") or DEFAULT_SORT
    descending = filters.get("dir") == "desc"
    size = filters.get("size") or PAGE_SIZE
    column = SORT_COLUMNS[sort]
    rows = items_filtered(filters=filters)
    total, capped, estimated = items_count(rows) if count else (0, False, False)
    after, before = filters.get("after"), filters.get("before")
    backwards = bool(before)
    cursor = cursor_decode(before or after, sort=sort) if (before or after) else None
    forward_desc = descending != backwards  # the order this query walks the index in
    if cursor is not None:
        value, pk = cursor
        op = "<" if forward_desc else ">"
        table = ItemSummary._meta.db_table
        if column is None:
            rows = rows.filter(RawSQL(f'"{table}"."item_id" {op} %s', (pk,), output_field=BooleanField()))
        else:  # a row comparison: PostgreSQL walks the `(column, item_id)` index from the cursor on
            rows = rows.filter(RawSQL(f'("{table}"."{column}", "{table}"."item_id") {op} (%s, %s)', (value, pk),
                                      output_field=BooleanField()))
    order = [f"-{c}" if forward_desc else c for c in ([column] if column else []) + ["item_id"]]
    got = list(
        rows.select_related("batch")
        .only(*[f.name for f in ItemSummary._meta.concrete_fields if f.name not in ("batch",)], "batch__name")
        .order_by(*order)[: size + 1]
    )
    # the page's items by primary key, in a statement of their own: joined into the page's
    # statement, PostgreSQL may hash the whole item table before the LIMIT
    items = Item.objects.filter(pk__in=[row.item_id for row in got]).only("item_id", "answer", "is_gold").in_bulk()
    for row in got:
        row.item = items[row.item_id]
    more = len(got) > size
    got = got[:size]
    if backwards:
        got.reverse()
    first, last = (got[0], got[-1]) if got else (None, None)
    has_next = (more if not backwards else True) and last is not None
    has_previous = (bool(cursor) if not backwards else more) and first is not None
    return ItemPage(
        rows=got, total=total, capped=capped, estimated=estimated, sort=sort, descending=descending,
        next=cursor_encode(_key(last, column), last.item_id) if has_next else None,
        previous=cursor_encode(_key(first, column), first.item_id) if has_previous else None,
    )


EXPORT_COLUMNS = ("item_id", "batch", "domain", "task", "attribute", "variant", "intended", "judgments", "flags_open",
                  "flags_total", "label", "posterior", "n_agree", "agreement", "retained", "disagrees", "decision")


def item_row(row: ItemSummary) -> dict:
    """One item of the list as the API and the CSV give it (no aggregate: its fields are null)."""
    aggregated = row.posterior >= 0
    return {
        "item_id": row.item.item_id,
        "batch": row.batch.name if row.batch_id else None,
        "domain": row.domain,
        "task": row.task,
        "attribute": row.attribute,
        "variant": row.variant,
        "intended": row.item.answer,
        "judgments": row.judgments,
        "flags_open": row.flags_open,
        "flags_total": row.flags_total,
        "label": row.label if aggregated else None,
        "posterior": row.posterior if aggregated else None,
        "n_agree": row.n_agree if aggregated else None,
        "agreement": row.agreement if aggregated and row.agreement >= 0 else None,
        "retained": row.retained,
        "disagrees": row.disagrees,
        "decision": row.decision or None,
    }


def items_export(*, item_ids: list[str]) -> Iterator[dict]:
    """The rows of the items named (a selection of the list), in item-id order."""
    rows = (
        ItemSummary.objects.filter(item__item_id__in=item_ids)
        .select_related("item", "batch")
        .only(*[f.name for f in ItemSummary._meta.concrete_fields if f.name not in ("item", "batch")],
              "item__item_id", "item__answer", "batch__name")
        .order_by("item__item_id")
    )
    for row in rows.iterator(chunk_size=1000):
        yield item_row(row)


def items_unknown(*, item_ids: list[str]) -> list[str]:
    known = set(Item.objects.filter(item_id__in=item_ids).values_list("item_id", flat=True))
    return sorted(set(item_ids) - known)

