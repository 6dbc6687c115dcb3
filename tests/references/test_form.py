"""The form: validation messages, autosave (a draft survives a new session), idempotent submit."""
import uuid

import pytest
from django.test import Client

from references import services
from references.models import (
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceDraft,
    ReferenceSubmission,
)

from .conftest import GOOD_TEXTS


@pytest.fixture
def held(small_set, workers):
    return services.reference_assignment_claim_next(worker=workers[0], reference_set_id=small_set.pk)


def url(assignment, suffix=""):
    return f"/annotate/work/{assignment.pk}/{suffix}"


# --- validation ---------------------------------------------------------------------


def test_validation_messages_name_the_field_and_the_fix():
    texts = dict(GOOD_TEXTS, desire="", intention="too short")
    texts["emotion"] = GOOD_TEXTS["belief"].upper() + "!!"  # the same once normalised
    texts["knowledge"] = GOOD_TEXTS["belief"].replace("harmless", "harmles")  # nearly the same
    errors = services.reference_texts_validate(texts=texts, min_chars=20)
    assert errors == {
        "desire": "Desire: write an inference of at least 20 characters.",
        "intention": "Intention: too short (9 characters); write at least 20.",
        "emotion": "Emotion: the same text as Belief; write a different inference for each attribute.",
        "knowledge": "Knowledge: nearly the same text as Belief; write a different inference for each attribute.",
    }
    assert services.reference_texts_validate(texts=GOOD_TEXTS, min_chars=20) == {}


def test_invalid_submit_shows_messages_and_keeps_the_text(client, held, workers):
    client.force_login(workers[0])
    data = dict(GOOD_TEXTS, trust="no", idempotency_key=str(uuid.uuid4()), seconds_spent="12")
    response = client.post(url(held), data)
    assert response.status_code == 302 and response.url == url(held)  # POST/redirect/GET
    response = client.get(response.url)
    page = response.content.decode()
    assert response.status_code == 422
    assert "Trust: too short (2 characters); write at least 20." in page
    assert GOOD_TEXTS["belief"] in page
    assert not ReferenceSubmission.objects.exists()
    assert ReferenceDraft.objects.get(worker=workers[0]).texts["belief"] == GOOD_TEXTS["belief"]


def test_form_shows_dialogue_with_role_names_definitions_and_progress(client, held, workers):
    client.force_login(workers[0])
    page = client.get(url(held)).content.decode()
    assert "counselor:" in page and "client:" in page  # domain role names, not initiator/recipient
    assert "What is the <strong>client</strong> thinking" in page
    for label in ("Belief", "Desire", "Intention", "Emotion", "Knowledge", "Trust"):
        assert f">{label}</label>" in page
    assert "Example:" in page and "0 of 6 inferences written" in page
    assert 'hx-trigger="keyup changed delay:800ms, change"' in page


def test_a_worker_cannot_open_someone_elses_assignment(client, held, workers):
    client.force_login(workers[1])
    assert client.get(url(held)).status_code == 404
    assert client.post(url(held, "autosave/"), {"belief": "x"}).status_code == 409


# --- autosave -------------------------------------------------------------------------


def test_autosave_keeps_the_draft_for_a_new_session(held, workers):
    first = Client()
    first.force_login(workers[0])
    response = first.post(url(held, "autosave/"), {"belief": GOOD_TEXTS["belief"], "seconds_spent": "31.5"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "Draft saved at" in response.content.decode()
    assert 'hx-swap-oob="true"' in response.content.decode() and "1 of 6 inferences written" in response.content.decode()

    # The browser is gone; the worker logs in again somewhere else.
    first.logout()
    second = Client()
    second.force_login(workers[0])
    page = second.get(url(held)).content.decode()

    assert GOOD_TEXTS["belief"] in page
    assert 'name="seconds_spent" value="31.5"' in page


def test_autosave_is_one_row_per_worker_and_context_and_renews_the_lease(held, workers):
    before = held.expires_at
    for text in ("a", "ab", "abc"):
        services.reference_draft_save(worker=workers[0], assignment_id=held.pk, texts={"belief": text}, seconds_spent=1)
    assert ReferenceDraft.objects.count() == 1
    assert ReferenceDraft.objects.get().texts["belief"] == "abc"
    assert ReferenceAssignment.objects.get(pk=held.pk).expires_at >= before


def test_save_draft_button_works_without_javascript(client, held, workers):
    client.force_login(workers[0])
    response = client.post(url(held), {"belief": "typed without htmx", "action": "save"})
    assert response.status_code == 302
    assert ReferenceDraft.objects.get().texts["belief"] == "typed without htmx"


# --- submit ---------------------------------------------------------------------------


def test_submit_is_idempotent(client, held, workers):
    client.force_login(workers[0])
    data = dict(GOOD_TEXTS, idempotency_key=str(uuid.uuid4()), seconds_spent="95")
    first = client.post(url(held), data)
    again = client.post(url(held), data)  # double click, resent form, retry after a timeout

    assert first.status_code == 302 and again.status_code == 302
    assert ReferenceSubmission.objects.count() == 1
    assert Reference.objects.count() == 6
    assignment = ReferenceAssignment.objects.get(pk=held.pk)
    assert assignment.status == AssignmentStatus.SUBMITTED and assignment.seconds_spent == 95


def test_submit_with_a_new_key_after_submitting_is_refused_not_duplicated(held, workers):
    services.reference_submit(worker=workers[0], assignment_id=held.pk, texts=GOOD_TEXTS, idempotency_key=uuid.uuid4())
    with pytest.raises(services.ReferenceWorkflowError, match="submitted"):
        services.reference_submit(worker=workers[0], assignment_id=held.pk, texts=GOOD_TEXTS, idempotency_key=uuid.uuid4())
    assert ReferenceSubmission.objects.count() == 1


def test_submit_and_next_takes_the_next_context(client, held, workers):
    client.force_login(workers[0])
    response = client.post(url(held), dict(GOOD_TEXTS, idempotency_key=str(uuid.uuid4()), then="next"))
    nxt = ReferenceAssignment.objects.exclude(pk=held.pk).get(worker=workers[0])
    assert response["Location"] == url(nxt) and nxt.member.position == 1
