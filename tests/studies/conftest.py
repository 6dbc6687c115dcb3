"""Study fixtures: batches opened to nobody yet (a study opens them to its own pool), and a
participant's browser as a Django test client."""
import re
import uuid

import pytest
from django.test import Client

from annotation.models import OPTION_LETTERS
from studies import services
from tests.verification.factories import open_batch
from verification.models import Claim

PROLIFIC_IDS = ["5f1a2b3c4d5e6f7a8b9c0d1e", "60aa11bb22cc33dd44ee55ff", "6123456789abcdef01234567"]


def prolific_link(study, pid, session="sess1"):
    return f"/s/{study.token}/?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID={session}"


def claim_in(html: str) -> str | None:
    found = re.search(r'name="claim" value="([0-9a-f-]{36})"', html)
    return found.group(1) if found else None


def shown_letter(claim_id: str, original: str) -> str:
    """The letter a participant sees for an item's original option (its display order)."""
    claim = Claim.objects.get(pk=claim_id)
    return OPTION_LETTERS[claim.display_order.index(original)]


def audit_one(client: Client, study, *, right: bool = True):
    """Answer the item in hand on the work page; returns the response of the POST (a redirect)."""
    page = client.get(f"/s/{study.token}/work/")
    claim = claim_in(page.content.decode())
    assert claim, page.content.decode()[:500]
    item = Claim.objects.select_related("item").get(pk=claim).item
    choice = shown_letter(claim, item.answer) if right else shown_letter(claim, "A" if item.answer != "A" else "B")
    return client.post(f"/s/{study.token}/work/", {"claim": claim, "choice": choice, "idempotency_key": str(uuid.uuid4())})


@pytest.fixture
def batch(db):
    return open_batch(name="st-b01", overlap=3, n_items=8, pool="st-unused")


@pytest.fixture
def study(batch):
    return services.study_create(name="pilot", platform="prolific", batches=[batch.name], quota=3,
                                 completion_code="C1ABCDEF", screen_out_code="SCREEN01", pay_per_item="0.10",
                                 currency="GBP", minimum_hourly="9.00")
