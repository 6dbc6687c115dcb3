"""Writes for aggregation: create, run (per batch), finish and fail aggregation runs.

A run covers one or more batches. Each batch is fitted independently (Dawid–Skene per
batch) and its results are written in one transaction; the run becomes the current one
for its batches only when every batch is written and `aggregation_run_finish` flips it to
SUCCEEDED (in one transaction too). A run that fails part way is marked FAILED and the
selectors keep serving the previous succeeded run's results.
"""
from __future__ import annotations

import itertools
import logging
import math
import platform
import time
from collections.abc import Sequence
from importlib import metadata

import numpy as np
import pandas as pd
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import User
from annotation.models import Batch, Task, Variant

from dialtom_site import jobs
from verification import pair_tallies

from . import selectors, summaries, worker_agreement
from .agreement import agreement_summary
from .dawid_skene import fit_batch, retained
from .models import AggregationRun, BatchResult, ItemResult, RunStatus, WorkerResult
from .item_summaries import item_summaries_run_apply

logger = logging.getLogger(__name__)

NO_LABEL = ""


class AggregationError(Exception):
    pass


def aggregation_settings() -> dict:
    """Everything that decides a run's output, recorded on the run."""
    return {
        "method": "crowdkit.DawidSkene per batch",
        "ds_n_iter": int(getattr(settings, "DIALTOM_DS_N_ITER", 100)),
        "ds_tol": float(getattr(settings, "DIALTOM_DS_TOL", 1e-5)),
        "retention_threshold": float(settings.DIALTOM_RETENTION_THRESHOLD),
        "confidence_level": 0.95,
        "input_order": "task, worker",
        "excluded_verifiers": "judgments dropped",
        "exposed_judgments": settings.DIALTOM_EXPOSED_JUDGMENTS,
        "gold_items": "fitted and scored (gold accuracy), never retained",
    }


def library_versions() -> dict:
    versions = {"python": platform.python_version()}
    for dist in ("crowd-kit", "pandas", "numpy", "scipy", "Django", "celery"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            versions[dist] = None
    return versions


@transaction.atomic
def aggregation_run_create(
    *,
    batch_ids: Sequence[int],
    trigger: str,
    started_by: User | None = None,
    fingerprint: str = "",
    dispatch: bool = True,
) -> AggregationRun:
    """Record a run over `batch_ids`; with `dispatch`, queue its Celery chord once committed
    (the run waits, WAITING, while the broker is unreachable: the jobs sweep queues it later)."""
    batch_ids = sorted(set(batch_ids))
    if not batch_ids:
        raise AggregationError("no batch to aggregate")
    found = set(Batch.objects.filter(pk__in=batch_ids).values_list("pk", flat=True))
    missing = [b for b in batch_ids if b not in found]
    if missing:
        raise AggregationError(f"unknown batch ids: {missing}")
    run = AggregationRun.objects.create(
        status=RunStatus.WAITING if dispatch else RunStatus.PENDING,  # waiting: for the task queue
        settings=aggregation_settings(),
        versions=library_versions(),
        started_by=started_by,
        trigger=trigger,
        batches_total=len(batch_ids),
        input_fingerprint=fingerprint,
    )
    run.batches.set(batch_ids)
    if dispatch:
        jobs.job_queue_on_commit(AggregationRun, run.pk)
    return run


def aggregation_run_publish(run_id: int) -> None:
    """Queue a run on Celery: a group (one task per batch) with a chord callback that finishes
    the run. Raises if the broker cannot take it (`jobs.job_send` keeps the run WAITING then).

    With in-process tasks (`CELERY_TASK_ALWAYS_EAGER`, the demo) the same tasks run one after
    the other, callback last: an eager chord joins its group's results, which Celery refuses
    inside a task ("Never call result.get() within a task!"; its flag is process-wide, so a
    thread of the dev server running another task trips it too) and the run used to wait forever."""
    from celery import chord, current_app

    aggregate_batch = jobs.task_named("aggregation.tasks.aggregate_batch")
    aggregation_run_finalize = jobs.task_named("aggregation.tasks.aggregation_run_finalize")

    batch_ids = list(
        AggregationRun.batches.through.objects.filter(aggregationrun_id=run_id).order_by("batch_id").values_list("batch_id", flat=True)
    )
    if current_app.conf.task_always_eager:
        for batch_id in batch_ids:
            aggregate_batch.si(run_id, batch_id).apply_async()
        aggregation_run_finalize.si(run_id).apply_async()
        return
    result = chord([aggregate_batch.si(run_id, batch_id) for batch_id in batch_ids])(aggregation_run_finalize.si(run_id))
    AggregationRun.objects.filter(pk=run_id).update(celery_id=result.id or "")


def aggregation_run_dispatch(*, run_id: int) -> bool:
    """Hand a WAITING run to Celery now; False (the run stays WAITING for the sweep) if the
    broker is unreachable. Never raises, so a judgment's commit never fails because of Redis."""
    return jobs.job_send(jobs.kind_for(AggregationRun), run_id)


def aggregation_run_fail(*, run_id: int, error: str) -> None:
    AggregationRun.objects.filter(pk=run_id).exclude(status=RunStatus.SUCCEEDED).update(
        status=RunStatus.FAILED, error=error[:10000], finished_at=timezone.now()
    )


def _mark_running(run_id: int) -> None:
    if jobs.job_start(AggregationRun, run_id, running=RunStatus.RUNNING, from_statuses=(RunStatus.WAITING, RunStatus.PENDING)):
        AggregationRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=timezone.now())


