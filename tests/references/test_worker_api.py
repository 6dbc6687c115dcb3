"""The crowd worker's own flow over the API: queue, claim, draft, submit; the same rules as the pages."""
import uuid

import pytest
from rest_framework.test import APIClient

from references import services
from references.models import Reference, ReferenceDraft, ReferenceSubmission
from tests.factories import StaffFactory, UserFactory, api_for

from .conftest import GOOD_TEXTS, make_contexts, make_set

pytestmark = pytest.mark.django_db


def claim(client, set_name="refs"):
    return client.post(f"/api/v1/reference-sets/{set_name}/next/")


def test_claim_shows_the_window_the_fields_and_resumes_the_same_context(workers, small_set):
    client = api_for(workers[0])
    first = claim(client)
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["reference_set"] == "refs" and body["status"] == "active" and body["editable"] is True
    assert body["context_id"] == small_set.members.order_by("position").first().context.context_id
    assert body["turns"] and {"speaker", "role", "text"} <= set(body["turns"][0])
    assert [a["name"] for a in body["attributes"]] == list(GOOD_TEXTS)
    assert body["texts"] == {a: "" for a in GOOD_TEXTS}
    assert body["progress"] == {"filled": 0, "total": 6, "percent": 0}
    # Asking again before submitting resumes the same context instead of taking a second one.
    assert claim(client).json()["id"] == body["id"]


def test_draft_then_submit_then_the_next_context(workers, small_set):
    client = api_for(workers[0])
    assignment_id = claim(client).json()["id"]
    url = f"/api/v1/reference-assignments/{assignment_id}/"

    saved = client.put(url + "draft/", {"texts": {"belief": GOOD_TEXTS["belief"]}, "seconds_spent": 12.5}, format="json")
    assert saved.status_code == 200, saved.content
    assert saved.json()["progress"]["filled"] == 1 and saved.json()["warning"] == ""
    shown = client.get(url).json()
    assert shown["texts"]["belief"] == GOOD_TEXTS["belief"] and shown["seconds_spent"] == 12.5

    key = str(uuid.uuid4())
    done = client.post(url + "submit/", {"texts": GOOD_TEXTS, "idempotency_key": key, "seconds_spent": 40}, format="json")
    assert done.status_code == 201, done.content
    assert done.json()["status"] == "submitted"
    assert Reference.objects.filter(assignment_id=assignment_id).count() == 6

    # The same key again (a retry after a lost response): 200, still one submission.
    again = client.post(url + "submit/", {"texts": GOOD_TEXTS, "idempotency_key": key}, format="json")
    assert again.status_code == 200
    assert ReferenceSubmission.objects.filter(assignment_id=assignment_id).count() == 1
    # Submitted work is no longer editable.
    assert client.put(url + "draft/", {"texts": GOOD_TEXTS}, format="json").status_code == 409
    assert client.get(url).json()["editable"] is False

    following = claim(client).json()
    assert following["id"] != assignment_id

    queue = client.get("/api/v1/reference-queue/").json()
    assert queue == [
        {
            "reference_set": "refs", "status": "open", "contexts": 3, "done": 1, "assigned": 2, "percent": 50,
            "active": [{"id": following["id"], "context_id": following["context_id"], "status": "active", "review_reason": ""}],
            "sent_back": [],
        }
    ]


