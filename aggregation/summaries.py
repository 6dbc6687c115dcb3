"""Retention summaries written by the aggregation job (issue 23): the dashboard reads these, never
the results of every item.

- `ResultCell`: per succeeded run × batch × task × domain × attribute, retained / total audited results.
- `CurrentResultCell`: those of the current run of every batch, summed per task × domain × attribute.
- `RunRetention`: per succeeded run, its retention and the change against the latest earlier
  results of the same batches.
- `CurrentWorkerTally`: per verifier, Dawid–Skene accuracy × judgments over the current runs.
- `ShortResults`: per run × batch × number of judgments, the results (release warnings: those under k).
- `AgreementPattern`: per run × batch × cell, the items with the same judgments per choice (the
  study report's agreement, which a release freezes with it).
- `BatchResult.is_current`: which run's results are a batch's current ones (`current_results_adopt`).
- `QueueSlot.aggregated` and the verification tallies' aggregated counts (`verification.tallies`).

`runs_summaries_write` runs in the transaction that makes a run current (`services.aggregation_run_finish`);
`batches_regolded` when items are marked gold or unmarked (their results leave or join the
retention tables, at once, not at the next run); `rebuild` recounts everything.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import connection
from django.db.models import Count, Exists, F, FloatField, OuterRef, Q, Sum

from verification import tallies
from verification.models import QueueSlot

from .current import current_q, latest_succeeded_run
from .models import (
    AggregationRun, AgreementPattern, BatchResult, CurrentResultCell, CurrentWorkerTally, ItemResult, ResultCell, RunRetention,
    RunStatus, ShortResults, WorkerResult,
)
from .selectors import AGREEMENT_CELL, AGREEMENT_CHOICES, judgment_counts_per_item_sql

CELL_FIELDS = {"task": "item__task", "domain": "item__context__domain_id", "attribute": "item__attribute"}


def _ratio(num, den):
    return num / den if den else None


def result_cells_write(*, run_id: int, batch_ids: Iterable[int] | None = None) -> None:
    """(Re)write the run's cells (of these batches only, if given) from its item results."""
    results = ItemResult.objects.filter(run_id=run_id, item__is_gold=False, n_judgments__gt=0)
    cells = ResultCell.objects.filter(run_id=run_id)
    wanted = None if batch_ids is None else set(batch_ids)  # read once: an iterator would be empty the second time
    if wanted is not None:
        results, cells = results.filter(batch_id__in=wanted), cells.filter(batch_id__in=wanted)
    cells.delete()
    rows = (results.values("batch_id", *CELL_FIELDS.values()).order_by()
            .annotate(total=Count("id"), n_retained=Count("id", filter=Q(retained=True))))
    ResultCell.objects.bulk_create([
        ResultCell(run_id=run_id, batch_id=r["batch_id"], total=r["total"], retained=r["n_retained"],
                   **{name: r[field] or "" for name, field in CELL_FIELDS.items()})
        for r in rows
    ], batch_size=5000)
    short = ShortResults.objects.filter(run_id=run_id)
    results = ItemResult.objects.filter(run_id=run_id, item__is_gold=False)
    if wanted is not None:
        short, results = short.filter(batch_id__in=wanted), results.filter(batch_id__in=wanted)
    short.delete()
    ShortResults.objects.bulk_create([
        ShortResults(run_id=run_id, batch_id=r["batch_id"], n_judgments=r["n_judgments"], items=r["n"])
        for r in results.values("batch_id", "n_judgments").order_by().annotate(n=Count("id"))
    ], batch_size=5000)


