import re

import pytest
from django.urls import reverse

from verification.models import Claim, Judgment, QueueSlot
from verification.services import batch_queue_sync

from .factories import open_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(verifier):
    batch = open_batch(n_items=2, n_prospective=1, verifiers=[verifier])
    # the queue's order is drawn from a secret: these walk-throughs take the retrospective items first
    batch_queue_sync(batch=batch)
    QueueSlot.objects.filter(batch=batch, item__task="prospective").update(position=2**62)
    return batch


def hidden(html, name):
    return re.search(rf'name="{name}" value="([^"]+)"', html).group(1)


def test_batch_list_and_audit_page_show_the_item_with_role_names_and_keys(client, verifier, batch):
    client.force_login(verifier)
    listing = client.get(reverse("verification:batches")).content.decode()
    assert "mi-b01" in listing
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    assert "Counselor:" in page and "Client:" in page  # speakers as their domain roles
    assert 'role="progressbar"' in page and "0 / 3 done" in page
    for key in ("<kbd>1</kbd>", "<kbd>N</kbd>", "<kbd>M</kbd>", "<kbd>Enter</kbd>", "<kbd>S</kbd>"):
        assert key in page
    assert "js/audit.js" in page


def test_prospective_items_withhold_the_dialogue(client, verifier, batch):
    client.force_login(verifier)
    prospective = batch.items.get(task="prospective")
    # answer the two retrospective items first (the fixture put them first in the queue)
    for _ in range(3):
        page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
        claim = Claim.objects.get(verifier=verifier, status="active")
        if claim.item_id == prospective.pk:
            break
        client.post(reverse("verification:answer", args=[batch.name]),
                    {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "A"})
    assert "Mental-state profile" in page
    assert "So what brings you here today?" not in page and "Counselor:" not in page


