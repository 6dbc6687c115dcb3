"""The worker-filtering protocol: a qualification of gold items before real work, attention
checks during it, and a rule that stops (and excludes) a participant below a gold accuracy."""
import pytest
from django.test import Client

from annotation.models import Item
from studies import services
from studies.models import Participant, ParticipantStatus
from tests.verification.factories import open_batch
from verification.models import Judgment
from verification.services import items_gold_set

from .conftest import PROLIFIC_IDS, audit_one, prolific_link

pytestmark = pytest.mark.django_db


@pytest.fixture
def qualified_study(batch):
    qual = open_batch(name="st-qual", overlap=1, n_items=3, pool="st-unused", gold_rate=1.0)
    items_gold_set(item_ids=list(qual.items.values_list("item_id", flat=True)), is_gold=True)
    return services.study_create(name="screened", platform="prolific", batches=[batch.name], quota=2,
                                 completion_code="DONE0001", screen_out_code="SCREEN01", pay_per_item="0.10",
                                 qualification_batch="st-qual", qualification_pass_mark=0.66)


def test_a_failed_qualification_ends_at_the_screen_out_code_and_never_reaches_real_items(qualified_study):
    client = Client()
    client.get(prolific_link(qualified_study, PROLIFIC_IDS[0]))
    assert "Qualification" in client.get(f"/s/{qualified_study.token}/work/").content.decode()
    for _ in range(3):
        audit_one(client, qualified_study, right=False)
    done = client.get(f"/s/{qualified_study.token}/work/", follow=True).content.decode()
    assert "SCREEN01" in done and "DONE0001" not in done
    assert "https://app.prolific.com/submissions/complete?cc=SCREEN01" in done
    participant = Participant.objects.get()
    assert participant.status == ParticipantStatus.SCREENED_OUT and participant.qualification_score == 0
    assert not Judgment.objects.filter(verifier=participant.user, batch__name="st-b01").exists()
    assert client.get("/api/v1/next-item/?batch=st-b01").status_code == 204


def test_a_passed_qualification_leads_to_real_items_and_the_completion_code(qualified_study):
    client = Client()
    client.get(prolific_link(qualified_study, PROLIFIC_IDS[0]))
    for _ in range(3):
        audit_one(client, qualified_study, right=True)
    assert "0 of 2 done" in client.get(f"/s/{qualified_study.token}/work/").content.decode()
    assert Participant.objects.get().status == ParticipantStatus.WORKING
    for _ in range(2):
        audit_one(client, qualified_study)
    done = client.get(f"/s/{qualified_study.token}/work/", follow=True).content.decode()
    assert "DONE0001" in done
    participant = Participant.objects.get()
    assert participant.status == ParticipantStatus.COMPLETED and participant.qualification_score == 1.0
    assert Judgment.objects.filter(verifier=participant.user, batch__name="st-b01").count() == 2


@pytest.fixture
def gold_study(db):
    batch = open_batch(name="st-gold", overlap=3, n_items=10, pool="st-unused", gold_rate=0.5)
    gold = list(Item.objects.filter(batch=batch).order_by("pk").values_list("item_id", flat=True)[:5])
    items_gold_set(item_ids=gold, is_gold=True)
    return services.study_create(name="attention", platform="prolific", batches=[batch.name], quota=10,
                                 completion_code="DONE0002", screen_out_code="STOP0002", pay_per_item="0.10",
                                 gold_threshold=0.5, gold_min_answers=2)


def test_the_gold_rule_stops_a_careless_participant_excludes_their_judgments_and_staff_can_override(gold_study, staff):
    client = Client()
    client.get(prolific_link(gold_study, PROLIFIC_IDS[0]))
    for _ in range(10):
        if client.get(f"/s/{gold_study.token}/work/").status_code != 200:
            break
        audit_one(client, gold_study, right=False)
    participant = Participant.objects.select_related("user").get()
    assert participant.status == ParticipantStatus.STOPPED
    assert participant.user.excluded_from_aggregation
    gold_answered = Judgment.objects.filter(verifier=participant.user, item__is_gold=True).count()
    assert gold_answered == 2  # stopped as soon as the rule could apply
    done = client.get(f"/s/{gold_study.token}/done/").content.decode()
    assert "STOP0002" in done

    staff_client = Client()
    staff_client.force_login(staff)
    refused = staff_client.post(f"/api/v1/studies/attention/participants/{PROLIFIC_IDS[0]}/override/", {"reason": ""})
    assert refused.status_code == 400
    ok = staff_client.post(f"/api/v1/studies/attention/participants/{PROLIFIC_IDS[0]}/override/",
                           {"reason": "checked by hand: the gold items were ambiguous"})
    assert ok.status_code == 200 and ok.json()["status"] == "working"
    participant.refresh_from_db()
    participant.user.refresh_from_db()
    assert participant.stop_overridden and not participant.user.excluded_from_aggregation
    assert "ambiguous" in participant.status_reason
    assert client.get(f"/s/{gold_study.token}/work/").status_code == 200  # works on
