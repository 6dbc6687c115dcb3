"""A worker killed with its whole process group mid-aggregation: within seconds of its last
heartbeat the jobs sweep marks the run failed ("worker lost") and queues it again, and a
new worker completes it; nobody waits for the broker's 30-minute visibility timeout.

The worker is a subprocess we own (tests/reliability/fault_worker.py, with a delay inside
the Dawid–Skene step so the kill lands mid-run), on the test settings: the visibility
timeout is the production 30 minutes, so Celery's own redelivery cannot be what saves the
run. It beats every second; the sweep (run here, in the test) calls a job lost after 4 s.
"""
import signal
import time

import pytest
from django.conf import settings

from aggregation.models import AggregationRun, ItemResult, RunStatus
from aggregation.services import aggregation_run_create
from dialtom_site import jobs

from .test_worker_kill import _stop, _wait, _worker, judged_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]


def test_a_run_whose_worker_died_is_failed_and_retried_by_the_sweep(tmp_path):
    from django.test import override_settings

    from dialtom_site.celery import app

    # Given a batch with all its judgments
    batch = judged_batch("lost-b01", n_items=8, label=lambda n, v: "ABCD"[n % 4])

    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-lost"
    app.conf.task_default_queue = queue
    marker = tmp_path / "computing"
    log = open(tmp_path / "worker.log", "w")
    beat = {"settings_module": "dialtom_site.settings.test", "DIALTOM_JOB_HEARTBEAT_SECONDS": "1"}
    procs = []
    try:
        with override_settings(DIALTOM_JOB_STALE_SECONDS=4):
            slow = _worker(queue, log, FAULT_COMPUTE_DELAY="60", FAULT_MARKER=str(marker), **beat)
            procs.append(slow)
            run = aggregation_run_create(batch_ids=[batch.pk], trigger="manual")  # queued on commit
            _wait(marker.exists, 60, "the worker to start computing")

            # While the worker lives, its heartbeat keeps the sweep away, however long the fit takes
            time.sleep(5)
            assert jobs.jobs_sweep()["aggregation"]["lost"] == []
            run.refresh_from_db()
            assert run.status == RunStatus.RUNNING and run.attempts == 1

            # When the worker and its whole process group are killed
            _stop(slow, signal.SIGKILL)
            killed_at = time.monotonic()

            # Then a sweep after the stale threshold marks the run failed and queues it again
            def swept():
                report = jobs.jobs_sweep()["aggregation"]
                return report if report["lost"] else None

            report = _wait(swept, 30, "the sweep to find the run lost")
            found_lost_after = time.monotonic() - killed_at
            assert report["lost"] == report["retried"] == report["sent"] == [run.pk]
            run.refresh_from_db()
            assert run.status == RunStatus.PENDING and run.error.startswith("worker lost (attempt 1): no heartbeat since")

            # And a new worker completes the same run: one more attempt, every item written once
            fresh = _worker(queue, log, **beat)
            procs.append(fresh)
            done = _wait(lambda: AggregationRun.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED).first(), 90,
                         "the retried run to succeed")
            assert done.attempts == 2 and done.error.startswith("worker lost (attempt 1)")  # its history
            assert ItemResult.objects.filter(run=done).count() == 8
            print(f"\nrun {run.pk}: worker killed, found lost and queued again {found_lost_after:.1f} s later")
            assert found_lost_after < 60
    finally:
        for proc in procs:
            _stop(proc, signal.SIGKILL)
        app.conf.task_default_queue = settings.CELERY_TASK_DEFAULT_QUEUE
        log.close()
        print((tmp_path / "worker.log").read_text()[-3000:])