def test_a_bad_submission_names_each_field_and_stores_nothing(workers, small_set):
    client = api_for(workers[0])
    assignment_id = claim(client).json()["id"]
    texts = dict(GOOD_TEXTS, desire="too short", trust=GOOD_TEXTS["belief"])
    response = client.post(
        f"/api/v1/reference-assignments/{assignment_id}/submit/",
        {"texts": {k: v for k, v in texts.items() if k != "knowledge"}, "idempotency_key": str(uuid.uuid4())},
        format="json",
    )
    assert response.status_code == 400
    errors = response.json()["texts"]
    assert set(errors) == {"desire", "knowledge", "trust"}
    assert "too short" in errors["desire"] and "Belief" in errors["trust"]
    assert not ReferenceSubmission.objects.exists() and not Reference.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"texts": {"beliefs": "x"}, "idempotency_key": str(uuid.uuid4())}, "texts"),
        ({"texts": ["belief"], "idempotency_key": str(uuid.uuid4())}, "texts"),
        ({"texts": {"belief": 3 * "x" * 2000}, "idempotency_key": str(uuid.uuid4())}, "texts"),
        ({"texts": GOOD_TEXTS}, "idempotency_key"),
        ({"texts": GOOD_TEXTS, "idempotency_key": "not-a-uuid"}, "idempotency_key"),
        ({"texts": GOOD_TEXTS, "idempotency_key": str(uuid.uuid4()), "seconds_spent": -1}, "seconds_spent"),
    ],
)
def test_malformed_requests_are_400_with_the_field(workers, small_set, body, field):
    client = api_for(workers[0])
    assignment_id = claim(client).json()["id"]
    response = client.post(f"/api/v1/reference-assignments/{assignment_id}/submit/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not ReferenceSubmission.objects.exists()


def test_sent_back_work_comes_back_with_the_reason_and_can_be_resubmitted(workers, small_set):
    client = api_for(workers[0])
    assignment_id = claim(client).json()["id"]
    url = f"/api/v1/reference-assignments/{assignment_id}/"
    client.post(url + "submit/", {"texts": GOOD_TEXTS, "idempotency_key": str(uuid.uuid4())}, format="json")
    services.reference_send_back(reviewer=StaffFactory(), assignment_id=assignment_id, reason="Trust: say why.")

    queue = client.get("/api/v1/reference-queue/").json()[0]
    assert queue["sent_back"] == [
        {"id": assignment_id, "context_id": queue["sent_back"][0]["context_id"], "status": "sent_back", "review_reason": "Trust: say why."}
    ]
    shown = client.get(url).json()
    assert shown["editable"] is True and shown["review_reason"] == "Trust: say why."
    revised = dict(GOOD_TEXTS, trust="He is wary of the counselor because he feels judged about drinking.")
    response = client.post(url + "submit/", {"texts": revised, "idempotency_key": str(uuid.uuid4())}, format="json")
    assert response.status_code == 201
    assert Reference.objects.get(assignment_id=assignment_id, attribute="trust").text == revised["trust"]


def test_only_crowd_workers_and_only_their_own_assignments(workers, small_set):
    assignment_id = claim(api_for(workers[0])).json()["id"]
    url = f"/api/v1/reference-assignments/{assignment_id}/"
    other = api_for(workers[1])
    assert other.get(url).status_code == 404
    assert other.put(url + "draft/", {"texts": {"belief": "mine now"}}, format="json").status_code == 404
    assert other.post(url + "submit/", {"texts": GOOD_TEXTS, "idempotency_key": str(uuid.uuid4())}, format="json").status_code == 404
    assert not ReferenceDraft.objects.filter(worker=workers[1]).exists()

    verifier = api_for(UserFactory())
    for response in (
        verifier.get("/api/v1/reference-queue/"),
        claim(verifier),
        verifier.get(url),
    ):
        assert response.status_code == 403
    assert APIClient().get("/api/v1/reference-queue/").status_code == 401


def test_paused_set_and_unknown_set(workers, small_set):
    services.reference_set_status_set(reference_set_id=small_set.pk, status="paused")
    response = claim(api_for(workers[0]))
    assert response.status_code == 409 and "paused" in response.json()["detail"]
    assert claim(api_for(workers[0]), "no-such-set").status_code == 404


def test_nothing_left_is_204(workers, db):
    make_set(contexts=make_contexts(1), per_context=1, name="tiny")
    first = api_for(workers[0])
    assert claim(first, "tiny").status_code == 200
    assert claim(api_for(workers[1]), "tiny").status_code == 204
