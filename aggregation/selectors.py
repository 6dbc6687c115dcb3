"""Reads for aggregation: the frames a run fits, and the current results.

"Current" results of a batch are those of the latest SUCCEEDED run that covered it
(latest = highest run id, i.e. started last): a failed or still running run never
replaces them.
"""
from __future__ import annotations

import hashlib

import pandas as pd
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, QuerySet

from annotation.models import Context, Item
from verification.models import Judgment
from verification.queue import offers_nota

from .current import latest_succeeded_run
from .models import AggregationRun, BatchResult, ItemResult

BASE_CATEGORIES = ("A", "B", "C", "D", "NONE", "MULTIPLE")
NOTA = "NOTA"
# the choices agreement is counted over (`AgreementPattern.c0`…`c6`, in this order): a group offering
# NOTA is rated over all seven, another over the six others (`categories_for`)
AGREEMENT_CHOICES = (*BASE_CATEGORIES[:4], NOTA, *BASE_CATEGORIES[4:])
AGREEMENT_CELL = ("batch", "task", "domain", "attribute", "variant")
ITEM_COLUMNS = ["id", "item_id", "answer", "task", "attribute", "variant", "is_gold", "domain"]


def batch_judgments_frame(*, batch_id: int) -> pd.DataFrame:
    """`task` (item pk), `worker` (verifier pk), `label` of a batch's usable judgments, sorted.

    Judgments of verifiers excluded from aggregation are left out, and so are exposed ones
    when the setting says so (`usable_judgments`).
    """
    rows = (
        usable_judgments().filter(item__batch_id=batch_id)
        .order_by()
        .values_list("item_id", "verifier_id", "label")
    )
    frame = pd.DataFrame.from_records(list(rows), columns=["task", "worker", "label"])
    return frame.sort_values(["task", "worker"], kind="mergesort").reset_index(drop=True)


def batch_items_frame(*, batch_id: int) -> pd.DataFrame:
    rows = (
        Item.objects.filter(batch_id=batch_id)
        .order_by("id")
        .values_list("id", "item_id", "answer", "task", "attribute", "variant", "is_gold", "context__domain_id")
    )
    return pd.DataFrame.from_records(list(rows), columns=ITEM_COLUMNS)


def categories_for(*, kinds) -> list[str]:
    """The answer choices the form offers items of these (task, variant) kinds: A–D, NOTA where
    shown (`verification.queue.offers_nota`: every prospective item), NONE, MULTIPLE."""
    cats = list(BASE_CATEGORIES[:4])
    if any(offers_nota(task=task, variant=variant) for task, variant in set(kinds)):
        cats.append(NOTA)
    return cats + list(BASE_CATEGORIES[4:])


def usable_judgments() -> QuerySet[Judgment]:
    """The judgments aggregation reads: not those of excluded verifiers, nor (with
    `DIALTOM_EXPOSED_JUDGMENTS = "exclude"`) those whose verifier had seen a related item."""
    qs = Judgment.objects.filter(verifier__excluded_from_aggregation=False)
    if settings.DIALTOM_EXPOSED_JUDGMENTS == "exclude":
        qs = qs.filter(exposed=False)
    return qs


def judgment_counts_per_item_sql(*, batch_ids) -> tuple[str, list]:
    """The usable judgments on the batches' benchmark (non-gold) items, counted per item: a common
    table expression named `per_item`, columns (item, AGREEMENT_CELL..., judgments, c0…), c_k the
    judgments of AGREEMENT_CHOICES[k]. The judgments are counted per item alone (in item order, no
    sort), and the item's cell joined to the counts (a row an item, not a row a judgment); a CTE's
    column list works on SQLite too, where a derived table's column aliases do not."""
    counts = {f"c{k}": Count("id", filter=Q(label=choice)) for k, choice in enumerate(AGREEMENT_CHOICES)}
    sql, params = (
        usable_judgments().filter(item__batch_id__in=list(batch_ids), item__is_gold=False)
        .values("item_id").annotate(judgments=Count("id"), **counts).order_by()
        .query.sql_with_params()
    )
    quote = connection.ops.quote_name
    item, context = quote(Item._meta.db_table), quote(Context._meta.db_table)
    columns = ", ".join(["judgments", *counts])
    return (f"per_item (item, {', '.join(AGREEMENT_CELL)}, {columns}) AS ("
            f"SELECT counted.item_id, i.batch_id, i.task, c.domain_id, i.attribute, i.variant, "
            f"{', '.join(f'counted.{name}' for name in ['judgments', *counts])} FROM ({sql}) counted "
            f"JOIN {item} i ON i.id = counted.item_id JOIN {context} c ON c.id = i.context_id)"), list(params)


def batch_ids_audited() -> list[int]:
    """The batches an "aggregate everything" covers (`aggregate --all`, the API's `all`, the
    dashboard's button, the sweep): every batch that holds a judgment, by id. A batch no one
    has audited has nothing to aggregate: its items would only dilute retention."""
    return list(Judgment.objects.order_by("batch_id").values_list("batch_id", flat=True).distinct())


