"""Agreement of each verifier with the consensus, kept by the aggregation job (issue 23).

The consensus of an item is the label of its batch's current run (the latest succeeded run
covering the batch), so the figures change when a run finishes, and only then:
- `batch_record` (in `services._batch_write`, the transaction that writes a batch's results):
  per verifier × task × week, the judgments of (not gold) items the run labelled and how many
  equal its label (`WorkerAgreement`);
- `run_adopt` (in `services.aggregation_run_finish`, before the run turns SUCCEEDED): for the
  batches this run becomes current for, the totals over batches (`WorkerAgreementTotal`, and
  the DS accuracy weighted by judgments, `WorkerAccuracyTotal`) lose the previous run's rows
  and gain this run's.
`worker_agreement_rebuild()` rebuilds both from the judgments and the current runs. A changed
answer counts from the next run (which the change itself makes due), as DS accuracy does.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, DateField, Exists, F, Max, OuterRef, Q
from django.db.models.functions import TruncWeek

from verification.models import Judgment

from .current import pairs_q
from .models import (
    BatchResult,
    ItemResult,
    RunStatus,
    WorkerAccuracyTotal,
    WorkerAgreement,
    WorkerAgreementTotal,
    WorkerResult,
)


def _rows_for(*, run_id: int, batch_id: int) -> list[WorkerAgreement]:
    labelled = ItemResult.objects.filter(run_id=run_id, item_id=OuterRef("item_id"))
    rows = (
        Judgment.objects.filter(batch_id=batch_id, item__is_gold=False)
        .filter(Exists(labelled))
        .annotate(week=TruncWeek("created_at", output_field=DateField()))
        .order_by()
        .values("verifier_id", "item__task", "week")
        .annotate(judged=Count("id"), agreed=Count("id", filter=Q(Exists(labelled.filter(label=OuterRef("label"))))))
    )
    return [
        WorkerAgreement(run_id=run_id, batch_id=batch_id, verifier_id=r["verifier_id"], task=r["item__task"],
                        week=r["week"], judged=r["judged"], agreed=r["agreed"])
        for r in rows
    ]


def batch_record(*, run_id: int, batch_id: int) -> None:
    """This run's agreement per verifier in this batch (call it where the run's results are written)."""
    WorkerAgreement.objects.bulk_create(_rows_for(run_id=run_id, batch_id=batch_id))


def _lock() -> None:
    """One run adopts at a time: each must see the previous one's totals (PostgreSQL; SQLite has one writer)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {connection.ops.quote_name(WorkerAgreementTotal._meta.db_table)} IN SHARE ROW EXCLUSIVE MODE")


def _runs_q(batches_by_run: dict[int, list[int]]) -> Q:
    return pairs_q({batch_id: run_id for run_id, batch_ids in batches_by_run.items() for batch_id in batch_ids})


def _sums(batches_by_run: dict[int, list[int]]) -> tuple[Counter, Counter, Counter, Counter]:
    judged, agreed, weighted, judgments = Counter(), Counter(), Counter(), Counter()
    if not batches_by_run:
        return judged, agreed, weighted, judgments
    q = _runs_q(batches_by_run)
    for v, task, week, j, a in WorkerAgreement.objects.filter(q).values_list("verifier_id", "task", "week", "judged", "agreed"):
        judged[(v, task, week)] += j
        agreed[(v, task, week)] += a
    for v, accuracy, n in WorkerResult.objects.filter(q).values_list("verifier_id", "accuracy", "n_judgments"):
        weighted[v] += accuracy * n
        judgments[v] += n
    return judged, agreed, weighted, judgments


def _add(model, key: dict, **deltas) -> None:
    changes = {f: F(f) + d for f, d in deltas.items()}
    if model.objects.filter(**key).update(**changes):
        return
    try:
        with transaction.atomic():
            model.objects.create(**key, **deltas)
    except IntegrityError:
        model.objects.filter(**key).update(**changes)


def run_adopt(*, run_id: int) -> None:
    """The run becomes current for its batches (unless a later run already is): move the totals to it."""
    _lock()
    batch_ids = list(BatchResult.objects.filter(run_id=run_id).values_list("batch_id", flat=True))
    previous = dict(
        BatchResult.objects.filter(batch_id__in=batch_ids, run__status=RunStatus.SUCCEEDED)
        .exclude(run_id=run_id).order_by().values("batch_id").annotate(last=Max("run_id")).values_list("batch_id", "last")
    )
    adopted = [b for b in batch_ids if previous.get(b) is None or previous[b] < run_id]
    old = defaultdict(list)
    for b in adopted:
        if previous.get(b) is not None:
            old[previous[b]].append(b)
    plus = _sums({run_id: adopted} if adopted else {})
    minus = _sums(dict(old))
    judged, agreed = plus[0], plus[1]
    judged.subtract(minus[0])
    agreed.subtract(minus[1])
    for (v, task, week) in sorted(set(judged) | set(agreed), key=lambda k: (k[0], k[1], k[2])):
        if judged[(v, task, week)] or agreed[(v, task, week)]:
            _add(WorkerAgreementTotal, {"verifier_id": v, "task": task, "week": week},
                 judged=judged[(v, task, week)], agreed=agreed[(v, task, week)])
    for v in sorted(set(plus[3]) | set(minus[3])):
        _add(WorkerAccuracyTotal, {"verifier_id": v}, weighted=plus[2][v] - minus[2][v], judgments=plus[3][v] - minus[3][v])


def _current_runs(batch_ids=None) -> dict[int, list[int]]:
    """Each batch's current run: {run: [batches]}."""
    results = BatchResult.objects.filter(run__status=RunStatus.SUCCEEDED)
    if batch_ids is not None:
        results = results.filter(batch_id__in=batch_ids)
    current = dict(results.order_by().values("batch_id").annotate(last=Max("run_id")).values_list("batch_id", "last"))
    by_run = defaultdict(list)
    for batch_id, run_id in sorted(current.items()):
        by_run[run_id].append(batch_id)
    return dict(by_run)


@transaction.atomic
def worker_agreement_rebuild() -> dict:
    """Rebuild the current runs' `WorkerAgreement` rows from the judgments, and the totals from them."""
    _lock()
    by_run = _current_runs()
    WorkerAgreement.objects.filter(_runs_q(by_run)).delete()
    rows = [row for run_id, batch_ids in by_run.items() for b in batch_ids for row in _rows_for(run_id=run_id, batch_id=b)]
    WorkerAgreement.objects.bulk_create(rows, batch_size=5000)
    WorkerAgreementTotal.objects.all().delete()
    WorkerAccuracyTotal.objects.all().delete()
    judged, agreed, weighted, judgments = _sums(by_run)
    WorkerAgreementTotal.objects.bulk_create(
        [WorkerAgreementTotal(verifier_id=v, task=t, week=w, judged=n, agreed=agreed[(v, t, w)]) for (v, t, w), n in judged.items()],
        batch_size=5000,
    )
    WorkerAccuracyTotal.objects.bulk_create(
        [WorkerAccuracyTotal(verifier_id=v, weighted=weighted[v], judgments=n) for v, n in judgments.items()], batch_size=5000
    )
    return {"batches": sum(len(b) for b in by_run.values()), "rows": len(rows)}
