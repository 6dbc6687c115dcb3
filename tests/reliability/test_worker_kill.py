"""A Celery worker killed (SIGKILL) in the middle of an aggregation run.

The worker is a subprocess we own, with a delay injected inside the Dawid–Skene step
(fault_worker.py) so the kill lands mid-run. Then:
- the run is not marked succeeded, and the previous run's results stay the current ones;
- the task was acknowledged late (acks_late, reject_on_worker_lost), so it was not lost:
  a new worker gets it back (after the broker's visibility timeout, 3 s in this test) and
  the same run completes, with results identical to the previous run on the same judgments.
"""
import os
import signal
import subprocess
import sys
import time

import pytest
from django.conf import settings

from aggregation.models import AggregationRun, ItemResult, RunStatus
from aggregation.selectors import current_item_results
from aggregation.services import aggregation_run_create, aggregation_run_execute
from bench.load.fixture import load_fixture
from tests.factories import JudgmentFactory

from .helpers import ROOT, ensure_domains, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]


def _worker(queue: str, log, settings_module: str = "tests.reliability.settings_fault", **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "tests/reliability/fault_worker.py", queue], cwd=ROOT,
        env=subprocess_env(DJANGO_SETTINGS_MODULE=settings_module, CELERY_TASK_DEFAULT_QUEUE=queue, **env),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def _stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def judged_batch(name: str, *, n_items: int, label):
    """A batch of `n_items` items, each judged by its 3 verifiers: `label(item number, verifier number)`."""
    from accounts.models import User
    from annotation.models import Batch

    ensure_domains()
    load_fixture(batch=name, n_verifiers=3, n_items=n_items, overlap=3)
    batch = Batch.objects.get(name=name)
    verifiers = list(User.objects.filter(username__startswith=f"load-{name}-").order_by("username"))
    for n, item in enumerate(batch.items.order_by("pk")):
        for v, verifier in enumerate(verifiers):
            JudgmentFactory(item=item, verifier=verifier, batch=batch, label=label(n, v))
    return batch


def _results(run_id: int) -> list[tuple]:
    return list(ItemResult.objects.filter(run_id=run_id).order_by("item_id").values_list(
        "item_id", "label", "posterior", "mv_label", "n_judgments", "retained"))


def test_killed_worker_mid_run_loses_nothing_and_the_run_completes(tmp_path):
    from dialtom_site.celery import app

    # Given a batch with all its judgments and a first successful run
    batch = judged_batch("kill-b01", n_items=12, label=lambda n, v: "ABCD"[(n + (v == 2)) % 4])
    first = aggregation_run_execute(run_id=aggregation_run_create(batch_ids=[batch.pk], trigger="manual", dispatch=False).pk)
    assert first.status == RunStatus.SUCCEEDED
    before = _results(first.pk)
    assert len(before) == 12

    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-kill"
    app.conf.task_default_queue = queue
    marker = tmp_path / "computing"
    log = open(tmp_path / "worker.log", "w")
    try:
        slow = _worker(queue, log, FAULT_COMPUTE_DELAY="60", FAULT_MARKER=str(marker))
        # When a second run starts and its worker is killed in the middle of it
        second = aggregation_run_create(batch_ids=[batch.pk], trigger="manual")  # dispatched on commit
        _wait(marker.exists, 60, "the worker to start computing")
        _stop(slow, signal.SIGKILL)

        # Then the run is not succeeded and the previous results are still the current ones
        second.refresh_from_db()
        assert second.status in (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.FAILED)
        assert _results(second.pk) == []
        assert set(current_item_results().filter(batch=batch).values_list("run_id", flat=True)) == {first.pk}
        assert _results(first.pk) == before

        # And a new worker gets the unacknowledged task back, and the same run completes
        fresh = _worker(queue, log)
        done = _wait(lambda: AggregationRun.objects.filter(pk=second.pk, status=RunStatus.SUCCEEDED).first(), 90,
                     "the run to be redelivered and succeed")
        assert done.status == RunStatus.SUCCEEDED
        after = _results(second.pk)
        assert [r[1:] for r in after] == [r[1:] for r in before]  # same judgments, same results
        assert set(current_item_results().filter(batch=batch).values_list("run_id", flat=True)) == {second.pk}
        _stop(fresh)
    finally:
        for proc in [p for p in locals().values() if isinstance(p, subprocess.Popen)]:
            _stop(proc, signal.SIGKILL)
        app.conf.task_default_queue = settings.CELERY_TASK_DEFAULT_QUEUE
        log.close()
        print((tmp_path / "worker.log").read_text()[-3000:])