def _finite(x) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def _category_counts(frame: pd.DataFrame, *, subjects: pd.Index, categories: list[str]) -> np.ndarray:
    """subjects × categories counts of `frame`'s (task, label) rows; other tasks and labels are ignored."""
    rows = pd.Categorical(frame["task"], categories=subjects).codes
    cols = pd.Categorical(frame["label"], categories=categories).codes
    keep = (rows >= 0) & (cols >= 0)
    counts = np.zeros((len(subjects), len(categories)))
    np.add.at(counts, (rows[keep], cols[keep]), 1.0)
    return counts


def batch_compute(*, batch_id: int, run_settings: dict) -> dict:
    """Fit one batch and return every row to write (no writes here)."""
    t0 = time.perf_counter()
    items = selectors.batch_items_frame(batch_id=batch_id)
    frame = selectors.batch_judgments_frame(batch_id=batch_id)
    t_read = time.perf_counter()

    fit = fit_batch(frame, n_iter=run_settings["ds_n_iter"], tol=run_settings["ds_tol"])
    t_fit = time.perf_counter()

    threshold = run_settings["retention_threshold"]
    items = items.set_index("id", drop=False)
    items["label"] = fit.labels.reindex(items.index).fillna(NO_LABEL)
    items["posterior"] = fit.posterior.reindex(items.index).fillna(0.0)
    items["mv_label"] = fit.mv_labels.reindex(items.index).fillna(NO_LABEL)
    items["n_judgments"] = fit.n_judgments.reindex(items.index).fillna(0).astype(int)
    agrees = pd.Series(frame["label"].to_numpy() == items["label"].reindex(frame["task"]).to_numpy(), index=frame["task"].to_numpy())
    items["n_agree"] = agrees.groupby(level=0).sum().reindex(items.index).fillna(0).astype(int)
    items["retained"] = (~items["is_gold"]) & retained(items["label"], items["posterior"], items["answer"], threshold)

    # Agreement over the benchmark's (non-gold) items, per batch and per task × domain.
    # Categories are those the form offers; NOTA only where counterfactual items show it.
    benchmark = items[~items["is_gold"]]
    all_categories = selectors.categories_for(kinds=[(Task.PROSPECTIVE, Variant.COUNTERFACTUAL)])
    counts = _category_counts(frame, subjects=benchmark.index, categories=all_categories)
    nota = all_categories.index("NOTA")

    def counts_for(mask: np.ndarray, kinds) -> tuple[np.ndarray, list[str]]:
        cats = selectors.categories_for(kinds=kinds)
        sub = counts[mask]
        return (sub, cats) if "NOTA" in cats else (np.delete(sub, nota, axis=1), cats)

    kinds = list(zip(benchmark["task"], benchmark["variant"]))
    batch_counts, batch_categories = counts_for(np.ones(len(benchmark), dtype=bool), kinds)
    batch_agreement = agreement_summary(batch_counts)
    by_group = {}
    retained_flags = benchmark["retained"].to_numpy()
    group_keys = (benchmark["task"] + ":" + benchmark["domain"]).to_numpy()
    for key in sorted(set(group_keys)):
        mask = group_keys == key
        group_counts, _ = counts_for(mask, [kind for kind, inside in zip(kinds, mask) if inside])
        by_group[key] = {
            "items": int(mask.sum()),
            "judgments": int(group_counts.sum()),
            "retained": int(retained_flags[mask].sum()),
            "retention": float(retained_flags[mask].mean()),
            **agreement_summary(group_counts),
        }

    # Workers: DS confusion and accuracy; gold accuracy against the answer key.
    accuracy = fit.worker_accuracy()
    confusion = fit.worker_confusion()
    n_by_worker = frame.groupby("worker", sort=True).size()
    gold = frame[frame["task"].isin(items.index[items["is_gold"]])]
    gold = gold.assign(correct=gold["label"].to_numpy() == items.loc[gold["task"], "answer"].to_numpy())
    gold_n = gold.groupby("worker").size()
    gold_acc = gold.groupby("worker")["correct"].mean()
    workers = [
        {
            "verifier_id": int(w),
            "accuracy": float(accuracy.get(w, 0.0)),
            "confusion": confusion.get(w, {}),
            "n_judgments": int(n_by_worker[w]),
            "gold_judgments": int(gold_n.get(w, 0)),
            "gold_accuracy": _finite(gold_acc.get(w)) if w in gold_acc.index else None,
        }
        for w in n_by_worker.index
    ]
    t_stats = time.perf_counter()

    return {
        "items": items,
        "workers": workers,
        "batch": {
            "items": int(len(benchmark)),
            "judgments": int(len(frame)),
            "retained": int(benchmark["retained"].sum()),
            "gold_items": int(items["is_gold"].sum()),
            "workers": len(workers),
            "ac1": batch_agreement["ac1"],
            "ac1_se": batch_agreement["ac1_se"],
            "ac1_ci_low": batch_agreement["ac1_ci"][0] if batch_agreement["ac1_ci"] else None,
            "ac1_ci_high": batch_agreement["ac1_ci"][1] if batch_agreement["ac1_ci"] else None,
            "kappa": batch_agreement["kappa"],
            "alpha": batch_agreement["alpha"],
            "by_group": by_group,
            "details": {
                "ds_iterations": fit.iterations,
                "categories": batch_categories,
                "pa": batch_agreement["pa"],
                "ds_mv_agreement": float((items["label"] == items["mv_label"])[items["n_judgments"] > 0].mean())
                if (items["n_judgments"] > 0).any()
                else None,
                "priors": {str(k): float(v) for k, v in fit.priors.items()},
            },
        },
        "timings": {"read": t_read - t0, "fit": t_fit - t_read, "stats": t_stats - t_fit},
    }


