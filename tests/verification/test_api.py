import uuid

import pytest
from rest_framework.test import APIClient

from annotation.models import BatchStatus
from tests.factories import ProspectiveItemFactory, StaffFactory, api_for
from verification.models import Judgment

from .factories import open_batch, verifiers

pytestmark = pytest.mark.django_db


def test_next_submit_repeat_progress_and_204_at_the_end(verifier):
    batch = open_batch(n_items=2, verifiers=[verifier])
    api = api_for(verifier)
    item = api.get("/api/v1/next-item/", {"batch": batch.name})
    assert item.status_code == 200
    body = item.json()
    assert body["task"] == "retrospective" and [o["letter"] for o in body["options"]] == list("ABCD")
    assert body["context"][0]["speaker"] == "counselor"
    key = str(uuid.uuid4())
    payload = {"claim": body["claim"], "choice": "c", "idempotency_key": key, "implausible": ["A"], "comment": "hm"}
    first = api.post("/api/v1/judgments/", payload, format="json")
    again = api.post("/api/v1/judgments/", payload, format="json")
    assert first.status_code == 201 and again.status_code == 200
    assert first.json() == again.json() and first.json()["choice"] == "C"
    assert Judgment.objects.filter(verifier=verifier).count() == 1
    assert api.get("/api/v1/progress/").json() == [
        {"batch": batch.name, "status": "open", "done": 1, "assigned": 2, "percent": 50}
    ]
    second = api.get("/api/v1/next-item/", {"batch": batch.name}).json()
    assert second["claim"] != body["claim"]
    api.post("/api/v1/judgments/", {"claim": second["claim"], "choice": "NONE", "idempotency_key": str(uuid.uuid4())}, format="json")
    assert api.get("/api/v1/next-item/", {"batch": batch.name}).status_code == 204


def test_bad_submissions_get_400_with_reasons(verifier):
    batch = open_batch(verifiers=[verifier])
    api = api_for(verifier)
    claim = api.get("/api/v1/next-item/", {"batch": batch.name}).json()["claim"]
    r = api.post("/api/v1/judgments/", {"claim": claim, "choice": "E", "idempotency_key": str(uuid.uuid4())}, format="json")
    assert r.status_code == 400 and "choice" in r.json()
    r = api.post("/api/v1/judgments/", {"claim": claim, "choice": "A", "idempotency_key": "nope"}, format="json")
    assert r.status_code == 400 and "idempotency_key" in r.json()
    r = api.post("/api/v1/judgments/", {"claim": claim, "choice": "NOTA", "idempotency_key": str(uuid.uuid4())}, format="json")
    assert r.status_code == 400 and "NOTA" in r.json()["detail"]
    r = api.post("/api/v1/judgments/", {"claim": str(uuid.uuid4()), "choice": "A", "idempotency_key": str(uuid.uuid4())}, format="json")
    assert r.status_code == 404
    assert api.get("/api/v1/next-item/").status_code == 400
    assert not Judgment.objects.exists()


def test_counterfactual_items_offer_nota_as_a_fifth_choice(verifier):
    batch = open_batch(n_items=0, verifiers=[verifier])
    ProspectiveItemFactory(batch=batch, variant="counterfactual", answer="NOTA")
    api = api_for(verifier)
    body = api.get("/api/v1/next-item/", {"batch": batch.name}).json()
    assert [o["letter"] for o in body["options"]] == ["A", "B", "C", "D", "NOTA"]
    r = api.post("/api/v1/judgments/", {"claim": body["claim"], "choice": "NOTA", "idempotency_key": str(uuid.uuid4())}, format="json")
    assert r.status_code == 201 and Judgment.objects.get().label == "NOTA"


def test_anonymous_and_non_verifiers_are_refused(verifier):
    batch = open_batch(verifiers=[verifier])
    assert APIClient().get("/api/v1/next-item/", {"batch": batch.name}).status_code == 401
    assert api_for(StaffFactory()).get("/api/v1/next-item/", {"batch": batch.name}).status_code == 403
    (stranger,) = verifiers(1, prefix="x")
    assert api_for(stranger).get("/api/v1/next-item/", {"batch": batch.name}).status_code == 404


def test_staff_pause_close_and_reopen_a_batch(verifier):
    batch = open_batch(verifiers=[verifier])
    staff = api_for(StaffFactory())
    assert staff.post(f"/api/v1/batches/{batch.name}/status/", {"status": "paused"}, format="json").json()["status"] == "paused"
    r = api_for(verifier).get("/api/v1/next-item/", {"batch": batch.name})
    assert r.status_code == 409 and r.json()["code"] == "batch_paused"
    body = staff.post(f"/api/v1/batches/{batch.name}/status/", {"status": "open", "overlap": 2}, format="json").json()
    assert body["status"] == "open" and body["overlap"] == 2 and body["pools"] == ["verifiers"]
    staff.post(f"/api/v1/batches/{batch.name}/status/", {"status": "closed"}, format="json")
    batch.refresh_from_db()
    assert batch.status == BatchStatus.CLOSED
    assert api_for(verifier).post(f"/api/v1/batches/{batch.name}/status/", {"status": "open"}, format="json").status_code == 403


def test_judgment_change_through_the_api(verifier):
    batch = open_batch(verifiers=[verifier])
    api = api_for(verifier)
    claim = api.get("/api/v1/next-item/", {"batch": batch.name}).json()["claim"]
    jid = api.post("/api/v1/judgments/", {"claim": claim, "choice": "A", "idempotency_key": str(uuid.uuid4())}, format="json").json()["id"]
    r = api.put(f"/api/v1/judgments/{jid}/", {"choice": "B"}, format="json")
    assert r.status_code == 200 and r.json()["choice"] == "B"
