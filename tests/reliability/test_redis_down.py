"""Redis stopped during work: verifiers keep submitting, nothing is lost, and aggregation
runs once Redis is back.

Redis here is one we own on a spare port (the shared one is never touched): gunicorn and
the Celery worker use it as broker, result backend and cache. Mid-session we SHUTDOWN it:
- every next-item and submission still answers (no 5xx) and every acknowledged judgment
  is stored exactly once; the batch fills to exactly k;
- asking for an aggregation while Redis is down answers 202: the run is recorded WAITING
  (visible, not lost, not failed);
- when Redis is back, the jobs sweep (`manage.py jobs_sweep`, Celery beat's `jobs-sweep`)
  queues it and a worker completes it.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings

from aggregation.models import AggregationRun, RunStatus
from bench.load.fixture import check_invariants, load_fixture
from tests.factories import StaffFactory

from .helpers import ROOT, Gunicorn, ensure_domains, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]


def _call(port, method, path, token, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, (json.loads(data) if data and "json" in (response.getheader("Content-Type") or "") else None)


def _work(port, token, batch, acknowledged, statuses, cycles):
    """One verifier: up to `cycles` next/submit rounds; records every status and acknowledged key."""
    for _ in range(cycles):
        status, item = _call(port, "GET", f"/api/v1/next-item/?batch={batch}", token)
        statuses.append(status)
        if status != 200:
            return
        key = str(uuid.uuid4())
        status, judgment = _call(port, "POST", "/api/v1/judgments/", token,
                                 {"claim": item["claim"], "choice": "B", "idempotency_key": key})
        statuses.append(status)
        if status in (200, 201):
            acknowledged[key] = judgment["id"]


def test_redis_down_during_work(spare_redis, tmp_path):
    from rest_framework.authtoken.models import Token

    ensure_domains()
    tokens = load_fixture(batch="redis-b01", n_verifiers=3, n_items=4, overlap=3)
    staff_token = Token.objects.create(user=StaffFactory(username="redis-staff")).key
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-redis-down"
    env = subprocess_env(DJANGO_SETTINGS_MODULE="dialtom_site.settings.test", TEST_REDIS_URL=spare_redis.url,
                         CELERY_TASK_DEFAULT_QUEUE=queue, CONN_MAX_AGE="60")
    acknowledged, before, during = {}, [], []
    log = open(tmp_path / "worker.log", "w")
    worker = None
    try:
        with Gunicorn(env=env, workers=1, threads=4, log=log) as server:
            # Given verifiers at work while Redis is up
            _work(server.port, tokens[0], "redis-b01", acknowledged, before, cycles=2)
            assert before == [200, 201, 200, 201]

            # When Redis stops
            spare_redis.stop()
            assert not spare_redis.up

            # Then work goes on: every request answers, every submission is stored
            for token in tokens:
                _work(server.port, token, "redis-b01", acknowledged, during, cycles=10)
            assert all(s in (200, 201, 204) for s in during), during
            status, run = _call(server.port, "POST", "/api/v1/aggregation-runs/", staff_token, {"batches": ["redis-b01"]})
            assert status == 202, status  # accepted: recorded, waiting for the broker
            down_run = AggregationRun.objects.get(pk=run["id"])
            assert down_run.status == RunStatus.WAITING and run["status"] == "waiting"

            # And when Redis is back, the jobs sweep queues the waiting run and a worker completes it
            spare_redis.start()
            worker = subprocess.Popen(
                [sys.executable, "tests/reliability/fault_worker.py", queue], cwd=ROOT,
                env={**env, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test"},
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
            sweep = subprocess.run([sys.executable, "manage.py", "jobs_sweep", "--json"], cwd=ROOT, env=env,
                                   capture_output=True, text=True, timeout=120)
            assert sweep.returncode == 0, sweep.stderr
            assert json.loads(sweep.stdout.strip().splitlines()[-1])["aggregation"]["sent"] == [down_run.pk]
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                current = AggregationRun.objects.get(pk=run["id"])
                if current.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
                    break
                time.sleep(0.3)
            assert current.status == RunStatus.SUCCEEDED, (current.status, current.error)
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        log.close()

    invariants = check_invariants(batch="redis-b01", acknowledged=acknowledged, queue_exhausted=True)
    assert not invariants["violations"], invariants
    assert invariants["stored_judgments"] == 12
    print(f"\nsubmitted with Redis down: {during.count(201)}; stored {invariants['stored_judgments']} of 12")
