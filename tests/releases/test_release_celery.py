"""A release built by a real Celery worker on Redis, queued by the API after commit."""
import time

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from releases.models import Release, ReleaseStatus
from tests.dashboard.world import make_world
from tests.factories import StaffFactory

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_release_is_built_by_the_worker(celery_worker, release_root):
    make_world()
    staff = StaffFactory()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff).key}")

    response = client.post("/api/v1/releases/", {"version": "celery-1"}, format="json")
    assert response.status_code == 202

    deadline = time.monotonic() + 60
    release = Release.objects.get(version="celery-1")
    while release.status not in (ReleaseStatus.READY, ReleaseStatus.FAILED) and time.monotonic() < deadline:
        time.sleep(0.2)
        release.refresh_from_db()
    assert release.status == ReleaseStatus.READY, release.error
    assert release.n_items == 4 and release.created_by == staff and release.trigger == "api"
    assert (release_root / "celery-1" / "items.parquet").exists()
    manifest = client.get("/api/v1/releases/celery-1/").json()
    assert manifest["files"]["items.jsonl"]["rows"] == 4
