"""A release built from a flagged batch (low AC1) or from items with fewer judgments than the
batch's overlap says so: creating it needs an acknowledgement, and its warnings are recorded
on the release, in its manifest, in the API and on the dashboard."""
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from aggregation.models import BatchResult, ItemResult
from releases import services
from releases.models import Release, ReleaseStatus
from tests.factories import StaffFactory

from .test_releases import api_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def troubled(world):
    """The world's current run on batch-a with AC1 −0.17 and esc-desire judged twice of k=3."""
    BatchResult.objects.filter(run=world.run2, batch=world.batch_a).update(ac1=-0.17)
    ItemResult.objects.filter(run=world.run2, item=world.items["esc-desire"]).update(n_judgments=2)
    world.items["esc-desire"].judgments.order_by("pk").last().delete()
    from dashboard.summaries import summaries_rebuild  # results written around the aggregation job

    summaries_rebuild()
    return world


EXPECTED = [
    "batch batch-a: AC1 -0.17 is under the flag threshold 0.6",
    "batch batch-a: 1 item(s) hold fewer judgments than its overlap 3 (fewest: 2)",
]


def test_a_clean_world_has_no_warning(world):
    release = services.release_build(release_id=services.release_create(version="v1", build=False).pk)
    assert release.warnings == [] and release.manifest["warnings"] == [] and not release.warnings_acknowledged


def test_warnings_refuse_the_release_until_acknowledged(troubled):
    with pytest.raises(services.ReleaseWarnings) as caught:
        services.release_create(version="v1", build=False)
    assert [w["message"] for w in caught.value.warnings] == EXPECTED
    assert [w["code"] for w in caught.value.warnings] == ["low_agreement", "under_overlap"]
    assert not Release.objects.exists()  # nothing recorded, the version is free

    release = services.release_create(version="v1", build=False, acknowledge_warnings=True)
    assert release.warnings_acknowledged and [w["message"] for w in release.warnings] == EXPECTED
    release = services.release_build(release_id=release.pk)
    assert release.status == ReleaseStatus.READY
    assert [w["message"] for w in release.manifest["warnings"]] == EXPECTED
    assert release.manifest["warnings_acknowledged"] is True
    folder = json.loads((services.release_root() / "v1" / "manifest.json").read_text())
    assert folder["warnings"] == release.manifest["warnings"]


def test_api_answers_400_with_the_warnings_then_202_when_acknowledged(troubled):
    client = api_client(StaffFactory())
    refused = client.post("/api/v1/releases/", {"version": "v1"}, format="json")
    assert refused.status_code == 400
    assert [w["message"] for w in refused.json()["warnings"]] == EXPECTED
    assert "acknowledge these warnings" in refused.json()["detail"]
    accepted = client.post("/api/v1/releases/", {"version": "v1", "acknowledge_warnings": True}, format="json")
    assert accepted.status_code == 202
    body = accepted.json()
    assert body["warnings_acknowledged"] is True and [w["message"] for w in body["warnings"]] == EXPECTED
    listed = client.get("/api/v1/releases/").json()
    assert [w["code"] for w in listed[0]["warnings"]] == ["low_agreement", "under_overlap"]


def test_command_refuses_then_releases_with_the_flag(troubled, capsys):
    with pytest.raises(CommandError, match="AC1 -0.17 is under the flag threshold") as caught:
        call_command("make_release", "--version", "v1")
    assert "--acknowledge-warnings" in str(caught.value)
    call_command("make_release", "--version", "v1", "--acknowledge-warnings")
    out = capsys.readouterr().out
    assert "release v1: ready, 4 items" in out and f"warning: {EXPECTED[0]}" in out


def test_dashboard_shows_the_warnings_and_needs_the_tick(troubled, client):
    client.force_login(StaffFactory())
    page = client.get(reverse("dashboard:fragment", args=["releases"])).content.decode()
    assert 'id="release-warnings"' in page and EXPECTED[0] in page and 'name="acknowledge_warnings"' in page
    response = client.post(reverse("dashboard:release-create"), {"version": "v1"}, follow=True)
    assert "Not created" in response.content.decode() and not Release.objects.exists()
    response = client.post(reverse("dashboard:release-create"), {"version": "v1", "acknowledge_warnings": "on"}, follow=True)
    assert "with 2 acknowledged warning(s)" in response.content.decode()
    release = Release.objects.get(version="v1")
    assert release.warnings_acknowledged
    page = client.get(reverse("dashboard:fragment", args=["releases"])).content.decode()
    assert page.count(EXPECTED[1]) >= 2  # in the release's row, and above the form


def test_the_dashboard_form_answers_htmx_with_the_releases_card(troubled, client):
    """Posted from the Releases card (htmx): the card comes back in place with what happened."""
    client.force_login(StaffFactory())
    url = reverse("dashboard:release-create")
    card = client.post(url, {"version": "v1"}, HTTP_HX_REQUEST="true").content.decode()
    assert card.lstrip().startswith('<section class="card" id="releases"') and "Not created" in card
    assert "<html" not in card and not Release.objects.exists()
    card = client.post(url, {"version": "v1", "acknowledge_warnings": "on"}, HTTP_HX_REQUEST="true").content.decode()
    assert "with 2 acknowledged warning(s)" in card and Release.objects.filter(version="v1").exists()
