"""The participant's path through a study link: arrive, audit to the quota, the code, the pay."""
import pytest
from django.test import Client

from accounts.models import User
from studies import selectors
from studies.models import Entry, Participant, ParticipantStatus
from verification.models import Judgment

from .conftest import PROLIFIC_IDS, audit_one, claim_in, prolific_link

pytestmark = pytest.mark.django_db


def test_three_prolific_participants_audit_to_quota_see_the_code_and_are_in_the_bonus_export(study):
    for pid in PROLIFIC_IDS:
        client = Client()
        arrived = client.get(prolific_link(study, pid))
        assert arrived.status_code == 302 and arrived["Location"] == f"/s/{study.token}/work/"
        for _ in range(study.quota):
            assert audit_one(client, study).status_code == 302
        done = client.get(f"/s/{study.token}/work/", follow=True)
        html = done.content.decode()
        assert "C1ABCDEF" in html
        assert "https://app.prolific.com/submissions/complete?cc=C1ABCDEF" in html
    assert Judgment.objects.filter(batch__name="st-b01").count() == 9
    assert set(Participant.objects.values_list("status", flat=True)) == {ParticipantStatus.COMPLETED}
    lines = selectors.payments_export(study=study, fmt="prolific-bonus").splitlines()
    assert sorted(lines) == sorted(f"{pid},0.30" for pid in PROLIFIC_IDS)


def test_quota_stops_the_queue_and_entering_again_shows_the_code(study):
    client = Client()
    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    for _ in range(study.quota):
        audit_one(client, study)
    assert client.get(f"/s/{study.token}/work/")["Location"] == f"/s/{study.token}/done/"
    assert client.get("/api/v1/next-item/?batch=st-b01").status_code == 204
    again = Client().get(prolific_link(study, PROLIFIC_IDS[0]), follow=True)  # another browser
    assert "C1ABCDEF" in again.content.decode()
    # the rest of the context's row went back to the queue: nothing is held past the quota
    from verification.models import Claim, ClaimStatus
    user = Participant.objects.get().user
    assert not Claim.objects.filter(verifier=user, status=ClaimStatus.ACTIVE).exists()


def test_a_return_finds_the_same_account_and_its_remaining_work(study):
    first = Client()
    first.get(prolific_link(study, PROLIFIC_IDS[0]))
    audit_one(first, study)
    in_hand = claim_in(first.get(f"/s/{study.token}/work/").content.decode())
    other_browser = Client()
    other_browser.get(prolific_link(study, PROLIFIC_IDS[0].upper(), session="sess2"))
    assert claim_in(other_browser.get(f"/s/{study.token}/work/").content.decode()) == in_hand
    assert Participant.objects.count() == 1 and User.objects.filter(username__startswith="study~").count() == 1
    assert "1 of 3 done" in other_browser.get(f"/s/{study.token}/work/").content.decode()
    kinds = list(Entry.objects.order_by("at", "pk").values_list("kind", flat=True))
    assert kinds == ["arrival", "return"]
    entry = Entry.objects.first()
    assert len(entry.ip_hash) == 64 and "127.0.0.1" not in entry.ip_hash


@pytest.mark.parametrize("query", [
    "PROLIFIC_PID=not-hex&STUDY_ID=s&SESSION_ID=x",
    "PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1&STUDY_ID=s&SESSION_ID=x",   # 23 characters
    "PROLIFIC_PID={%PROLIFIC_PID%}&STUDY_ID=s&SESSION_ID=x",           # the placeholder, not filled in
])
def test_an_id_not_of_the_platforms_shape_is_a_400(study, client, query):
    assert client.get(f"/s/{study.token}/?{query}").status_code == 400
    assert not Participant.objects.exists()


def test_a_wrong_token_is_a_404(study, client):
    assert client.get(f"/s/{study.token[:-2]}xx/?PROLIFIC_PID={PROLIFIC_IDS[0]}").status_code == 404


def test_a_participant_reaches_nothing_but_their_studys_work(study, batch, staff, client):
    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    for path in ("/verify/", f"/verify/{batch.name}/", "/dashboard/", "/annotate/", "/accounts/profile/", "/studies/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == f"/s/{study.token}/work/", path
    assert client.get("/api/v1/progress/").status_code == 403
    assert client.get("/api/v1/releases/").status_code == 403
    assert client.get(f"/s/{study.token}/work/").status_code == 200


def test_the_api_next_item_follows_the_studys_rules(study, client):
    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    served = client.get("/api/v1/next-item/?batch=st-b01")
    assert served.status_code == 200 and "answer" not in served.json()
    assert served.json()["batch"] == "st-b01"


def test_participants_of_one_study_cannot_enter_another(study, batch, client):
    from studies import services
    from tests.verification.factories import open_batch

    other = services.study_create(name="other", platform="prolific", batches=[open_batch(name="st-b02", pool="x").name],
                                  quota=1, completion_code="OTHER001", pay_per_item="0.10")
    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    assert client.get(f"/s/{other.token}/work/")["Location"] == f"/s/{study.token}/work/"


def test_the_session_ends_with_the_studys_time_limit(study, client):
    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    assert client.session.get_expiry_age() == study.session_minutes * 60


def test_a_closed_study_takes_no_one_new_and_ends_the_work_of_those_inside(study, client):
    from studies.services import study_status_set

    client.get(prolific_link(study, PROLIFIC_IDS[0]))
    audit_one(client, study)
    study_status_set(study=study, status="closed")
    assert "C1ABCDEF" in client.get(f"/s/{study.token}/work/", follow=True).content.decode()
    assert Client().get(prolific_link(study, PROLIFIC_IDS[1])).status_code == 410
    assert Participant.objects.get().status == ParticipantStatus.COMPLETED


def test_a_link_without_an_id_asks_to_open_it_from_the_platform(study, client):
    assert client.get(f"/s/{study.token}/").status_code == 400


def test_a_staff_bonus_from_the_study_page_shows_in_the_export(study, staff):
    participant_client = Client()
    participant_client.get(prolific_link(study, PROLIFIC_IDS[0]))
    audit_one(participant_client, study)
    staff_client = Client()
    staff_client.force_login(staff)
    pk = Participant.objects.get().pk
    staff_client.post(f"/studies/pilot/participants/{pk}/", {"action": "bonus", "amount": "1.25", "reason": "good comments"})
    assert selectors.payments_export(study=study, fmt="prolific-bonus") == f"{PROLIFIC_IDS[0]},1.35\n"
