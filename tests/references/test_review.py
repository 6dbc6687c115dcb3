"""Staff review round trip, and the export of accepted references (service and API)."""
import json

import pytest

from references import selectors, services
from references.models import AssignmentStatus, ReferenceAssignment
from tests.factories import UserFactory

from .conftest import GOOD_TEXTS, submit


@pytest.fixture
def submitted(small_set, workers):
    out = []
    for w in workers[:2]:
        a = services.reference_assignment_claim_next(worker=w, reference_set_id=small_set.pk)
        submit(w, a, texts={k: f"{v} ({w.username})" for k, v in GOOD_TEXTS.items()})
        out.append(a)
    return out


def test_review_round_trip(client, staff, small_set, workers, submitted):
    a, b = submitted
    member = a.member
    client.force_login(staff)
    page = client.get(f"/annotate/references/{small_set.name}/review/{member.pk}/").content.decode()
    assert "crowd01" in page and "crowd02" in page  # side by side
    assert f"{GOOD_TEXTS['trust']} (crowd01)" in page and f"{GOOD_TEXTS['trust']} (crowd02)" in page

    # Given staff accept one and send the other back with a reason
    client.post(f"/annotate/references/{small_set.name}/review/{member.pk}/", {"assignment": a.pk, "decision": "accept"})
    client.post(
        f"/annotate/references/{small_set.name}/review/{member.pk}/",
        {"assignment": b.pk, "decision": "send_back", "reason": "Trust is about the counselor, not the doctor."},
    )
    assert ReferenceAssignment.objects.get(pk=a.pk).status == AssignmentStatus.ACCEPTED
    assert ReferenceAssignment.objects.get(pk=b.pk).status == AssignmentStatus.SENT_BACK

    # Then the worker sees it with the reason, on the queue and on the form, which still holds the texts
    client.force_login(workers[1])
    queue = client.get("/annotate/").content.decode()
    assert "Sent back to you" in queue and "Trust is about the counselor, not the doctor." in queue
    form = client.get(f"/annotate/work/{b.pk}/").content.decode()
    assert "Sent back by the reviewer" in form and f"{GOOD_TEXTS['trust']} (crowd02)" in form

    # And can resubmit, after which staff accept
    revised = dict(GOOD_TEXTS, trust="He is starting to trust the counselor, who did not lecture him.")
    submit(workers[1], b, texts=revised)
    assert ReferenceAssignment.objects.get(pk=b.pk).status == AssignmentStatus.SUBMITTED
    services.reference_accept(reviewer=staff, assignment_id=b.pk)

    rows = list(selectors.references_export_rows(reference_set=small_set))
    assert len(rows) == 12
    assert {"context_id": member.context.context_id, "worker": "crowd02", "attribute": "trust", "text": revised["trust"]} in rows
    assert [r["attribute"] for r in rows[:6]] == ["belief", "desire", "intention", "emotion", "knowledge", "trust"]


def test_send_back_needs_a_reason_and_only_submitted_work_is_reviewed(staff, small_set, workers, submitted):
    with pytest.raises(services.ReferenceWorkflowError, match="reason"):
        services.reference_send_back(reviewer=staff, assignment_id=submitted[0].pk, reason="  ")
    active = services.reference_assignment_claim_next(worker=workers[2], reference_set_id=small_set.pk)
    with pytest.raises(services.ReferenceWorkflowError, match="only submitted"):
        services.reference_accept(reviewer=staff, assignment_id=active.pk)


def test_export_only_has_accepted_references(staff, submitted):
    assert list(selectors.references_export_rows()) == []
    services.reference_accept(reviewer=staff, assignment_id=submitted[0].pk)
    rows = list(selectors.references_export_rows())
    assert len(rows) == 6 and {r["worker"] for r in rows} == {"crowd01"}
    assert set(rows[0]) == {"context_id", "worker", "attribute", "text"}


def test_export_api_for_staff_and_release_readers_only(client, staff, workers, small_set, submitted):
    services.reference_accept(reviewer=staff, assignment_id=submitted[0].pk)
    reader = UserFactory(username="reader01", role="release_reader")

    client.force_login(workers[0])
    assert client.get("/api/v1/references/").status_code == 403
    client.force_login(reader)
    response = client.get("/api/v1/references/", {"reference_set": small_set.name})
    assert response.status_code == 200 and len(response.json()) == 6

    lines = client.get("/api/v1/references/?format=jsonl").content.decode().splitlines()
    assert len(lines) == 6
    assert json.loads(lines[0]) == {
        "context_id": submitted[0].member.context.context_id, "worker": "crowd01", "attribute": "belief",
        "text": f"{GOOD_TEXTS['belief']} (crowd01)",
    }
    assert client.get("/api/v1/references/", {"reference_set": "nope"}).status_code == 400


def test_staff_pages_render(client, staff, small_set, submitted, django_assert_max_num_queries):
    client.force_login(staff)
    with django_assert_max_num_queries(6):
        assert client.get("/annotate/references/").status_code == 200
    with django_assert_max_num_queries(8):
        page = client.get(f"/annotate/references/{small_set.name}/").content.decode()
    assert "Review the next submitted context" in page
    with django_assert_max_num_queries(10):
        assert client.get(f"/annotate/references/{small_set.name}/review/{submitted[0].member_id}/").status_code == 200
    assert client.get("/annotate/").status_code == 302  # staff land on the sets page


def test_counts_by_worker_for_the_dashboard(staff, workers, submitted):
    a, b = submitted
    services.reference_send_back(reviewer=staff, assignment_id=b.pk, reason="Trust: say why.")
    assert selectors.reference_counts_by_worker() == {
        workers[0].pk: {"written": 1, "sent_back": 0},
        workers[1].pk: {"written": 1, "sent_back": 1},
    }
    submit(workers[1], b)  # resubmitted: still sent back once
    services.reference_send_back(reviewer=staff, assignment_id=b.pk, reason="Again.")
    assert selectors.reference_counts_by_worker()[workers[1].pk] == {"written": 1, "sent_back": 2}


def test_admin_lists_reference_models(admin_client, submitted):
    for model in ("referenceset", "referenceassignment", "similarityrun"):
        assert admin_client.get(f"/admin/references/{model}/").status_code == 200
