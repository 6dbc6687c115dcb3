"""Staff-only aggregation API: start a run, read its status and progress."""
import pytest
from rest_framework.test import APIClient

from aggregation import services
from aggregation.models import AggregationRun, RunStatus
from tests.factories import BatchFactory, ItemFactory

from .synthetic import ensure_domains


@pytest.fixture
def client():
    return APIClient()


def test_only_staff(client, verifier, db):
    assert client.post("/api/v1/aggregation-runs/", {}, format="json").status_code in (401, 403)
    client.force_authenticate(verifier)
    assert client.post("/api/v1/aggregation-runs/", {}, format="json").status_code == 403
    run = AggregationRun.objects.create()
    assert client.get(f"/api/v1/aggregation-runs/{run.pk}/").status_code == 403


def test_staff_starts_run_and_reads_status(client, staff, monkeypatch, django_capture_on_commit_callbacks):
    item = ItemFactory(batch=BatchFactory(name="b-api"))
    queued = []
    monkeypatch.setattr(services, "aggregation_run_publish", queued.append)
    client.force_authenticate(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/aggregation-runs/", {"batches": ["b-api"]}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    # the test's transaction commits only after the response: the run was still waiting for its hand-over
    assert body["status"] == "waiting" and body["batches"] == ["b-api"] and body["started_by"] == staff.username
    assert queued == [body["id"]] and AggregationRun.objects.get(pk=body["id"]).status == RunStatus.PENDING
    # when the run progresses, the status endpoint shows it
    services.batch_aggregate(run_id=body["id"], batch_id=item.batch_id)
    status = client.get(f"/api/v1/aggregation-runs/{body['id']}/").json()
    assert status["status"] == RunStatus.RUNNING and status["progress"] == 1.0 and status["batches_done"] == 1
    services.aggregation_run_finish(run_id=body["id"])
    status = client.get(f"/api/v1/aggregation-runs/{body['id']}/").json()
    assert status["status"] == "succeeded" and status["summary"]["totals"]["items"] == 1
    assert [r["id"] for r in client.get("/api/v1/aggregation-runs/").json()] == [body["id"]]


def test_bad_requests(client, staff):
    client.force_authenticate(staff)
    r = client.post("/api/v1/aggregation-runs/", {"batches": ["nope"]}, format="json")
    assert r.status_code == 400 and "unknown batch" in str(r.json())
    r = client.post("/api/v1/aggregation-runs/", {}, format="json")
    assert r.status_code == 400 and "no batch has judgments yet" in str(r.json())
    assert client.get("/api/v1/aggregation-runs/999999/").status_code == 404


@pytest.mark.django_db(transaction=True)  # real commits: the dispatch runs inside the request
def test_broker_down_gives_202_and_the_run_waits(client, staff, monkeypatch):
    from dialtom_site.celery import app

    ensure_domains()
    ItemFactory(batch=BatchFactory(name="b-down"))
    monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")  # nothing listens there
    client.force_authenticate(staff)
    r = client.post("/api/v1/aggregation-runs/", {"batches": ["b-down"]}, format="json")
    assert r.status_code == 202 and r.json()["status"] == "waiting" and r.json()["error"] == ""
    assert AggregationRun.objects.get(pk=r.json()["id"]).status == RunStatus.WAITING


def test_all_means_every_audited_batch(client, staff, monkeypatch, django_capture_on_commit_callbacks):
    from tests.factories import JudgmentFactory

    audited = ItemFactory(batch=BatchFactory(name="b-audited"))
    ItemFactory(batch=BatchFactory(name="b-idle"))
    JudgmentFactory(item=audited, batch=audited.batch)
    monkeypatch.setattr(services, "aggregation_run_publish", lambda run_id: None)
    client.force_authenticate(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/aggregation-runs/", {"all": True}, format="json")
    assert response.status_code == 202 and response.json()["batches"] == ["b-audited"]


@pytest.mark.django_db(transaction=True)
def test_aggregate_command_with_the_broker_down_reports_the_waiting_run(monkeypatch, capsys):
    import json
    import time

    from django.core.management import call_command

    from dialtom_site.celery import app
    from tests.factories import JudgmentFactory

    ensure_domains()
    item = ItemFactory(batch=BatchFactory(name="b-cmd-down"))
    JudgmentFactory(item=item, batch=item.batch)
    monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")  # nothing listens there
    started = time.monotonic()
    call_command("aggregate", "--all", "--json")  # would wait up to --timeout for a queued run
    assert time.monotonic() - started < 10
    lines = capsys.readouterr().out.strip().splitlines()
    report = json.loads(lines[-1])
    assert report["status"] == "waiting" and "waits for the broker" in lines[0]
    assert AggregationRun.objects.get(pk=report["run"]).status == RunStatus.WAITING
