"""The staff's doors: manage.py study_create / study_payments, the API, the study pages."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from studies.models import LedgerLine, Participant, Study
from tests.factories import api_for

from .conftest import PROLIFIC_IDS, audit_one, prolific_link

pytestmark = pytest.mark.django_db


def test_study_create_command_prints_the_study_and_its_prolific_url(batch):
    out = StringIO()
    call_command("study_create", "cmd-study", "--platform", "prolific", "--batch", batch.name, "--quota", "5",
                 "--completion-code", "CODE1234", "--screen-out-code", "SO123456", "--pay-per-item", "0.10",
                 "--currency", "GBP", "--json", stdout=out)
    report = json.loads(out.getvalue().splitlines()[-1])
    study = Study.objects.get(name="cmd-study")
    assert report["study"] == "cmd-study"
    assert report["url"].endswith(f"/s/{study.token}/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert len(study.token) >= 32
    assert study.pool in batch.pools.all()


@pytest.mark.parametrize("args, message", [
    (["--batch", "nope", "--pay-per-item", "0.1"], "no batch named 'nope'"),
    (["--batch", "st-b01", "--pay-per-item", "-1"], "pay_per_item"),
    (["--batch", "st-b01", "--pay-per-item", "0.1", "--currency", "pounds"], "currency"),
])
def test_study_create_refuses_bad_input(batch, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("study_create", "bad", "--platform", "prolific", "--quota", "2", "--completion-code", "C0DE", *args)
    assert not Study.objects.exists()


def _two_participants_paid(study):
    for pid in PROLIFIC_IDS[:2]:
        client = Client()
        client.get(prolific_link(study, pid))
        for _ in range(2):
            audit_one(client, study)
    LedgerLine.objects.create(participant=Participant.objects.get(participant_id=PROLIFIC_IDS[1]), amount="0.50",
                              reason="careful comments")


def test_study_payments_command_formats(study):
    _two_participants_paid(study)
    out = StringIO()
    call_command("study_payments", "pilot", "--format", "prolific-bonus", stdout=out)
    assert out.getvalue().splitlines() == [f"{PROLIFIC_IDS[0]},0.20", f"{PROLIFIC_IDS[1]},0.70"]
    out = StringIO()
    call_command("study_payments", "pilot", "--format", "csv", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("participant_id,status,items,active_seconds,base,bonus,owed,currency")
    assert lines[2].startswith(f"{PROLIFIC_IDS[1]},working,2,") and ",0.20,0.50,0.70,GBP," in lines[2]
    with pytest.raises(CommandError):
        call_command("study_payments", "nope", "--format", "csv")


def test_the_api_creates_studies_and_exports_payments_for_staff_only(batch, study, staff, verifier):
    api = api_for(staff)
    created = api.post("/api/v1/studies/", {
        "name": "api-study", "platform": "link", "batches": [batch.name], "quota": 4, "completion_code": "LINK0001",
        "pay_per_hour": "10.50", "currency": "EUR"}, format="json")
    assert created.status_code == 201, created.json()
    assert "/s/" in created.json()["url"] and created.json()["url"].endswith("?pid=PARTICIPANT_ID")
    assert api.post("/api/v1/studies/", {"name": "x", "platform": "prolific", "quota": 1, "completion_code": "C",
                                         "pay_per_item": "1"}, format="json").status_code == 400  # no batch, no set
    _two_participants_paid(study)
    bonus = api.get("/api/v1/studies/pilot/payments/?format=prolific-bonus")
    assert bonus.status_code == 200 and bonus.content.decode().splitlines()[1] == f"{PROLIFIC_IDS[1]},0.70"
    assert api.get("/api/v1/studies/pilot/payments/?format=xml").status_code == 400
    detail = api.get("/api/v1/studies/pilot/").json()
    assert detail["participants"] == {"working": 2} and len(detail["ledger"]) == 2
    added = api.post(f"/api/v1/studies/pilot/participants/{PROLIFIC_IDS[0]}/bonuses/", {"amount": "0.25", "reason": "fast"},
                     format="json")
    assert added.status_code == 201
    assert api_for(verifier).get("/api/v1/studies/pilot/").status_code == 403
    assert api_for(verifier).get("/api/v1/studies/pilot/payments/?format=csv").status_code == 403


def test_the_study_page_shows_the_ledger_and_the_effective_rate_against_the_minimum(study, staff, client,
                                                                                     django_assert_max_num_queries):
    _two_participants_paid(study)
    from verification.models import Judgment
    Judgment.objects.update(seconds_spent=120)  # 2 items × 120 s at 0.10 an item: 1.50/h, below the 9.00 minimum
    client.force_login(staff)
    with django_assert_max_num_queries(20):
        page = client.get("/studies/pilot/")
    html = page.content.decode()
    assert page.status_code == 200 and "data-below-minimum" in html
    assert PROLIFIC_IDS[0] in html and "/studies/pilot/payments/prolific-bonus/" in html
    export = client.get("/studies/pilot/payments/prolific-bonus/")
    assert export.content.decode().splitlines()[0] == f"{PROLIFIC_IDS[0]},0.20"
    listing = client.get("/studies/")
    assert listing.status_code == 200 and "pilot" in listing.content.decode()
    assert "/studies/" in client.get("/dashboard/").content.decode()


def test_staff_create_a_study_from_the_page(batch, staff, client):
    client.force_login(staff)
    response = client.post("/studies/", {"name": "page-study", "platform": "prolific", "batches": batch.name,
                                         "quota": 3, "session_minutes": 60, "completion_code": "PAGE0001",
                                         "pay_per_item": "0.12", "currency": "GBP", "qualification_pass_mark": 0.8})
    assert response.status_code == 302 and response["Location"] == "/studies/page-study/"
    assert str(Study.objects.get(name="page-study").pay_rate) == "0.1200"