ITEM_RESULT_COLUMNS = ("run", "item", "batch", "label", "posterior", "mv_label", "n_judgments", "n_agree", "retained")


def _item_results_insert(rows) -> None:
    """Insert ItemResult rows: COPY on PostgreSQL (the bulk of a run's writes), bulk_create elsewhere."""
    if connection.vendor == "postgresql":
        meta = ItemResult._meta
        columns = ", ".join(connection.ops.quote_name(meta.get_field(f).column) for f in ITEM_RESULT_COLUMNS)
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    ItemResult.objects.bulk_create(
        [ItemResult(**{f"{f}_id" if f in ("run", "item", "batch") else f: v for f, v in zip(ITEM_RESULT_COLUMNS, row)}) for row in rows],
        batch_size=2000,
    )


def batch_aggregate(*, run_id: int, batch_id: int) -> dict:
    """Aggregate one batch of a run and write its results in one transaction. Safe to run twice."""
    run = AggregationRun.objects.get(pk=run_id)
    if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
        return {"batch_id": batch_id, "skipped": run.status}
    if BatchResult.objects.filter(run_id=run_id, batch_id=batch_id).exists():
        return {"batch_id": batch_id, "skipped": "done"}
    _mark_running(run_id)
    with jobs.job_heartbeat(AggregationRun, run_id):
        return _batch_write(run_id=run_id, batch_id=batch_id, run_settings=run.settings)


