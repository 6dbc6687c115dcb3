"""Dawid–Skene per batch, retention and runs, on a small synthetic set."""
import json

import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene, MajorityVote
from django.core.management import call_command

from accounts.models import User
from aggregation import selectors, services
from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus, WorkerResult
from annotation.models import Batch, Item

from . import synthetic


def _sync_run(batch_ids):
    run = services.aggregation_run_create(batch_ids=batch_ids, trigger="test", dispatch=False)
    return services.aggregation_run_execute(run_id=run.pk)


def test_labels_equal_crowdkit_called_directly(loaded, synthetic_dir):
    # Given the synthetic judgments, fitted batch by batch by a run...
    run = _sync_run(list(loaded.values()))
    assert run.status == RunStatus.SUCCEEDED
    ours = {
        r.item.item_id: (r.label, r.posterior, r.mv_label)
        for r in ItemResult.objects.filter(run=run).select_related("item")
    }
    # ...when crowd-kit is called directly on the CSV's rows of each batch (ids as strings),
    items = pd.read_json(synthetic_dir / "items.jsonl", lines=True)[["item_id", "batch"]]
    rows = pd.DataFrame(synthetic.read_judgments(synthetic_dir), columns=["task", "worker", "label"])
    rows = rows.merge(items, left_on="task", right_on="item_id")
    compared = 0
    for _, batch_rows in rows.groupby("batch"):
        frame = batch_rows[["task", "worker", "label"]]
        ds = DawidSkene(n_iter=100, tol=1e-5)
        probas = ds.fit_predict_proba(frame)
        mv = MajorityVote().fit_predict(frame)
        # then labels and posteriors are the same.
        for item_id, label in ds.labels_.items():
            assert ours[item_id][0] == label, item_id
            assert ours[item_id][1] == pytest.approx(probas.loc[item_id, label], abs=1e-9)
            if (frame[frame.task == item_id].label.value_counts() == frame[frame.task == item_id].label.value_counts().max()).sum() == 1:
                assert ours[item_id][2] == mv[item_id]  # majority vote, where there is no tie
            compared += 1
    assert compared == 420 == len(ours)
    assert run.settings["ds_n_iter"] == 100 and run.settings["ds_tol"] == 1e-5
    assert run.versions["crowd-kit"] == "1.4.2"


def test_retention_tracks_truth(loaded, synthetic_dir):
    _sync_run(list(loaded.values()))
    truth = synthetic.read_truth(synthetic_dir)
    retained = dict(selectors.current_item_results().values_list("item__item_id", "retained"))
    agree = sum(retained[i] == keep for i, (_, keep) in truth.items()) / len(truth)
    assert agree > 0.9
    by_task = {r["task"]: r for r in selectors.retention_rates(by="task")}
    for task in ("retrospective", "prospective"):
        ids = [i for i in truth if (task == "prospective") == ("-prospective-" in i)]
        true_rate = sum(truth[i][1] for i in ids) / len(ids)
        assert by_task[task]["items"] == len(ids)
        assert by_task[task]["retention"] == pytest.approx(true_rate, abs=0.08)
    assert sum(r["items"] for r in selectors.retention_rates(by="domain")) == 420
    assert {r["attribute"] for r in selectors.retention_rates(by="attribute")} == {
        "belief", "desire", "intention", "emotion", "knowledge", "trust"}
    assert len(selectors.retention_rates(by="batch")) == 3


def _snapshot(run):
    items = list(ItemResult.objects.filter(run=run).order_by("item_id").values_list(
        "item_id", "label", "posterior", "mv_label", "n_judgments", "retained"))
    workers = list(WorkerResult.objects.filter(run=run).order_by("batch_id", "verifier_id").values_list(
        "batch_id", "verifier_id", "accuracy", "confusion", "n_judgments", "gold_accuracy"))
    batches = list(BatchResult.objects.filter(run=run).order_by("batch_id").values_list(
        "batch_id", "items", "judgments", "retained", "ac1", "ac1_se", "ac1_ci_low", "ac1_ci_high", "kappa", "alpha",
        "by_group"))
    return items, workers, batches


def test_rerun_is_identical(loaded):
    batch_ids = [loaded["batch-001"], loaded["batch-003"]]
    first = _sync_run(batch_ids)
    second = _sync_run(batch_ids)
    assert first.pk != second.pk
    assert _snapshot(first) == _snapshot(second)
    assert first.summary["batches"] == second.summary["batches"]


