"""Small summaries kept as the work happens (issue 23): the staff pages read these, never a pass
over all judgments.

- `QueueSlot.judged` / `.aggregated`: per item, judgments stored and "has a result in a succeeded run".
- `BatchTally` (batch × task × gold): items, judged / complete items, judgments done up to k, exposed
  judgments, and the same counts for the aggregated items: the dashboard's progress and staffing.
- `BatchDayTally` (batch × UTC day): judgments and the first of them: throughput and the ETA.
- `VerifierTally`, `VerifierSecondCount` (verifier × whole second): the people table.

Each is kept in the transaction that changes its source: the answer statement
(`statements.judgment_store`, the CTEs of `tallies_sql`), the step-by-step answer and the
SQLite path (`judgment_recorded`), a change of label (`judgment_relabelled`); rarer events
(exposure marks, gold marks, a batch opened with another k, imports, aggregation runs)
recount the batches or verifiers they touched (`batch_tallies_refresh`, `verifier_tallies_refresh`).
`dashboard.summaries` rebuilds every one from scratch (`manage.py summaries_rebuild`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Min, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce, Floor, Least, TruncDate

from annotation.models import Item

from .models import BatchDayTally, BatchTally, Judgment, Label, QueueSlot, VerifierSecondCount, VerifierTally

LETTER_FIELDS = {"A": "l_a", "B": "l_b", "C": "l_c", "D": "l_d"}


def _table(model) -> str:
    return model._meta.db_table


# --- the answer statement's CTEs ------------------------------------------------------------------


def _after(cte: str | None) -> str:
    """A condition that makes a CTE run after `cte` has run to its end (an InitPlan): shared
    counter rows are taken in one order by every answer, so that two answers never deadlock."""
    return f"(SELECT count(*) FROM {cte}) >= 0" if cte else "TRUE"


def tallies_sql(*, after: str | None = None) -> str:
    """The tally CTEs of the answer statement (`statements._judgment_store_sql`), to follow its
    `ins` (the judgment inserted), `c` (its claim, with `item_is_gold`, `item_answer`,
    `batch_overlap`) and `slot` (the slot update, returning `judged_before` and `aggregated`).
    Each statement inserts at most one judgment, so each CTE moves one row by one. They run one
    after the other, the first after the CTE `after` (the statement's last before these)."""
    letters = ", ".join(f"(ins.displayed_label = '{x}')::int" for x in LETTER_FIELDS)
    letter_cols = ", ".join(LETTER_FIELDS.values())
    letter_set = ", ".join(f"{c} = t.{c} + EXCLUDED.{c}" for c in LETTER_FIELDS.values())
    return f"""
t_batch AS (
    UPDATE {_table(BatchTally)} t SET
        judgments = t.judgments + 1, exposed = t.exposed + ins.exposed::int,
        judged_items = t.judged_items + (s.judged_before = 0)::int,
        complete_items = t.complete_items + (s.judged_before + 1 = c.batch_overlap)::int,
        done = t.done + (s.judged_before < c.batch_overlap)::int,
        agg_judged = t.agg_judged + (s.aggregated AND s.judged_before = 0)::int,
        agg_complete = t.agg_complete + (s.aggregated AND s.judged_before + 1 = c.batch_overlap)::int
    FROM ins, c, slot s
    WHERE t.batch_id = c.batch_id AND t.task = c.task AND t.is_gold = c.item_is_gold AND {_after(after)}
    RETURNING 1
),
t_day AS (
    INSERT INTO {_table(BatchDayTally)} AS t (batch_id, day, judgments, first_at)
    SELECT ins.batch_id, (ins.created_at AT TIME ZONE 'UTC')::date, 1, ins.created_at FROM ins WHERE {_after("t_batch")}
    ON CONFLICT (batch_id, day) DO UPDATE SET judgments = t.judgments + 1, first_at = LEAST(t.first_at, EXCLUDED.first_at)
    RETURNING 1
),
t_verifier AS (
    INSERT INTO {_table(VerifierTally)} AS t (verifier_id, judgments, n_none, n_multiple, gold_n, gold_ok, {letter_cols})
    SELECT ins.verifier_id, 1, (ins.label = '{Label.NONE.value}')::int, (ins.label = '{Label.MULTIPLE.value}')::int,
           c.item_is_gold::int, (c.item_is_gold AND ins.label = c.item_answer)::int, {letters}
    FROM ins, c WHERE {_after("t_day")}
    ON CONFLICT (verifier_id) DO UPDATE SET judgments = t.judgments + 1, n_none = t.n_none + EXCLUDED.n_none,
        n_multiple = t.n_multiple + EXCLUDED.n_multiple, gold_n = t.gold_n + EXCLUDED.gold_n,
        gold_ok = t.gold_ok + EXCLUDED.gold_ok, {letter_set}
    RETURNING 1
),
t_seconds AS (
    INSERT INTO {_table(VerifierSecondCount)} AS t (verifier_id, second, n)
    SELECT ins.verifier_id, floor(ins.seconds_spent)::int, 1 FROM ins WHERE ins.seconds_spent IS NOT NULL AND {_after("t_verifier")}
    ON CONFLICT (verifier_id, second) DO UPDATE SET n = t.n + 1
    RETURNING 1
)"""


# --- the same, step by step (the checked answer path, SQLite) -----------------------------------


def _upsert(model, key: dict, changes: dict, initial: dict) -> None:
    """Move a summary row by `changes` (F expressions), creating it with `initial` if absent."""
    if model.objects.filter(**key).update(**changes):
        return
    try:
        with transaction.atomic():
            model.objects.create(**key, **initial)
    except IntegrityError:  # created meanwhile by a concurrent answer
        model.objects.filter(**key).update(**changes)


def judgment_recorded(*, judgment: Judgment, item: Item, overlap: int) -> None:
    """What `tallies_sql` does, for a judgment stored step by step (after its insert)."""
    QueueSlot.objects.filter(pk=item.pk).update(judged=F("judged") + 1)
    slot = QueueSlot.objects.filter(pk=item.pk).values_list("judged", "aggregated").first()
    if slot is None:
        batch_tallies_refresh(batch_ids=[judgment.batch_id])
    else:
        before, aggregated = slot[0] - 1, slot[1]
        moved = BatchTally.objects.filter(batch_id=judgment.batch_id, task=item.task, is_gold=item.is_gold).update(
            judgments=F("judgments") + 1, exposed=F("exposed") + int(judgment.exposed),
            judged_items=F("judged_items") + int(before == 0),
            complete_items=F("complete_items") + int(before + 1 == overlap),
            done=F("done") + int(before < overlap),
            agg_judged=F("agg_judged") + int(aggregated and before == 0),
            agg_complete=F("agg_complete") + int(aggregated and before + 1 == overlap),
        )
        if not moved:
            batch_tallies_refresh(batch_ids=[judgment.batch_id])
    _upsert(BatchDayTally, {"batch_id": judgment.batch_id, "day": judgment.created_at.date()},
            {"judgments": F("judgments") + 1, "first_at": Least(F("first_at"), Value(judgment.created_at))},
            {"judgments": 1, "first_at": judgment.created_at})
    counts = _verifier_counts(label=judgment.label, displayed=judgment.displayed_label, item=item)
    _upsert(VerifierTally, {"verifier_id": judgment.verifier_id},
            {name: F(name) + n for name, n in counts.items() if n}, counts)
    if judgment.seconds_spent is not None:
        _upsert(VerifierSecondCount, {"verifier_id": judgment.verifier_id, "second": int(judgment.seconds_spent // 1)},
                {"n": F("n") + 1}, {"n": 1})


def _verifier_counts(*, label: str, displayed: str, item: Item) -> dict:
    counts = {"judgments": 1, "n_none": int(label == Label.NONE), "n_multiple": int(label == Label.MULTIPLE),
              "gold_n": int(item.is_gold), "gold_ok": int(item.is_gold and label == item.answer)}
    counts.update({field: int(displayed == letter) for letter, field in LETTER_FIELDS.items()})
    return counts


def judgment_relabelled(*, verifier_id: int, item: Item, before: tuple[str, str], after: tuple[str, str]) -> None:
    """A verifier changed an answer: (label, displayed letter) before and after."""
    old, new = _verifier_counts(label=before[0], displayed=before[1], item=item), _verifier_counts(
        label=after[0], displayed=after[1], item=item)
    changes = {name: F(name) + (new[name] - old[name]) for name in new if new[name] != old[name]}
    if changes:
        VerifierTally.objects.filter(verifier_id=verifier_id).update(**changes)


# --- recounts (rare events) and the rebuild -------------------------------------------------------


def _replace(scope, key: tuple[str, ...], rows: list[dict]) -> None:
    """Make the summary rows of `scope` (a queryset) equal `rows`, in place: a row that stays is
    updated, not deleted and inserted again, so an answer moving it at the same moment waits for
    this transaction and adds its one on top, instead of missing the row."""
    model = scope.model
    existing = {tuple(getattr(o, k) for k in key): o for o in scope}
    wanted = {tuple(r[k] for k in key): r for r in rows}
    gone = [o.pk for k, o in existing.items() if k not in wanted]
    if gone:
        model.objects.filter(pk__in=gone).delete()
    fields = [f for f in rows[0] if f not in key] if rows else []
    changed = []
    for k, row in wanted.items():
        obj = existing.get(k)
        if obj is not None and any(getattr(obj, f) != row[f] for f in fields):
            for f in fields:
                setattr(obj, f, row[f])
            changed.append(obj)
    if changed:
        model.objects.bulk_update(changed, fields, batch_size=1000)
    new = [model(**row) for k, row in wanted.items() if k not in existing]
    model.objects.bulk_create(new, batch_size=2000, ignore_conflicts=True)


def batch_tallies_refresh(*, batch_ids: Iterable[int] | None = None, aggregated: set[int] | None = None,
                          slots: bool = True) -> int:
    """Recount `QueueSlot.judged` (unless `slots` is False: it updates, and so locks, every slot
    of the batches), `BatchTally` and `BatchDayTally` of these batches (all: None) from the judgments. `aggregated`: the ids of the items with a result in a succeeded run (the
    aggregation app's word, `aggregation.summaries`); by default the slots' `aggregated` flags."""
    ids = None if batch_ids is None else sorted(set(batch_ids))
    if ids == []:
        return 0

    def only(qs, field="batch_id"):
        return qs if ids is None else qs.filter(**{f"{field}__in": ids})

    counted = Judgment.objects.filter(item_id=OuterRef("item_id")).order_by().values("item_id").annotate(n=Count("id")).values("n")
    if slots:
        only(QueueSlot.objects.all()).update(judged=Coalesce(Subquery(counted), 0))
    if aggregated is None:
        aggregated = set(only(QueueSlot.objects.filter(aggregated=True)).values_list("item_id", flat=True))
    per_item = {
        r["item_id"]: (r["n"], r["e"])
        for r in only(Judgment.objects.all(), "item__batch_id").values("item_id").order_by()
        .annotate(n=Count("id"), e=Count("id", filter=Q(exposed=True)))
    }
    cells: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    items = only(Item.objects.filter(batch__isnull=False)).values_list("id", "batch_id", "task", "is_gold", "batch__overlap")
    for item_id, batch_id, task, is_gold, k in items.iterator(chunk_size=20000):
        n, e = per_item.get(item_id, (0, 0))
        cell = cells[(batch_id, task, is_gold)]
        agg = item_id in aggregated
        cell["items"] += 1
        cell["judgments"] += n
        cell["exposed"] += e
        cell["done"] += min(n, k)
        cell["judged_items"] += n > 0
        cell["complete_items"] += n >= k
        cell["agg_items"] += agg
        cell["agg_judged"] += agg and n > 0
        cell["agg_complete"] += agg and n >= k
    _replace(only(BatchTally.objects.all()), ("batch_id", "task", "is_gold"),
             [{"batch_id": b, "task": t, "is_gold": g, **dict.fromkeys(CELL_COUNTS, 0), **counts}
              for (b, t, g), counts in sorted(cells.items())])
    days = (only(Judgment.objects.all()).annotate(day=TruncDate("created_at")).values("batch_id", "day").order_by()
            .annotate(n=Count("id"), first=Min("created_at")))
    _replace(only(BatchDayTally.objects.all()), ("batch_id", "day"),
             [{"batch_id": r["batch_id"], "day": r["day"], "judgments": r["n"], "first_at": r["first"]} for r in days])
    return len(cells)


CELL_COUNTS = ("items", "judged_items", "complete_items", "done", "judgments", "exposed", "agg_items", "agg_judged", "agg_complete")


def verifier_tallies_refresh(*, verifier_ids: Iterable[int] | None = None) -> int:
    """Recount `VerifierTally` and `VerifierSecondCount` of these verifiers (all: None)."""
    ids = None if verifier_ids is None else sorted(set(verifier_ids))
    if ids == []:
        return 0
    judgments = Judgment.objects.all() if ids is None else Judgment.objects.filter(verifier_id__in=ids)
    letters = {field: Count("id", filter=Q(displayed_label=x)) for x, field in LETTER_FIELDS.items()}
    rows = (
        judgments.values("verifier_id").order_by()
        .annotate(judgments=Count("id"), n_none=Count("id", filter=Q(label=Label.NONE)),
                  n_multiple=Count("id", filter=Q(label=Label.MULTIPLE)),
                  gold_n=Count("id", filter=Q(item__is_gold=True)),
                  gold_ok=Count("id", filter=Q(item__is_gold=True, label=F("item__answer"))), **letters)
    )
    rows = list(rows)
    _replace(VerifierTally.objects.all() if ids is None else VerifierTally.objects.filter(verifier_id__in=ids), ("verifier_id",), rows)
    seconds = (judgments.exclude(seconds_spent=None).annotate(second=Floor("seconds_spent")).values("verifier_id", "second")
               .order_by().annotate(n=Count("id")))
    _replace(VerifierSecondCount.objects.all() if ids is None else VerifierSecondCount.objects.filter(verifier_id__in=ids),
             ("verifier_id", "second"), [{"verifier_id": r["verifier_id"], "second": int(r["second"]), "n": r["n"]} for r in seconds])
    return len(rows)


def median_seconds(histogram: dict[int, int]) -> float | None:
    """The median (PostgreSQL's percentile_cont(0.5)) of whole seconds {second: judgments}."""
    total = sum(histogram.values())
    if not total:
        return None
    position = (total - 1) / 2
    low, high = int(position), int(position) + (position % 1 > 0)
    values, seen = {}, 0
    for second in sorted(histogram):
        for rank in (low, high):
            if rank not in values and rank < seen + histogram[second]:
                values[rank] = second
        seen += histogram[second]
    return (values[low] + values[high]) / 2 if low != high else float(values[low])


def items_regolded(*, item_ids: Iterable[int]) -> None:
    """Items were marked gold or unmarked: recount their batches and the verifiers who judged them."""
    ids = list(item_ids)
    batch_tallies_refresh(batch_ids=set(Item.objects.filter(pk__in=ids, batch__isnull=False).values_list("batch_id", flat=True)))
    verifier_tallies_refresh(verifier_ids=set(Judgment.objects.filter(item_id__in=ids).values_list("verifier_id", flat=True)))
    for hook in REGOLD_HOOKS:
        hook(item_ids=ids)


# Called after items are marked gold or unmarked, in the same transaction: the higher apps' summaries
# of them (aggregation.summaries.batches_regolded, registered in its AppConfig.ready).
REGOLD_HOOKS: list = []
