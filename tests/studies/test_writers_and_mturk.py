"""Crowd writers through a study, MTurk's ExternalQuestion (preview, worker ids, the form back)."""
import re
import uuid

import pytest
from django.test import Client

from references.models import AssignmentStatus, ReferenceAssignment
from studies import selectors, services
from studies.models import Entry, Participant, ParticipantStatus
from tests.references.conftest import GOOD_TEXTS, make_contexts, make_set

from .conftest import PROLIFIC_IDS, audit_one, prolific_link

pytestmark = pytest.mark.django_db


@pytest.fixture
def writing_study(db):
    reference_set = make_set(contexts=make_contexts(4), per_context=3, name="st-refs")
    return services.study_create(name="writers", platform="prolific", reference_set=reference_set.name, quota=2,
                                 completion_code="WRITE001", pay_per_hour="12.00", currency="GBP", item_seconds_cap=1800)


def write_one(client, study, texts=GOOD_TEXTS):
    html = client.get(f"/s/{study.token}/work/").content.decode()
    assignment = re.search(r'name="assignment" value="([0-9a-f-]{36})"', html).group(1)
    return client.post(f"/s/{study.token}/work/", {"assignment": assignment, "idempotency_key": uuid.uuid4(), **texts})


def test_crowd_writers_write_to_their_quota_see_the_code_and_are_in_the_export(writing_study):
    for pid in PROLIFIC_IDS[:2]:
        client = Client()
        client.get(prolific_link(writing_study, pid))
        too_short = write_one(client, writing_study, texts={**GOOD_TEXTS, "belief": "short"})
        assert too_short.status_code == 422 and "too short" in too_short.content.decode()
        for _ in range(writing_study.quota):
            assert write_one(client, writing_study).status_code == 302
        done = client.get(f"/s/{writing_study.token}/work/", follow=True).content.decode()
        assert "WRITE001" in done
        assert client.get("/annotate/")["Location"] == f"/s/{writing_study.token}/work/"
    assert ReferenceAssignment.objects.filter(status=AssignmentStatus.SUBMITTED).count() == 4
    assert set(Participant.objects.values_list("status", flat=True)) == {ParticipantStatus.COMPLETED}
    # active time: per context, capped (item_seconds_cap = 1800 s); pay per hour of it
    for pid, seconds in ((PROLIFIC_IDS[0], (600, 4000)), (PROLIFIC_IDS[1], (300, 300))):
        mine = ReferenceAssignment.objects.filter(worker__study_participant__participant_id=pid).order_by("claimed_at")
        for assignment, s in zip(mine, seconds):
            ReferenceAssignment.objects.filter(pk=assignment.pk).update(seconds_spent=s)
    ledger = selectors.study_ledger(study=writing_study)
    assert [(r.items, r.active_seconds, str(r.owed)) for r in ledger] == [(2, 2400.0, "8.00"), (2, 600.0, "2.00")]
    rate = selectors.study_rate(study=writing_study)
    assert str(rate["effective_hourly"]) == "12.00"
    lines = selectors.payments_export(study=writing_study, fmt="prolific-bonus").splitlines()
    assert lines == [f"{PROLIFIC_IDS[0]},8.00", f"{PROLIFIC_IDS[1]},2.00"]


@pytest.fixture
def mturk_study(batch):
    return services.study_create(name="turk", platform="mturk", batches=[batch.name], quota=1,
                                 completion_code="TURK0001", pay_per_item="0.25", currency="USD")


def test_mturk_preview_is_a_read_only_sample_without_an_account(mturk_study, client):
    page = client.get(f"/s/{mturk_study.token}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    html = page.content.decode()
    assert page.status_code == 200 and "Preview" in html and 'method="post"' not in html and "data-preview" in html
    assert not Participant.objects.exists() and Entry.objects.get().kind == "preview"


def test_mturk_worker_ids_are_checked(mturk_study, client):
    for bad in ("a1234567890123", "A12345", "A1234567890123456789012", "A12345678901!"):
        assert client.get(f"/s/{mturk_study.token}/?workerId={bad}&assignmentId=AS1&hitId=H1").status_code == 400
    evil = client.get(f"/s/{mturk_study.token}/?workerId=A1B2C3D4E5F6G7&assignmentId=AS1&hitId=H1"
                      "&turkSubmitTo=https://evil.example")
    assert evil.status_code == 400


def test_mturk_completion_posts_back_to_external_submit_and_export_has_approve_and_bonus(mturk_study):
    client = Client()
    arrived = client.get(f"/s/{mturk_study.token}/?workerId=A1B2C3D4E5F6G7&assignmentId=3ASSIGN9&hitId=HIT42"
                         "&turkSubmitTo=https://workersandbox.mturk.com")
    assert arrived.status_code == 302
    audit_one(client, mturk_study)
    done = client.get(f"/s/{mturk_study.token}/work/", follow=True)
    html = done.content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html
    assert 'name="assignmentId" value="3ASSIGN9"' in html and "TURK0001" in html
    assert "form-action 'self' https://workersandbox.mturk.com" in done["Content-Security-Policy"]
    rows = selectors.payments_export(study=mturk_study, fmt="mturk").splitlines()
    assert rows[0] == "worker_id,assignment_id,hit_id,approve,bonus_amount,reason,unique_request_token"
    assert rows[1].startswith("A1B2C3D4E5F6G7,3ASSIGN9,HIT42,1,0.25,")


def test_inside_mturks_frame_the_task_opens_in_a_tab_of_its_own(mturk_study, client):
    link = f"/s/{mturk_study.token}/?workerId=A1B2C3D4E5F6G7&assignmentId=3ASSIGN9&hitId=HIT42&turkSubmitTo=https://www.mturk.com"
    framed = client.get(link, headers={"Sec-Fetch-Dest": "iframe"})
    assert framed.status_code == 200 and 'target="_blank"' in framed.content.decode()
    assert "frame-ancestors https://www.mturk.com" in framed["Content-Security-Policy"]
    assert "X-Frame-Options" not in framed
    assert not Participant.objects.exists()
    assert client.get(link).status_code == 302  # the tab: first-party, the account is made
    preview = client.get(f"/s/{mturk_study.token}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
    assert "frame-ancestors https://www.mturk.com" in preview["Content-Security-Policy"]
