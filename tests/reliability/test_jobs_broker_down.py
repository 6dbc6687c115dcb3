"""Queuing a job never answers 500: with the broker really unreachable (its URL points at a
port nothing listens on) a release, a model run and a human baseline are recorded WAITING,
the API answers 202, the version and the run name are kept; once the broker is back the jobs
sweep hands each to a real Celery worker, which finishes it."""
import time

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from dialtom_site import jobs
from dialtom_site.celery import app
from releases import services as release_services
from releases.models import Release, ReleaseStatus
from scoring.models import BaselineRun, ModelRun, ScoreStatus
from scoring.services import baseline_pool_create
from tests.dashboard.world import make_world
from tests.factories import StaffFactory, UserFactory
from tests.scoring.test_celery import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]  # real commits: on_commit runs


@pytest.fixture(autouse=True)
def release_root(tmp_path, settings):
    settings.RELEASE_ROOT = tmp_path / "releases"


def test_jobs_asked_for_while_the_broker_is_down_wait_and_the_sweep_starts_them(celery_worker, monkeypatch):
    # Given results, a first release, a scorer and a baseline pool
    world = make_world()
    v1 = release_services.release_build(release_id=release_services.release_create(version="v1", build=False).pk)
    assert v1.status == ReleaseStatus.READY
    UserFactory(username="lay1")
    pool = baseline_pool_create(name="lay", usernames=["lay1"])
    client = APIClient()
    client.force_authenticate(StaffFactory(username="boss"))

    # When the broker is unreachable
    monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")  # nothing listens there
    started = time.monotonic()
    release = client.post("/api/v1/releases/", {"version": "v2"}, format="json")
    model = client.post(
        "/api/v1/models/",
        {"name": "m-down", "model_name": "Down", "release": "v1",
         "predictions": [{"item_id": "mi-trust", "prediction": "C"}, {"item_id": "mi-emotion", "prediction": "A"}]},
        format="json",
    )
    call_command("baseline", "lay", "--score", "--release", "v1")
    elapsed = time.monotonic() - started

    # Then every request answered at once, and every job is kept, waiting
    assert release.status_code == 202 and release.json()["status"] == "waiting", release.content
    assert model.status_code == 202 and model.json()["status"] == "waiting", model.content
    assert elapsed < 10
    baseline = BaselineRun.objects.get(pool=pool)
    assert baseline.status == ScoreStatus.WAITING
    # the version is not burned, nor reused
    again = client.post("/api/v1/releases/", {"version": "v2"}, format="json")
    assert again.status_code == 400 and "already exists" in again.json()["detail"]
    # a sweep while Redis is still down changes nothing
    report = jobs.jobs_sweep()
    assert report["release"]["waiting"] == [Release.objects.get(version="v2").pk]
    assert Release.objects.get(version="v2").status == ReleaseStatus.WAITING

    # When the broker is back, the sweep hands every waiting job over and the worker finishes them
    monkeypatch.setitem(app.conf, "broker_write_url", None)
    report = jobs.jobs_sweep()
    assert report["release"]["sent"] == [Release.objects.get(version="v2").pk]
    assert report["model_run"]["sent"] == [ModelRun.objects.get(name="m-down").pk]
    assert report["baseline"]["sent"] == [baseline.pk]
    assert wait_for(lambda: Release.objects.get(version="v2").status in (ReleaseStatus.READY, ReleaseStatus.FAILED))
    v2 = Release.objects.get(version="v2")
    assert v2.status == ReleaseStatus.READY, v2.error
    assert v2.n_items == v1.n_items == 4 and v2.attempts == 1
    assert wait_for(lambda: ModelRun.objects.get(name="m-down").status == ScoreStatus.SUCCEEDED)
    run = ModelRun.objects.get(name="m-down")
    assert run.release == v1 and run.scores["overall"]["n"] == 1 and run.scores["n_unreleased"] == 1
    assert wait_for(lambda: BaselineRun.objects.get(pk=baseline.pk).status == ScoreStatus.SUCCEEDED)
    assert jobs.jobs_sweep()["release"] == {"lost": [], "retried": [], "sent": [], "waiting": []}
    assert world.batch_a.name == "batch-a"