def test_htmx_submit_returns_the_next_item_fragment_and_counts_progress(client, verifier, batch):
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    claim = Claim.objects.get(verifier=verifier, status="active")
    data = {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit",
            "choice": "B", "implausible": ["D"], "comment": "close call"}
    response = client.post(reverse("verification:answer", args=[batch.name]), data, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="audit-form"' in html and "1 / 3 done" in html
    judgment = Judgment.objects.get(verifier=verifier)
    assert judgment.displayed_label == "B" and judgment.label == claim.display_order[1]
    assert judgment.comment == "close call" and judgment.seconds_spent is not None
    # a double click / resent form with the same key leaves one judgment
    client.post(reverse("verification:answer", args=[batch.name]), data, HTTP_HX_REQUEST="true")
    client.post(reverse("verification:answer", args=[batch.name]), data)
    assert Judgment.objects.filter(verifier=verifier).count() == 1


def test_without_js_a_plain_post_redirects_and_a_missing_choice_is_explained(client, verifier, batch):
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    claim = Claim.objects.get(verifier=verifier, status="active")
    bad = client.post(reverse("verification:answer", args=[batch.name]),
                      {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit"})
    assert bad.status_code == 400 and "Pick an option" in bad.content.decode()
    ok = client.post(reverse("verification:answer", args=[batch.name]),
                     {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "NONE"})
    assert ok.status_code == 302
    assert Judgment.objects.get(verifier=verifier).label == "NONE"


def test_skip_then_change_a_recent_answer(client, verifier, batch):
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    first = Claim.objects.get(verifier=verifier, status="active")
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": first.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "skip", "skip_reason": "overlap"})
    first.refresh_from_db()
    assert first.status == "skipped"
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    second = Claim.objects.get(verifier=verifier, status="active")
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": second.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "A"})
    judgment = Judgment.objects.get(verifier=verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    edit_url = reverse("verification:judgment-edit", args=[judgment.pk])
    assert edit_url in page  # the recent answers list
    form = client.get(edit_url, HTTP_HX_REQUEST="true").content.decode()
    assert 'value="A" checked' in form
    client.post(edit_url, {"choice": "MULTIPLE", "comment": "two fit"}, HTTP_HX_REQUEST="true")
    judgment.refresh_from_db()
    assert judgment.label == "MULTIPLE" and judgment.comment == "two fit"


def test_staff_and_strangers_are_kept_out(client, staff, verifier):
    open_batch(verifiers=[])
    client.force_login(staff)
    assert client.get(reverse("verification:batches")).status_code == 403
    client.force_login(verifier)
    assert client.get(reverse("verification:audit", args=["mi-b01"])).status_code == 404


def test_pages_make_a_fixed_number_of_queries(client, verifier, django_assert_max_num_queries):
    from verification.services import item_claim_next, judgment_submit
    import uuid

    batches = [open_batch(name=f"b{n}", n_items=12, verifiers=[verifier]) for n in range(3)]
    for _ in range(10):  # ten recent answers on the audit page
        claim = item_claim_next(verifier=verifier, batch=batches[0])
        judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    client.force_login(verifier)
    # session, user, batches, then progress: done, served, staffing (2), open slots (1 per queue mode)
    with django_assert_max_num_queries(10):
        assert client.get(reverse("verification:batches")).status_code == 200
    # session, user, batch; the claim (pool, verifier lock, live claim, candidates, context lock,
    # group lock, counter, insert); progress (6); recent answers; skipped; the guideline + its examples
    with django_assert_max_num_queries(22):
        assert client.get(reverse("verification:audit", args=["b0"])).status_code == 200


def test_htmx_gets_problems_explained_in_place(client, verifier, batch):
    client.force_login(verifier)
    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()
    claim = Claim.objects.get(verifier=verifier, status="active")
    response = client.post(reverse("verification:answer", args=[batch.name]),
                           {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Pick an option" in response.content.decode()  # swapped by htmx
    assert hidden(response.content.decode(), "idempotency_key") == hidden(page, "idempotency_key")
    from verification.services import batch_pause

    batch_pause(name=batch.name)
    client.post(reverse("verification:answer", args=[batch.name]),
                {"claim": claim.pk, "idempotency_key": hidden(page, "idempotency_key"), "action": "submit", "choice": "A"},
                HTTP_HX_REQUEST="true")
    paused = client.get(reverse("verification:audit", args=[batch.name]), HTTP_HX_REQUEST="true").content.decode()
    assert "is paused" in paused and Judgment.objects.filter(verifier=verifier).count() == 1


def test_a_continuation_reads_as_dialogue_one_turn_a_line_with_its_speaker(client, verifier):
    # Given a prospective item whose options are continuations as the authors write them
    batch = open_batch(name="mi-cont", n_items=0, n_prospective=1, verifiers=[verifier])
    item = batch.items.get()
    item.options = [f"counselor: How are you, {n}?\nclient: Fine, thanks.\n counselor: Good to hear." for n in "abc"] + [
        "Well, maybe I could try.\nclient: I think so."]  # the generator sometimes starts mid-turn
    item.save(update_fields=["options"])
    client.force_login(verifier)

    page = client.get(reverse("verification:audit", args=[batch.name])).content.decode()

    assert '<span class="turn"><strong class="speaker">Counselor:</strong> How are you, a?</span>' in page
    assert '<span class="turn"><strong class="speaker">Client:</strong> Fine, thanks.</span>' in page
    assert '<span class="turn"><strong class="speaker">Counselor:</strong> Good to hear.</span>' in page
    assert '<span class="turn">Well, maybe I could try.</span>' in page  # no speaker given, none invented
    assert "How are you, a?\nclient" not in page  # not one run-together paragraph
    # the API gives the same turns
    from verification.selectors import item_view_for

    view = item_view_for(claim=Claim.objects.get(verifier=verifier, status="active"))
    continuations = [o for o in view["options"] if o["letter"] != "NOTA"]  # every prospective item offers NOTA
    assert len(continuations) == 4 and all(len(o["turns"]) in (2, 3) for o in continuations)
    assert {t["speaker"] for o in continuations for t in o["turns"]} == {"counselor", "client", ""}


def test_a_contexts_retrospective_items_show_the_dialogue_once_in_a_row(client, verifier):
    from .factories import context_with_items

    batch = open_batch(n_items=0, overlap=1, verifiers=[verifier])
    retrospective, _ = context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=())
    client.force_login(verifier)
    audit_url, answer_url = reverse("verification:audit", args=[batch.name]), reverse("verification:answer", args=[batch.name])
    # the first question: the dialogue in full, and how many questions it has
    page = client.get(audit_url).content.decode()
    assert "question 1 of 6 about this dialogue" in page and "Same dialogue" not in page
    assert page.count('class="dialogue"') == 1 and "data-dialogue-again" not in page
    client.post(answer_url, {"claim": hidden(page, "claim"), "idempotency_key": hidden(page, "idempotency_key"),
                             "action": "submit", "choice": "A"})
    # the second: the same dialogue, said so, folded (one click or D opens it), not a fresh wall of text
    for position in range(2, 7):
        page = client.get(audit_url).content.decode()
        assert f"Same dialogue as the previous question: question {position} of 6 about this dialogue" in page
        folded = re.search(r'<details class="dialogue-again" data-dialogue-again>(.*?)</details>', page, re.S)
        assert folded and 'class="dialogue"' in folded.group(1) and page.count('class="dialogue"') == 1
        assert "My doctor said I should cut down on drinking." in folded.group(1)
        assert "<kbd>D</kbd> show the dialogue again" in page
        client.post(answer_url, {"claim": hidden(page, "claim"), "idempotency_key": hidden(page, "idempotency_key"),
                                 "action": "submit", "choice": "A"})
    assert Judgment.objects.filter(verifier=verifier, item__in=retrospective).count() == 6
    # nothing about the items themselves: the row note counts claims, the reference is the claim's UUID
    for item in retrospective:
        assert item.item_id not in page


def test_a_skipped_question_of_a_row_does_not_fold_the_next_one(client, verifier):
    from .factories import context_with_items

    batch = open_batch(n_items=0, overlap=1, verifiers=[verifier])
    context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=())
    client.force_login(verifier)
    audit_url, answer_url = reverse("verification:audit", args=[batch.name]), reverse("verification:answer", args=[batch.name])
    page = client.get(audit_url).content.decode()
    client.post(answer_url, {"claim": hidden(page, "claim"), "idempotency_key": hidden(page, "idempotency_key"),
                             "action": "skip", "skip_reason": "unclear"})
    # no answer about this dialogue yet: the second question shows it in full, with its place in the row
    page = client.get(audit_url).content.decode()
    assert "question 2 of 6 about this dialogue" in page and "Same dialogue" not in page
    assert "data-dialogue-again" not in page and page.count('class="dialogue"') == 1