def batch_is_complete(*, batch_id: int, overlap: int) -> bool:
    """Every non-gold item of the batch holds at least `overlap` judgments (and there is one);
    an adaptive batch also needs its allocation done (its last refresh asked for nothing more)."""
    from verification.models import AdaptiveOverlap

    items = Item.objects.filter(batch_id=batch_id, is_gold=False)
    if not items.exists() or AdaptiveOverlap.objects.filter(batch_id=batch_id, settled=False).exists():
        return False
    return not items.annotate(n=Count("judgments")).filter(n__lt=overlap).exists()


def batches_input_fingerprint(*, batch_ids: list[int]) -> str:
    """A hash of what a run would read: judgments (count, last id, last change) and exclusions."""
    parts = []
    for batch_id in sorted(batch_ids):
        judgments = Judgment.objects.filter(item__batch_id=batch_id)
        agg = judgments.aggregate(n=Count("id"), last=Max("id"), changed=Max("updated_at"))
        excluded = sorted(
            judgments.filter(verifier__excluded_from_aggregation=True).values_list("verifier_id", flat=True).distinct()
        )
        parts.append(f"{batch_id}:{agg['n']}:{agg['last']}:{agg['changed'].isoformat() if agg['changed'] else ''}:{excluded}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def run_get(*, run_id: int) -> AggregationRun:
    return AggregationRun.objects.get(pk=run_id)


def runs_list() -> QuerySet[AggregationRun]:
    return AggregationRun.objects.all()


def current_batch_results() -> QuerySet[BatchResult]:
    """One BatchResult per batch: that of the latest succeeded run covering the batch."""
    return (
        BatchResult.objects.filter(run_id=latest_succeeded_run())
        .select_related("batch", "run")
        .order_by("batch__name")
    )


def current_item_results() -> QuerySet[ItemResult]:
    """One ItemResult per aggregated item, from its batch's current run."""
    return ItemResult.objects.filter(run_id=latest_succeeded_run())


GROUP_FIELDS = {
    "task": "item__task",
    "domain": "item__context__domain_id",
    "attribute": "item__attribute",
    "batch": "batch__name",
}


def retention_rates(*, by: str) -> list[dict]:
    """Retention of the current results per `task`, `domain`, `attribute` or `batch`, over
    audited items (gold items and items without a judgment left out)."""
    field = GROUP_FIELDS[by]
    rows = (
        current_item_results()
        .filter(item__is_gold=False, n_judgments__gt=0)
        .values(field)
        .annotate(items=Count("id"), retained=Count("id", filter=Q(retained=True)))
        .order_by(field)
    )
    return [
        {by: row[field], "items": row["items"], "retained": row["retained"], "retention": row["retained"] / row["items"]}
        for row in rows
    ]


def run_summary(*, run: AggregationRun) -> dict:
    """What `manage.py aggregate --json` prints: per batch agreement and retention, and totals."""
    results = list(run.batch_results.select_related("batch").order_by("batch__name"))
    batches = []
    for r in results:
        batches.append(
            {
                "batch": r.batch.name,
                "items": r.items,
                "judgments": r.judgments,
                "retained": r.retained,
                "retention": r.retention,
                "ac1": r.ac1,
                "ac1_ci": [r.ac1_ci_low, r.ac1_ci_high] if r.ac1_ci_low is not None else None,
                "kappa": r.kappa,
                "alpha": r.alpha,
            }
        )
    items = sum(r.items for r in results)
    retained = sum(r.retained for r in results)
    totals = {
        "batches": len(results),
        "items": items,
        "judgments": sum(r.judgments for r in results),
        "retained": retained,
        "retention": retained / items if items else None,
        "gold_items": sum(r.gold_items for r in results),
        "status": run.status,
        "seconds": run.timings.get("wall_seconds"),
    }
    return {"run": run.pk, "batches": batches, "totals": totals}


def agreement_by_task_domain(*, batch_ids: list[int] | None = None) -> list[dict]:
    """AC1 (SE, CI), kappa and alpha per task × domain, pooled over batches (non-gold items,
    verifiers not excluded). Without `batch_ids`: every batch that has a succeeded run."""
    import numpy as np

    from .agreement import agreement_summary

    if batch_ids is None:
        batch_ids = list(current_batch_results().values_list("batch_id", flat=True))
    rows = (
        usable_judgments().filter(item__batch_id__in=batch_ids, item__is_gold=False)
        .order_by()
        .values_list("item_id", "label", "item__task", "item__context__domain_id", "item__variant")
    )
    frame = pd.DataFrame.from_records(list(rows), columns=["task", "label", "kind", "domain", "variant"])
    out = []
    for (kind, domain), group in frame.groupby(["kind", "domain"], sort=True):
        categories = categories_for(kinds=[(kind, variant) for variant in group["variant"].unique()])
        subjects = pd.Index(sorted(group["task"].unique()))
        r = pd.Categorical(group["task"], categories=subjects).codes
        c = pd.Categorical(group["label"], categories=categories).codes
        keep = c >= 0
        counts = np.zeros((len(subjects), len(categories)))
        np.add.at(counts, (r[keep], c[keep]), 1.0)
        out.append({"task": kind, "domain": domain, "judgments": int(len(group)), **agreement_summary(counts)})
    return out
