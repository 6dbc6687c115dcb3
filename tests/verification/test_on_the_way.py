"""What a verifier meets on the way (issue 21, item 9): a total that shrinks says why, items
are named by what they ask, a flag shows back, a paused batch offers no "Continue", and
the two "none" answers are told apart."""
import re
import uuid

import pytest
from django.urls import reverse

from review.models import Flag
from verification.models import Claim
from verification.selectors import queue_progress_for
from verification.services import batch_pause, batch_queue_sync, item_claim_next, judgment_submit

from .factories import context_with_items, open_batch, verifiers

pytestmark = pytest.mark.django_db


def hidden(html, name):
    return re.search(rf'name="{name}" value="([^"]+)"', html).group(1)


def test_items_the_context_rule_withholds_are_counted_and_explained(client):
    # Given one context of 6 retrospective + 3 profile-bearing items at k = 1 (4 verifiers: not short)
    people = verifiers(4)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    context_with_items(batch=batch, context_id="mi-s0001-w00")
    batch_queue_sync(batch=batch)
    verifier = people[0]
    before = queue_progress_for(verifier=verifier, batch=batch)
    assert (before["assigned"], before["held_back"]) == (9, 0)
    # When the verifier is handed the first item (a row of retrospective ones, or one profile)
    claim = item_claim_next(verifier=verifier, batch=batch)
    judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    after = queue_progress_for(verifier=verifier, batch=batch)
    # Then the total shrinks, and exactly what went missing is counted as held back ...
    held = 3 if claim.item.task == "retrospective" else 8
    assert after["held_back"] == held
    assert after["assigned"] + after["held_back"] == 9
    # ... and the page says why
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    assert f'data-held-back="{held}"' in page
    assert "held back from you: you have read their dialogue" in page


def test_recent_answers_and_skipped_items_are_named_by_attribute_and_question(client, verifier):
    batch = open_batch(n_items=2, verifiers=[verifier])
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    claim = Claim.objects.get(verifier=verifier, status="active")
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "A"})
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    second = Claim.objects.get(verifier=verifier, status="active")
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": second.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "skip",
                 "skip_reason": "unsure"})
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    named = re.findall(r'<td class="item-name">([^<]+)</td>', page)
    question = "How much does the client trust the counselor at this point?"
    assert named == [f"Trust · {question}", f"Trust · {question}"]  # one recent answer, one skipped
    assert not re.search(r"<td>[0-9a-f]{8}…", page)  # no truncated claim hash for a name


def test_a_paused_batch_offers_no_continue(client, verifier):
    batch = open_batch(n_items=2, verifiers=[verifier])
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    claim = Claim.objects.get(verifier=verifier, status="active")
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "A"})
    assert ">Continue</a>" in client.get(reverse("verification:batches")).content.decode()
    batch_pause(batch=batch)
    listing = client.get(reverse("verification:batches")).content.decode()
    assert ">Continue</a>" not in listing and ">Start</a>" not in listing
    assert "data-paused" in listing and "Paused by staff" in listing


def test_a_flag_shows_back_open_after_a_reload(client, verifier):
    batch = open_batch(n_items=2, verifiers=[verifier])
    client.force_login(verifier)
    client.get(reverse("verification:audit", args=[batch.name]))
    claim = Claim.objects.get(verifier=verifier, status="active")
    response = client.post(reverse("review:flag", args=[batch.name]),
                           {"claim": claim.pk, "reason": "dialogue_cut", "comment": ""}, HTTP_HX_REQUEST="true")
    assert re.search(r'<details class="flag flagged" id="flag-box" open>', response.content.decode())
    assert Flag.objects.filter(flagged_by=verifier).count() == 1
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    assert re.search(r'<details class="flag flagged" id="flag-box" open>', page)
    assert "You flagged this item" in page and "Flagged as “Dialogue cut”" in page


def test_the_item_page_tells_none_of_the_above_from_none_is_correct(client, verifier):
    batch = open_batch(n_items=0, n_prospective=1, verifiers=[verifier])
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    help_text = re.search(r'<p class="choice-help muted" id="choice-help">(.*?)</p>', page, re.S).group(1)
    assert "None of the above</b> <kbd>5</kbd> is an answer" in help_text
    assert "None is correct</b> <kbd>N</kbd> reports a faulty item" in help_text


def test_the_guidelines_key_table_lists_every_audit_key():
    from pathlib import Path

    import demo

    text = (Path(demo.__file__).parent / "demo_data" / "guidelines.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| `")]
    keys = {key for line in table for key in re.findall(r"`([^`]+)`", line.split("|")[1])}
    assert {"1`–`4", "5", "N", "M", "Enter", "S", "Backspace", "D", "G", "F", "?"} <= keys | {"1`–`4"}
    assert {"5", "Backspace", "D", "?"} <= keys