def test_failed_run_keeps_previous_results(loaded, monkeypatch):
    good = _sync_run(list(loaded.values()))
    real = services.fit_batch
    calls = []

    def flaky(frame, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker died")
        return real(frame, **kw)

    monkeypatch.setattr(services, "fit_batch", flaky)
    with pytest.raises(RuntimeError):
        _sync_run([loaded["batch-001"], loaded["batch-002"]])
    bad = AggregationRun.objects.order_by("-pk").first()
    assert bad.status == RunStatus.FAILED and "worker died" in bad.error
    assert BatchResult.objects.filter(run=bad).count() == 1  # written, but not current
    assert set(selectors.current_batch_results().values_list("run_id", flat=True)) == {good.pk}
    assert set(selectors.current_item_results().values_list("run_id", flat=True)) == {good.pk}


def test_excluded_verifiers_and_gold_items(loaded):
    batch_id = loaded["batch-001"]
    excluded = User.objects.get(username="verifier03")
    excluded.excluded_from_aggregation = True
    excluded.save(update_fields=["excluded_from_aggregation"])
    gold_ids = list(Item.objects.filter(batch_id=batch_id).order_by("pk").values_list("pk", flat=True)[:10])
    Item.objects.filter(pk__in=gold_ids).update(is_gold=True)

    run = _sync_run([batch_id])
    frame = selectors.batch_judgments_frame(batch_id=batch_id)
    assert excluded.pk not in set(frame.worker)
    assert not WorkerResult.objects.filter(run=run, verifier=excluded).exists()
    assert not ItemResult.objects.filter(run=run, item_id__in=gold_ids, retained=True).exists()
    result = BatchResult.objects.get(run=run)
    assert result.items == 130 and result.gold_items == 10
    scored = WorkerResult.objects.filter(run=run, gold_judgments__gt=0)
    assert scored.exists()
    for w in scored:
        assert 0.0 <= w.gold_accuracy <= 1.0
        assert 0.0 < w.accuracy <= 1.0
        for column in w.confusion.values():
            assert sum(column.values()) == pytest.approx(1.0)


def test_aggregate_command_json(loaded, capsys):
    call_command("aggregate", "--batch", "batch-002", "--sync", "--json")
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out) == {"run", "batches", "totals"}
    (b,) = out["batches"]
    assert set(b) >= {"batch", "items", "judgments", "retained", "retention", "ac1", "ac1_ci", "kappa", "alpha"}
    assert b["batch"] == "batch-002" and b["items"] == 140 and b["judgments"] == 420
    assert 0 < b["ac1"] <= 1 and b["ac1_ci"][0] < b["ac1"] <= b["ac1_ci"][1]
    assert b["kappa"] < b["ac1"]
    assert out["totals"]["items"] == 140
    call_command("aggregate", "--all", "--sync", "--json")
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [b["batch"] for b in out["batches"]] == ["batch-001", "batch-002", "batch-003"]
    assert out["totals"]["judgments"] == 1260


