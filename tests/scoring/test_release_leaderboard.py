"""Issue 21 items 6 and 8: a leaderboard ranks the runs of one release (a selector for the
others); release readers upload runs of their own, seen by them and staff until staff publish."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from scoring.models import ModelRun
from scoring.services import model_run_create, model_run_score
from tests.factories import UserFactory

from .conftest import UNAUDITED, jsonl, release_of

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _scored(name, items, *, version, wrong=(), uploaded_by=None):
    records = [{"item_id": i.item_id, "prediction": ("A" if i.answer != "A" else "B") if k in wrong else i.answer}
               for k, i in items.items() if k not in UNAUDITED]
    run = model_run_create(name=name, model_name=name, lines=jsonl(records), source="p.jsonl", release=version,
                           uploaded_by=uploaded_by)
    return model_run_score(run_id=run.pk)


@pytest.fixture
def two_releases(release):
    """v1 (the fixture's) and v2 (every audited item retained): a weak run on v2, a strong one on v1."""
    release_of(release, unaudited=UNAUDITED, dropped=set(), version="v2")
    strong_v1 = _scored("strong-on-v1", release, version="v1")
    weak_v2 = _scored("weak-on-v2", release, version="v2", wrong={"mi-trust", "mi-belief", "esc-trust"})
    other_v2 = _scored("other-on-v2", release, version="v2", wrong={"mi-trust"})
    return strong_v1, weak_v2, other_v2


def _board(client, **params):
    page = client.get(reverse("leaderboard"), params)
    assert page.status_code == 200
    return page.context["runs"], page.content.decode()


def test_the_leaderboard_ranks_one_release_the_latest_by_default(two_releases, reader, client):
    strong_v1, weak_v2, other_v2 = two_releases
    client.force_login(reader)

    runs, html = _board(client)
    assert [r.name for r in runs] == ["other-on-v2", "weak-on-v2"]  # v2 only, never strong-on-v1 above them
    assert 'id="ranked-release">v2<' in html
    assert "?a=other-on-v2&amp;b=weak-on-v2" in html  # "compare the top two": one release, so it works
    compare = client.get(reverse("leaderboard-compare"), {"a": "other-on-v2", "b": "weak-on-v2"})
    assert compare.context["problem"] is None and compare.context["comparison"] is not None

    runs, html = _board(client, release="v1")
    assert [r.name for r in runs] == ["strong-on-v1"] and 'value="v1" selected' in html


def test_the_run_api_carries_scored_items(two_releases, reader):
    strong_v1, weak_v2, _ = two_releases
    body = {r["name"]: r for r in client_for(reader).get(reverse("api-models")).json()}
    # v1 did not retain `dropped`: 8 predictions, 7 scored; v2 retains it: 8 scored
    assert body["strong-on-v1"]["scored_items"] == 7 and body["strong-on-v1"]["n_predictions"] == 8
    assert body["weak-on-v2"]["scored_items"] == 8
    only_v2 = client_for(reader).get(reverse("api-models"), {"release": "v2"}).json()
    assert sorted(r["name"] for r in only_v2) == ["other-on-v2", "weak-on-v2"]


def _upload(client, release, name="mine", **extra):
    lines = "\n".join(jsonl([{"item_id": release["mi-trust"].item_id, "prediction": "C"}]))
    return client.post(
        reverse("api-models"),
        {"name": name, "model_name": "My model", "release": "v1", "file": SimpleUploadedFile("p.jsonl", lines.encode()),
         **extra},
        format="multipart",
    )


def test_a_reader_uploads_a_run_of_their_own_staff_publish_it(release, reader, staff):
    other_reader = UserFactory(username="reader02", role="release_reader")
    response = _upload(client_for(reader), release)
    assert response.status_code == 202, response.content
    assert response.json()["published"] is False and response.json()["uploaded_by"] == "reader01"
    model_run_score(run_id=response.json()["id"])

    def names(user):
        return [r["name"] for r in client_for(user).get(reverse("api-models")).json()]

    assert names(reader) == ["mine"] and names(staff) == ["mine"] and names(other_reader) == []
    assert client_for(other_reader).get(reverse("api-model", args=["mine"])).status_code == 404
    assert client_for(reader).post(reverse("api-model-publish", args=["mine"]), {}).status_code == 403
    assert client_for(reader).post(reverse("api-model-rescore", args=["mine"])).status_code == 403

    published = client_for(staff).post(reverse("api-model-publish", args=["mine"]), {"published": True}, format="json")
    assert published.status_code == 200 and published.json()["published"] is True
    assert names(other_reader) == ["mine"]


def test_a_readers_bad_lines_are_refused_with_file_line_field(release, reader):
    lines = "\n".join([json.dumps({"item_id": release["mi-trust"].item_id, "prediction": "Z"}), "{not json"])
    response = client_for(reader).post(
        reverse("api-models"),
        {"name": "bad", "model_name": "m", "file": SimpleUploadedFile("bad.jsonl", lines.encode())}, format="multipart",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors[0].startswith("bad.jsonl:1: prediction:") and errors[1].startswith("bad.jsonl:2:")
    assert not ModelRun.objects.exists()


def test_size_and_rate_limits(release, reader, staff, settings):
    settings.DIALTOM_READER_RUNS_PER_DAY = 2
    client = client_for(reader)
    assert _upload(client, release, name="one").status_code == 202
    assert _upload(client, release, name="two").status_code == 202
    limited = _upload(client, release, name="three")
    assert limited.status_code == 429 and "limit is 2" in limited.json()["errors"][0]
    assert _upload(client_for(staff), release, name="staff-one").status_code == 202  # staff: no limit

    settings.DIALTOM_READER_RUNS_PER_DAY = 10
    settings.DIALTOM_RUN_UPLOAD_MAX_BYTES = 10
    too_big = _upload(client, release, name="big")
    assert too_big.status_code == 400 and "over the limit of 10 bytes" in too_big.json()["errors"][0]
    # the same bound holds for a JSON list of predictions: its body is refused before it is read
    listed = client.post(reverse("api-models"), {"name": "big-list", "model_name": "m",
                         "predictions": [{"item_id": release["mi-trust"].item_id, "prediction": "C"}]}, format="json")
    assert listed.status_code == 413
    assert listed.json() == {"detail": "The request body is larger than 10 bytes (DIALTOM_RUN_UPLOAD_MAX_BYTES)."}


def test_a_reader_uploads_through_the_page(release, reader, client):
    client.force_login(reader)
    assert client.get(reverse("leaderboard-upload")).status_code == 200
    lines = "\n".join(jsonl([{"item_id": release["mi-trust"].item_id, "prediction": "C"}]))
    response = client.post(reverse("leaderboard-upload"), {
        "name": "page-run", "model_name": "Mine", "release": "v1", "description": "",
        "file": SimpleUploadedFile("p.jsonl", lines.encode()),
    })
    assert response.status_code == 302
    run = ModelRun.objects.get(name="page-run")
    assert run.uploaded_by == reader and not run.published