def _batch_write(*, run_id: int, batch_id: int, run_settings: dict) -> dict:
    computed = batch_compute(batch_id=batch_id, run_settings=run_settings)
    t_write = time.perf_counter()
    items = computed["items"]
    with transaction.atomic():
        run = AggregationRun.objects.select_for_update().get(pk=run_id)  # the only lock taken: the run row
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return {"batch_id": batch_id, "skipped": run.status}
        if BatchResult.objects.filter(run_id=run_id, batch_id=batch_id).exists():
            return {"batch_id": batch_id, "skipped": "done"}
        _item_results_insert(
            zip(
                itertools.repeat(run_id),
                items["id"].tolist(),
                itertools.repeat(batch_id),
                items["label"].tolist(),
                items["posterior"].astype(float).tolist(),
                items["mv_label"].tolist(),
                items["n_judgments"].astype(int).tolist(),
                items["n_agree"].astype(int).tolist(),
                items["retained"].astype(bool).tolist(),
            )
        )
        WorkerResult.objects.bulk_create(
            [WorkerResult(run_id=run_id, batch_id=batch_id, **w) for w in computed["workers"]], batch_size=5000
        )
        worker_agreement.batch_record(run_id=run_id, batch_id=batch_id)  # issue 23: agreement per verifier
        timings = {**computed["timings"], "write": time.perf_counter() - t_write}
        BatchResult.objects.create(run_id=run_id, batch_id=batch_id, timings=timings, **computed["batch"])
        done = run.batches_done + 1  # the run row is locked: no lost update
        AggregationRun.objects.filter(pk=run_id).update(
            batches_done=done, progress=done / max(run.batches_total, 1)
        )
    return {"batch_id": batch_id, "items": computed["batch"]["items"], "retained": computed["batch"]["retained"]}


def aggregation_run_finish(*, run_id: int) -> AggregationRun:
    """Make the run current for its batches: SUCCEEDED with its summary, counts and timings."""
    with transaction.atomic():
        run = AggregationRun.objects.select_for_update().get(pk=run_id)
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return run
        results = list(run.batch_results.all())
        if len(results) != run.batches_total:
            raise AggregationError(f"run {run_id}: {len(results)} of {run.batches_total} batches written")
        worker_agreement.run_adopt(run_id=run_id)  # issue 23: the totals over current runs move to this one
        summaries.current_results_adopt(run_id=run_id)  # under run_adopt's lock: one run adopts at a time
        now = timezone.now()
        started = run.started_at or run.created_at
        stage_sums: dict[str, float] = {}
        for r in results:
            for stage, seconds in r.timings.items():
                stage_sums[stage] = stage_sums.get(stage, 0.0) + seconds
        run.status = RunStatus.SUCCEEDED
        run.finished_at = now
        run.started_at = started
        run.progress = 1.0
        run.counts = {
            "batches": len(results),
            "items": sum(r.items for r in results),
            "gold_items": sum(r.gold_items for r in results),
            "judgments": sum(r.judgments for r in results),
            "retained": sum(r.retained for r in results),
            "item_results": ItemResult.objects.filter(run_id=run_id).count(),
            "worker_results": WorkerResult.objects.filter(run_id=run_id).count(),
        }
        run.timings = {"wall_seconds": (now - started).total_seconds(), **{f"{k}_seconds": v for k, v in stage_sums.items()}}
        run.save(update_fields=["status", "finished_at", "started_at", "progress", "counts", "timings"])
        run.summary = selectors.run_summary(run=run)
        run.save(update_fields=["summary"])
        summaries.runs_summaries_write(run=run)  # issue 23: the retention and progress summaries
        item_summaries_run_apply(run_id=run.pk)  # issue 23: the item list's summaries
    return run


def aggregation_run_execute(*, run_id: int) -> AggregationRun:
    """Run every batch of a run in this process, then finish it (`aggregate --sync`)."""
    run = AggregationRun.objects.get(pk=run_id)
    try:
        for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
            batch_aggregate(run_id=run_id, batch_id=batch_id)
        return aggregation_run_finish(run_id=run_id)
    except Exception as exc:
        aggregation_run_fail(run_id=run_id, error=repr(exc))
        raise


