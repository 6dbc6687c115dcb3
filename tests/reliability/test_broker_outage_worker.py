"""A Celery worker rides out Redis being killed under it (issue 20, break 3).

The worker is `celery -A dialtom_site worker` (prefork, two processes, as docker-compose runs
it) in a subprocess, on a private Redis we SIGKILL and restart (never the shared one). Each
round a task is in flight when Redis dies, so its late ack fails ("Couldn't ack ...") and
the worker restores its unacknowledged message on a connection that is gone: Celery 5.7 /
kombu 5.7 with the default settings then exited ("Unrecoverable error: AttributeError(
"'NoneType' object has no attribute 'hostname'")") about one time in three, and nothing ran
until a person restarted it. After every round the worker must still be alive and run a task
sent after the outage; at the end an aggregation run asked for while Redis was down (WAITING)
is handed over by the jobs sweep and completed by the same worker.

DIALTOM_OUTAGE_ROUNDS sets the number of kills (default 6).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import Celery
from django.conf import settings

from aggregation.models import AggregationRun, RunStatus
from aggregation.services import aggregation_run_create

from .helpers import ROOT, subprocess_env
from .test_worker_kill import judged_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]

ROUNDS = int(os.environ.get("DIALTOM_OUTAGE_ROUNDS", "6"))
HOLD = "tests.reliability.outage_tasks.hold"


def _send(url: str, queue: str, marker: Path, seconds: float) -> None:
    """Send `hold` from a client of our own (this process's Celery app talks to the shared Redis)."""
    client = Celery("outage-client", broker=url, set_as_current=False)
    client.conf.task_serializer = "json"
    with client.connection_for_write() as conn:
        client.send_task(HOLD, args=[str(marker), seconds], queue=queue, connection=conn, ignore_result=True)


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_worker_rides_out_redis_kills_and_runs_what_was_queued(spare_redis, tmp_path, monkeypatch):
    from dialtom_site.celery import app

    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-outage"
    env = subprocess_env(
        DJANGO_SETTINGS_MODULE="tests.reliability.settings_broker_outage", TEST_REDIS_URL=spare_redis.url,
        CELERY_TASK_DEFAULT_QUEUE=queue,
    )
    log_path = tmp_path / "worker.log"
    log = open(log_path, "w")
    worker = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "celery"), "-A", "dialtom_site", "worker", "--loglevel", "INFO",
         "--concurrency", "2", "--queues", queue, "--hostname", f"outage-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    survived, rounds = 0, []
    try:
        _send(spare_redis.url, queue, tmp_path / "warmup", 0)
        assert _wait((tmp_path / "warmup.done").exists, 60), "the worker never started"

        for n in range(ROUNDS):
            # Given a task in flight (acknowledged late, so its ack is still to come)
            _send(spare_redis.url, queue, tmp_path / f"inflight-{n}", 3)
            assert _wait((tmp_path / f"inflight-{n}.started").exists, 60), f"round {n}: the task never started"
            # When Redis is killed, stays down a while and comes back (empty: no persistence)
            spare_redis.kill()
            time.sleep(2)
            spare_redis.start()
            started = time.monotonic()
            # Then the worker is still there and runs a task sent after the outage
            _send(spare_redis.url, queue, tmp_path / f"after-{n}", 0)
            ran = _wait(lambda: (tmp_path / f"after-{n}.done").exists() or worker.poll() is not None, 90) and (tmp_path / f"after-{n}.done").exists()
            alive = worker.poll() is None
            rounds.append((n, alive, ran, round(time.monotonic() - started, 1)))
            assert alive, f"round {n}: the worker exited ({worker.returncode})"
            assert ran, f"round {n}: the worker is alive but ran nothing sent after the outage"
            survived += 1

        # And an aggregation run asked for while Redis is down waits, then the sweep hands it to the worker
        batch = judged_batch("outage-b01", n_items=6, label=lambda n, v: "ABCD"[n % 4])
        spare_redis.kill()
        monkeypatch.setitem(app.conf, "broker_write_url", spare_redis.url)
        run = aggregation_run_create(batch_ids=[batch.pk], trigger="manual")  # dispatched on commit: fails
        assert AggregationRun.objects.get(pk=run.pk).status == RunStatus.WAITING
        spare_redis.start()
        sweep = subprocess.run([sys.executable, "manage.py", "jobs_sweep"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
        assert sweep.returncode == 0, sweep.stderr
        assert _wait(lambda: AggregationRun.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED, 120), \
            AggregationRun.objects.get(pk=run.pk).status
        assert worker.poll() is None
    finally:
        _stop(worker)
        log.close()
        text = log_path.read_text()
        print(f"\nredis kills survived: {survived}/{ROUNDS}; rounds (n, alive, ran, seconds to run after restart): {rounds}")
        print(f"'Couldn't ack' in the log: {text.count(chr(39).join(['Couldn', 't ack']))}; "
              f"'Unrecoverable error': {text.count('Unrecoverable error')}")
        print(text[-20000:])
