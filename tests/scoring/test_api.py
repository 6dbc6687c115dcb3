import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from scoring.models import ModelRun
from scoring.services import model_run_create, model_run_score

from .conftest import UNAUDITED, jsonl


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def two_runs(release):
    runs = []
    for name, wrong in [("model-a", {}), ("model-b", {"mi-trust": "A"})]:
        records = [
            {"item_id": i.item_id, "prediction": wrong.get(k, i.answer)} for k, i in release.items() if k not in UNAUDITED
        ]
        run = model_run_create(name=name, model_name=name, lines=jsonl(records), source="x")
        runs.append(model_run_score(run_id=run.pk))
    return runs


def test_only_staff_and_release_readers_read(two_runs, verifier, reader, staff):
    url = reverse("api-models")
    assert client_for(verifier).get(url).status_code == 403
    assert APIClient().get(url).status_code in (401, 403)
    body = client_for(reader).get(url).json()
    assert [r["name"] for r in body] == ["model-b", "model-a"]
    assert client_for(staff).get(url).status_code == 200
    assert client_for(verifier).post(url, {"name": "x"}).status_code == 403
    assert client_for(reader).post(url, {"name": "x"}).status_code == 400  # readers upload runs of their own (issue 21)


def test_detail_and_compare(two_runs, reader, django_assert_max_num_queries):
    client = client_for(reader)
    detail = client.get(reverse("api-model", args=["model-b"])).json()
    assert detail["scores"]["overall"]["correct"] == 6 and "stats" in detail
    with django_assert_max_num_queries(6):
        response = client.get(reverse("api-models-compare"), {"a": "model-a", "b": "model-b"})
    body = response.json()
    assert body["mcnemar"]["table"] == [[6, 1], [0, 0]] and body["mcnemar"]["method"] == "exact"
    assert client.get(reverse("api-models-compare"), {"a": "model-a", "b": "nope"}).status_code == 404
    assert client.get(reverse("api-models-compare"), {"a": "model-a"}).status_code == 400


def test_upload_by_file_and_by_list(release, staff, django_capture_on_commit_callbacks):
    client = client_for(staff)
    content = "\n".join(jsonl([{"item_id": release["mi-trust"].item_id, "prediction": "C", "reasoning": "trusts"}]))
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            reverse("api-models"),
            {"name": "upl", "model_name": "Uploaded", "file": SimpleUploadedFile("p.jsonl", content.encode())},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    assert len(callbacks) == 1
    assert ModelRun.objects.get(name="upl").predictions.get().reasoning == "trusts"
    response = client.post(
        reverse("api-models"),
        {"name": "lst", "model_name": "Listed", "predictions": [{"item_id": "nope", "prediction": "A"}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {"errors": ["predictions:1: item_id: unknown item nope"]}


def test_pages(two_runs, client, verifier, reader):
    client.force_login(verifier)
    assert client.get(reverse("leaderboard")).status_code == 403
    client.force_login(reader)
    page = client.get(reverse("leaderboard")).content.decode()
    assert "model-a" in page and "100.0 %" in page and "85.7 %" in page
    detail = client.get(reverse("leaderboard-run", args=["model-b"])).content.decode()
    assert "Cramér" in detail and "85.7 %" in detail
    compare = client.get(reverse("leaderboard-compare"), {"a": "model-a", "b": "model-b"}).content.decode()
    assert 'id="mcnemar"' in compare


def test_leaderboard_page_queries_do_not_grow_with_runs(two_runs, client, reader, django_assert_max_num_queries):
    client.force_login(reader)
    with django_assert_max_num_queries(8):
        client.get(reverse("leaderboard"))


def test_rescore_queues_the_job_and_bad_files_are_refused(two_runs, staff, reader, django_capture_on_commit_callbacks):
    client = client_for(staff)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("api-model-rescore", args=["model-a"]))
    assert response.status_code == 202 and response.json()["status"] == "waiting"  # handed to the broker on commit
    assert len(callbacks) == 1
    assert client_for(reader).post(reverse("api-model-rescore", args=["model-a"])).status_code == 403
    response = client.post(
        reverse("api-models"),
        {"name": "latin", "model_name": "Latin", "file": SimpleUploadedFile("p.jsonl", "{\"é\": 1}".encode("latin-1"))},
        format="multipart",
    )
    assert response.status_code == 400 and "p.jsonl:0: file: not UTF-8" in response.json()["errors"][0]


def test_scoring_unaudited_items_is_a_400_and_the_leaderboard_names_the_release(two_runs, release, staff, reader):
    response = client_for(staff).post(
        reverse("api-models"),
        {"name": "greedy", "model_name": "Greedy", "release": "v1",
         "predictions": [{"item_id": release["dropped-easy"].item_id, "prediction": "A"}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "errors": [f"predictions:1: item_id: {release['dropped-easy'].item_id} was not audited for release v1: "
                   "only its audited items are scored"]
    }
    assert [r["release"] for r in client_for(reader).get(reverse("api-models")).json()] == ["v1", "v1"]
    client = APIClient()
    client.force_login(reader)
    page = client.get(reverse("leaderboard")).content.decode()
    assert page.count('<td class="release">v1</td>') == 2


def test_a_predictions_list_larger_than_a_form_body_is_taken_up_to_the_upload_limit(release, staff, settings):
    """DRF reads a JSON body through Django's 2.5 MB DATA_UPLOAD_MAX_MEMORY_SIZE; a model run on
    the whole benchmark is larger (issue 25's full rehearsal: 56,700 predictions refused with
    413). The list is bounded as a JSONL file is, by DIALTOM_RUN_UPLOAD_MAX_BYTES."""
    audited = [i for k, i in release.items() if k not in UNAUDITED]
    body = {"name": "verbose", "model_name": "Verbose", "release": "v1", "predictions": [
        {"item_id": i.item_id, "prediction": i.answer, "reasoning": "because " * 80_000} for i in audited]}
    raw = json.dumps(body).encode()
    assert len(raw) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE < settings.DIALTOM_RUN_UPLOAD_MAX_BYTES
    client = client_for(staff)
    response = client.post(reverse("api-models"), raw, content_type="application/json")
    assert response.status_code == 202, response.content[:300]
    run = ModelRun.objects.get(name="verbose")
    assert run.predictions.count() == len(audited)
    assert {len(p.reasoning) for p in run.predictions.all()} == {len("because ") * 80_000}

    settings.DIALTOM_RUN_UPLOAD_MAX_BYTES = len(raw) - 1
    body["name"] = "too-verbose"
    response = client.post(reverse("api-models"), json.dumps(body), content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": f"The request body is larger than {len(raw) - 1} bytes (DIALTOM_RUN_UPLOAD_MAX_BYTES)."}
    assert not ModelRun.objects.filter(name="too-verbose").exists()
    # the bound is this door's: other JSON doors keep Django's
    response = client.post(reverse("api-model-publish", args=["verbose"]), raw, content_type="application/json")
    assert response.status_code == 413