def batch_maybe_aggregate(*, batch_id: int) -> AggregationRun | None:
    """Start an automatic run when a batch holds all its judgments (call it on commit).

    Does nothing if the batch is incomplete or a run on exactly these judgments exists
    (waiting, pending, running or succeeded). Never raises for Redis being down: the run is
    then recorded WAITING and the jobs sweep queues it once Redis is back.
    """
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch_id)  # serialises concurrent calls
        if not selectors.batch_is_complete(batch_id=batch_id, overlap=batch.overlap):
            return None
        fingerprint = selectors.batches_input_fingerprint(batch_ids=[batch_id])
        if (
            AggregationRun.objects.filter(batches=batch_id, input_fingerprint=fingerprint)
            .exclude(status=RunStatus.FAILED)
            .exists()
        ):
            return None
        return aggregation_run_create(batch_ids=[batch_id], trigger="auto", fingerprint=fingerprint)


def batches_aggregate_due() -> list[int]:
    """The sweep: start the automatic run of every complete batch that has none on its
    current judgments; returns the ids of the runs started.

    The last judgment of a batch queues its run on commit, but not when the broker was
    down at that moment (the trigger is a best-effort follow-up task). This sweep (a Celery
    beat task, `aggregate --due`) catches both once Redis is back. Safe to run at any time:
    `batch_maybe_aggregate` never starts a second run on the same judgments.
    """
    started = []
    for batch_id in selectors.batch_ids_audited():
        run = batch_maybe_aggregate(batch_id=batch_id)
        if run is not None:
            started.append(run.pk)
    return started


# --- import of outside judgments (spec §3: judgments.csv) ------------------------------

IMPORT_LABELS = ("A", "B", "C", "D", "NONE", "MULTIPLE")
IMPORT_CHUNK = 5000