def test_aggregate_command_unknown_batch(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown batch nope"):
        call_command("aggregate", "--batch", "nope", "--sync")


def test_batch_maybe_aggregate(loaded, django_capture_on_commit_callbacks, monkeypatch):
    batch = Batch.objects.get(name="batch-003")
    dispatched = []
    monkeypatch.setattr(services, "aggregation_run_publish", dispatched.append)
    # complete batch: one run, dispatched on commit
    with django_capture_on_commit_callbacks(execute=True):
        run = services.batch_maybe_aggregate(batch_id=batch.pk)
    assert run is not None and run.trigger == "auto" and dispatched == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.PENDING  # handed to the broker
    # same judgments again: nothing new
    with django_capture_on_commit_callbacks(execute=True):
        assert services.batch_maybe_aggregate(batch_id=batch.pk) is None
    # an incomplete batch: nothing
    other = Batch.objects.create(name="incomplete", overlap=3)
    moved = Item.objects.filter(batch=batch).first()
    Item.objects.filter(pk=moved.pk).update(batch=other)
    moved.judgments.order_by("pk").first().delete()  # 2 of 3 judgments
    assert services.batch_maybe_aggregate(batch_id=other.pk) is None


def test_dispatch_survives_broker_down(loaded, monkeypatch, caplog):
    import kombu.exceptions

    import celery

    class DownChord:
        def __init__(self, *a, **kw):
            pass

        def __call__(self, *a, **kw):
            raise kombu.exceptions.OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(celery, "chord", DownChord)
    run = services.aggregation_run_create(batch_ids=[loaded["batch-001"]], trigger="auto", dispatch=False)
    run.status = RunStatus.WAITING
    run.save(update_fields=["status"])
    assert services.aggregation_run_dispatch(run_id=run.pk) is False
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.error == ""  # kept for the sweep, not failed
    assert "waits: broker unavailable" in caplog.text


def test_agreement_matches_irrcac_on_the_batch_and_pooled(loaded):
    from irrCAC.raw import CAC

    run = _sync_run([loaded["batch-001"]])
    result = BatchResult.objects.get(run=run)
    frame = selectors.batch_judgments_frame(batch_id=loaded["batch-001"])
    table = frame.pivot(index="task", columns="worker", values="label")
    # the batch mixes prospective items, which all offer NOTA: it is one of the categories
    ref = CAC(table, categories=["A", "B", "C", "D", "NOTA", "NONE", "MULTIPLE"]).gwet()["est"]
    assert result.ac1 == pytest.approx(ref["coefficient_value"], abs=6e-6)
    assert result.ac1_ci_low == pytest.approx(ref["confidence_interval"][0], abs=6e-6)
    assert set(result.by_group) == {f"{t}:{d}" for t in ("prospective", "retrospective") for d in ("esc", "mi", "pfg")}
    pooled = selectors.agreement_by_task_domain()
    assert len(pooled) == 6 and sum(g["judgments"] for g in pooled) == 420
    retro_mi = next(g for g in pooled if (g["task"], g["domain"]) == ("retrospective", "mi"))
    assert retro_mi["ac1"] == pytest.approx(result.by_group["retrospective:mi"]["ac1"])


def test_unreachable_redis_fails_fast_and_never_raises(loaded, monkeypatch, django_capture_on_commit_callbacks):
    import time

    from dialtom_site import jobs
    from dialtom_site.celery import app

    monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")  # nothing listens there
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.batch_maybe_aggregate(batch_id=loaded["batch-002"])
    assert time.monotonic() - started < 5
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.error == ""
    # the waiting run is the run of these judgments: no second one; the sweep hands it over
    with django_capture_on_commit_callbacks(execute=True):
        assert services.batch_maybe_aggregate(batch_id=loaded["batch-002"]) is None
    assert jobs.jobs_sweep()["aggregation"]["waiting"] == [run.pk]  # Redis still down: still waiting
    monkeypatch.setitem(app.conf, "broker_write_url", None)  # Redis is back
    sent = []
    monkeypatch.setattr(services, "aggregation_run_publish", sent.append)
    assert jobs.jobs_sweep()["aggregation"]["sent"] == [run.pk] and sent == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.PENDING


def test_aggregate_due_starts_each_complete_batch_once(loaded, monkeypatch, capsys, django_capture_on_commit_callbacks):
    dispatched = []
    monkeypatch.setattr(services, "aggregation_run_publish", dispatched.append)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("aggregate", "--due", "--json")
    started = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["runs_started"]
    assert len(started) == 3 and sorted(dispatched) == sorted(started)
    assert {b for r in AggregationRun.objects.filter(pk__in=started) for b in r.batches.values_list("pk", flat=True)} == set(
        loaded.values()
    )
    with django_capture_on_commit_callbacks(execute=True):
        call_command("aggregate", "--due", "--json")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["runs_started"] == []


def test_aggregate_all_covers_audited_batches_only(loaded, capsys):
    """An imported, unaudited batch is not aggregated: its items would only dilute retention."""
    from tests.factories import BatchFactory, ItemFactory

    idle = BatchFactory(name="never-audited")
    ItemFactory.create_batch(5, batch=idle)
    assert selectors.batch_ids_audited() == sorted(loaded.values())
    call_command("aggregate", "--all", "--sync", "--json")
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [b["batch"] for b in out["batches"]] == ["batch-001", "batch-002", "batch-003"]
    run = AggregationRun.objects.get(pk=out["run"])
    assert idle not in run.batches.all()


def test_runs_finishing_out_of_order_leave_the_latest_run_current(loaded):
    """`BatchResult.is_current` marks each batch's latest succeeded run, whichever finished last;
    the rebuild from scratch agrees, and there is one current result a batch."""
    from aggregation.summaries import current_results_rebuild

    batch_ids = list(loaded.values())[:2]
    earlier, later = (services.aggregation_run_create(batch_ids=batch_ids, trigger="test", dispatch=False) for _ in range(2))
    for run in (earlier, later):
        for batch_id in batch_ids:
            services.batch_aggregate(run_id=run.pk, batch_id=batch_id)
    services.aggregation_run_finish(run_id=later.pk)
    services.aggregation_run_finish(run_id=earlier.pk)  # finishes last, but is not the latest

    def current():
        return sorted(BatchResult.objects.filter(is_current=True).values_list("batch_id", "run_id"))

    assert current() == [(b, later.pk) for b in sorted(batch_ids)]
    assert selectors.current_item_results().filter(run_id=earlier.pk).count() == 0
    BatchResult.objects.update(is_current=False)
    current_results_rebuild()
    assert current() == [(b, later.pk) for b in sorted(batch_ids)]