def agreement_patterns_write(*, run_id: int, batch_ids: Iterable[int] | None = None) -> None:
    """(Re)write the run's agreement patterns (of these batches only, if given) from the usable
    judgments on its batches' benchmark items: one INSERT … SELECT, no judgment through Python."""
    patterns = AgreementPattern.objects.filter(run_id=run_id)
    batches = set(BatchResult.objects.filter(run_id=run_id).values_list("batch_id", flat=True))
    if batch_ids is not None:
        wanted = set(batch_ids)  # read once: an iterator would be empty the second time
        batches &= wanted
        patterns = patterns.filter(batch_id__in=wanted)
    patterns.delete()
    if not batches:
        return
    per_item, params = judgment_counts_per_item_sql(batch_ids=sorted(batches))
    quote = connection.ops.quote_name
    counts = [f"c{k}" for k in range(len(AGREEMENT_CHOICES))]
    cell = ", ".join(AGREEMENT_CELL)
    columns = ", ".join(quote(AgreementPattern._meta.get_field(name).column)
                        for name in ("run", *AGREEMENT_CELL, *counts, "items", "judgments"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH {per_item} INSERT INTO {quote(AgreementPattern._meta.db_table)} ({columns}) "
            f"SELECT %s, {cell}, {', '.join(counts)}, count(*), sum(judgments) FROM per_item "
            f"GROUP BY {cell}, {', '.join(counts)}",
            [*params, run_id],
        )


def current_results_adopt(*, run_id: int) -> list[int]:
    """The run just made SUCCEEDED becomes the current results of its batches, except where a
    later succeeded run is already (runs may finish out of order): `BatchResult.is_current`.
    Returns the batches it became current for."""
    newer = BatchResult.objects.filter(batch_id=OuterRef("batch_id"), is_current=True, run_id__gt=run_id)
    batch_ids = list(BatchResult.objects.filter(run_id=run_id).exclude(Exists(newer)).values_list("batch_id", flat=True))
    BatchResult.objects.filter(batch_id__in=batch_ids, is_current=True).exclude(run_id=run_id).update(is_current=False)
    BatchResult.objects.filter(run_id=run_id, batch_id__in=batch_ids).update(is_current=True)
    return batch_ids


def current_results_rebuild() -> None:
    """`BatchResult.is_current` from scratch: each batch's latest succeeded run."""
    BatchResult.objects.filter(is_current=True).exclude(run_id=latest_succeeded_run()).update(is_current=False)
    BatchResult.objects.filter(is_current=False, run_id=latest_succeeded_run()).update(is_current=True)


def current_workers_rebuild() -> None:
    """Σ accuracy × judgments and Σ judgments per verifier over the current run of every batch."""
    rows = (WorkerResult.objects.filter(current_q()).values("verifier_id").order_by()
            .annotate(w=Sum(F("accuracy") * F("n_judgments"), output_field=FloatField()), total=Sum("n_judgments")))
    CurrentWorkerTally.objects.all().delete()
    CurrentWorkerTally.objects.bulk_create([CurrentWorkerTally(verifier_id=r["verifier_id"], weighted=r["w"] or 0.0, n=r["total"] or 0)
                                            for r in rows])


def current_cells_rebuild() -> None:
    """Sum the cells of every batch's current run (the latest succeeded run that aggregated it)."""
    sums = (ResultCell.objects.filter(current_q()).values(*CELL_FIELDS).order_by(*CELL_FIELDS)
            .annotate(n=Count("id"), t=Sum("total"), r=Sum("retained")))
    CurrentResultCell.objects.all().delete()
    CurrentResultCell.objects.bulk_create([
        CurrentResultCell(task=s["task"], domain=s["domain"], attribute=s["attribute"], total=s["t"], retained=s["r"])
        for s in sums
    ])


def run_retention_write(*, run: AggregationRun) -> RunRetention:
    """The run's retention, and its change on the batches aggregated before it: its rate on them
    minus the rate of those batches' latest earlier results."""
    mine: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for batch_id, task, retained, total in ResultCell.objects.filter(run_id=run.pk).values_list("batch_id", "task", "retained", "total"):
        mine[batch_id][0] += retained
        mine[batch_id][1] += total
        by_task[task][0] += retained
        by_task[task][1] += total
    earlier: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    cells = ResultCell.objects.filter(batch_id__in=list(mine), run_id=latest_succeeded_run(before=run.pk))
    for batch_id, retained, total in cells.values_list("batch_id", "retained", "total"):
        earlier[batch_id][0] += retained
        earlier[batch_id][1] += total
    common = set(mine) & set(earlier)
    change = None
    if common:
        before = _ratio(sum(earlier[b][0] for b in common), sum(earlier[b][1] for b in common))
        now = _ratio(sum(mine[b][0] for b in common), sum(mine[b][1] for b in common))
        change = None if before is None or now is None else now - before
    values = {
        "retained": sum(v[0] for v in mine.values()), "total": sum(v[1] for v in mine.values()),
        "retro_retained": by_task["retrospective"][0], "retro_total": by_task["retrospective"][1],
        "prosp_retained": by_task["prospective"][0], "prosp_total": by_task["prospective"][1],
        "change": change, "change_batches": len(common),
    }
    return RunRetention.objects.update_or_create(run=run, defaults=values)[0]


def items_aggregated(*, batch_ids: Iterable[int] | None = None) -> set[int]:
    """Ids of the items with a result in a succeeded run (of these batches)."""
    results = ItemResult.objects.filter(run__status=RunStatus.SUCCEEDED)
    if batch_ids is not None:
        results = results.filter(batch_id__in=list(batch_ids))
    return set(results.values_list("item_id", flat=True).distinct())


def batches_progress_refresh(*, batch_ids: Iterable[int] | None = None) -> None:
    """Mark the aggregated items' slots and recount the batches' tallies with them."""
    ids = None if batch_ids is None else sorted(set(batch_ids))
    aggregated = items_aggregated(batch_ids=ids)
    slots = QueueSlot.objects.all() if ids is None else QueueSlot.objects.filter(batch_id__in=ids)
    # a semi-join, not the ids as parameters: all 4M of them in the from-scratch rebuild
    has_result = Exists(ItemResult.objects.filter(run__status=RunStatus.SUCCEEDED, item_id=OuterRef("item_id")))
    slots.filter(aggregated=True).exclude(has_result).update(aggregated=False)
    slots.filter(aggregated=False).filter(has_result).update(aggregated=True)
    tallies.batch_tallies_refresh(batch_ids=ids, aggregated=aggregated)


def runs_summaries_write(*, run: AggregationRun) -> None:
    """A run became current for its batches (in the transaction that made it so)."""
    result_cells_write(run_id=run.pk)
    agreement_patterns_write(run_id=run.pk)
    run_retention_write(run=run)
    current_cells_rebuild()
    current_workers_rebuild()
    batches_progress_refresh(batch_ids=BatchResult.objects.filter(run_id=run.pk).values_list("batch_id", flat=True))


def batches_regolded(*, item_ids: Iterable[int]) -> None:
    """Items were marked gold or unmarked: their results leave or join the retention tables now."""
    from annotation.models import Item  # noqa: PLC0415

    batch_ids = set(Item.objects.filter(pk__in=list(item_ids), batch__isnull=False).values_list("batch_id", flat=True))
    if not batch_ids:
        return
    runs = sorted(set(BatchResult.objects.filter(batch_id__in=batch_ids, run__status=RunStatus.SUCCEEDED)
                      .values_list("run_id", flat=True)))
    for run_id in runs:
        result_cells_write(run_id=run_id, batch_ids=batch_ids)
        agreement_patterns_write(run_id=run_id, batch_ids=batch_ids)
    later = AggregationRun.objects.filter(pk__gte=runs[0], status=RunStatus.SUCCEEDED).order_by("pk") if runs else []
    for run in later:  # a run's change looks back at the earlier results of its batches
        run_retention_write(run=run)
    current_cells_rebuild()


def rebuild() -> None:
    """Every retention summary, the agreement patterns and the aggregated marks, from the results (the patterns: from the judgments)."""
    current_results_rebuild()
    ResultCell.objects.all().delete()
    AgreementPattern.objects.all().delete()
    RunRetention.objects.all().delete()
    runs = list(AggregationRun.objects.filter(status=RunStatus.SUCCEEDED).order_by("pk"))
    for run in runs:
        result_cells_write(run_id=run.pk)
        agreement_patterns_write(run_id=run.pk)
    if connection.vendor == "postgresql":  # the cells just written, for the statements below to be planned on
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {ResultCell._meta.db_table}")
    for run in runs:
        run_retention_write(run=run)
    current_cells_rebuild()
    current_workers_rebuild()
    batches_progress_refresh()