class JudgmentImportError(Exception):
    """Bad input: `errors` holds one `file:line: field: reason` string per problem."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


def _csv_guarded(reader, *, name: str):
    """The rows of a csv.reader; a file that is not CSV text (bytes that are not UTF-8, NUL
    bytes, a field over the csv module's limit) becomes a clean file:line error."""
    import csv

    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise JudgmentImportError(
                [f"{name}:{reader.line_num + 1}: file: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x})"]
            ) from None
        except csv.Error as exc:
            raise JudgmentImportError([f"{name}:{reader.line_num}: file: not a valid CSV ({exc})"]) from None
        yield row


def judgments_import(*, path, max_errors: int = 50) -> dict:
    """Import `item_id,worker,label` rows: all or nothing, idempotent on item × worker.

    Unknown workers become verifiers with an unusable password; labels are in the item's
    original letters (A–D, NONE, MULTIPLE; NOTA for counterfactual items, where it is shown).
    A row whose item × worker already has a judgment with the same label is skipped; with a
    different label it is an error (the stored judgment is never silently replaced).
    """
    import csv
    from pathlib import Path

    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.validators import UnicodeUsernameValidator
    from django.core.exceptions import ValidationError

    from accounts.models import Role
    from annotation.models import Item, Variant
    from verification import tallies
    from verification.models import Judgment
    from verification.summaries import item_summaries_judgments_refresh

    path = Path(path)
    name = str(path)
    errors: list[str] = []

    def error(line: int, field: str, reason: str) -> None:
        if len(errors) < max_errors:
            errors.append(f"{name}:{line}: {field}: {reason}")

    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise JudgmentImportError([f"{name}:0: file: {exc.strerror or exc}"]) from exc
    with handle:
        reader = _csv_guarded(csv.reader(handle), name=name)
        header = next(reader, None)
        if header is None:
            raise JudgmentImportError([f"{name}:1: header: empty file, expected item_id,worker,label"])
        header = [h.strip() for h in header]
        missing = [c for c in ("item_id", "worker", "label") if c not in header]
        if missing:
            raise JudgmentImportError([f"{name}:1: header: missing column(s) {', '.join(missing)}"])
        col = {c: header.index(c) for c in ("item_id", "worker", "label")}
        rows = []
        for line, record in enumerate(reader, start=2):
            if not record or all(not v.strip() for v in record):
                continue
            if len(record) != len(header):
                error(line, "row", f"expected {len(header)} fields, got {len(record)}")
                continue
            rows.append((line, record[col["item_id"]].strip(), record[col["worker"]].strip(), record[col["label"]].strip()))

    items = {
        item_id: (pk, batch_id, variant)
        for item_id, pk, batch_id, variant in Item.objects.filter(item_id__in={r[1] for r in rows}).values_list(
            "item_id", "id", "batch_id", "variant"
        )
    }
    validate_username = UnicodeUsernameValidator()
    good_names: set[str] = set()
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    valid = []
    for line, item_id, worker, label in rows:
        ok = True
        item_ok = bool(item_id) and item_id in items
        if not item_id:
            error(line, "item_id", "empty")
            ok = False
        elif item_id not in items:
            error(line, "item_id", f"unknown item {item_id!r}")
            ok = False
        elif items[item_id][1] is None:
            error(line, "item_id", f"item {item_id!r} is in no batch")
            ok = False
        if not worker:
            error(line, "worker", "empty")
            ok = False
        elif worker not in good_names:
            try:
                validate_username(worker)
                if len(worker) > 150:
                    raise ValidationError("too long")
                good_names.add(worker)
            except ValidationError:
                error(line, "worker", f"{worker!r} is not a valid username (letters, digits and @.+-_, at most 150)")
                ok = False
        allowed = IMPORT_LABELS + (("NOTA",) if item_ok and items[item_id][2] == Variant.COUNTERFACTUAL else ())
        if label not in allowed:
            error(line, "label", f"{label!r} is not one of {', '.join(allowed)}")
            ok = False
        if not ok:
            continue
        key = (item_id, worker)
        if key in seen:
            first_line, first_label = seen[key]
            if first_label != label:
                error(line, "label", f"{worker} judged {item_id} as {first_label} on line {first_line}")
            continue
        seen[key] = (line, label)
        valid.append((line, item_id, worker, label))
    if errors:
        raise JudgmentImportError(errors)

    with transaction.atomic():
        usernames = sorted({w for _, _, w, _ in valid})
        users = dict(User.objects.filter(username__in=usernames).values_list("username", "id"))
        new_users = [
            User(username=u, role=Role.VERIFIER, password=make_password(None)) for u in usernames if u not in users
        ]
        User.objects.bulk_create(new_users, batch_size=IMPORT_CHUNK)
        users = dict(User.objects.filter(username__in=usernames).values_list("username", "id"))

        item_pks = sorted({items[i][0] for _, i, _, _ in valid})
        existing: dict[tuple[int, int], str] = {}
        for start in range(0, len(item_pks), IMPORT_CHUNK):
            chunk = item_pks[start : start + IMPORT_CHUNK]
            for item_pk, verifier_pk, label in Judgment.objects.filter(item_id__in=chunk).values_list(
                "item_id", "verifier_id", "label"
            ):
                existing[(item_pk, verifier_pk)] = label
        to_create, unchanged = [], 0
        for line, item_id, worker, label in valid:
            item_pk, batch_id, _ = items[item_id]
            key = (item_pk, users[worker])
            if key in existing:
                if existing[key] != label:
                    error(line, "label", f"{worker} already judged {item_id} as {existing[key]}")
                unchanged += 1
                continue
            to_create.append(
                Judgment(item_id=item_pk, verifier_id=users[worker], batch_id=batch_id, label=label, displayed_label=label, source="import")
            )
        if errors:
            raise JudgmentImportError(errors)  # rolls the new users back too
        Judgment.objects.bulk_create(to_create, batch_size=IMPORT_CHUNK)
        pair_tallies.pairs_rebuild(batch_ids={j.batch_id for j in to_create})  # issue 23: agreement between verifiers
        tallies.batch_tallies_refresh(batch_ids={j.batch_id for j in to_create})  # issue 23: the summaries
        tallies.verifier_tallies_refresh(verifier_ids={j.verifier_id for j in to_create})
        for start in range(0, len(to_create), IMPORT_CHUNK):  # issue 23: the item list's summaries
            item_summaries_judgments_refresh(item_ids=sorted({j.item_id for j in to_create[start : start + IMPORT_CHUNK]}))
    return {
        "file": name,
        "rows": len(rows),
        "created": len(to_create),
        "unchanged": unchanged,
        "users_created": len(new_users),
        "batches": len({items[i][1] for _, i, _, _ in valid}),
    }
