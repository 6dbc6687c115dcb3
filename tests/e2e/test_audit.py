"""A verifier audits a retrospective and a prospective item with the keyboard alone.

The screenshot of the form goes to docs/img/audit-form.png with `make screenshots`.
"""

from playwright.sync_api import expect

from accounts.models import Pool
from annotation.models import Batch
from tests.factories import ContextFactory, ItemFactory, ProspectiveItemFactory, UserFactory
from tests.verification.factories import ensure_domains
from verification.models import Judgment, QueueSlot
from verification.services import batch_queue_sync



def make_batch(verifier) -> Batch:
    ensure_domains()
    batch = Batch.objects.create(name="mi-demo", overlap=1)
    pool = Pool.objects.create(name="verifiers")
    pool.members.add(verifier)
    batch.pools.add(pool)
    context = ContextFactory(
        context_id="mi-s0012-w03", window_index=3,
        turns=[
            {"speaker": "initiator", "text": "So what brings you here today?"},
            {"speaker": "recipient", "text": "My doctor said I should cut down on drinking. I'm not sure I see the point."},
            {"speaker": "initiator", "text": "You're not convinced it matters much for you."},
            {"speaker": "recipient", "text": "Honestly, I only came because my wife keeps bringing it up."},
        ],
    )
    retrospective = ItemFactory(
        batch=batch, context=context, attribute="trust", answer="C",
        question="How much does the client trust the counselor at this point?",
        options=[
            "The client fully trusts the counselor and is eager to follow advice.",
            "The client distrusts the counselor and plans to leave the session.",
            "The client is guarded: willing to talk, but not yet convinced the counselor can help.",
            "The client trusts the counselor more than their own doctor.",
        ],
    )
    ProspectiveItemFactory(
        batch=batch, context=ContextFactory(context_id="mi-s0012-w04", window_index=4), answer="A",
        profile={"belief": "drinking is not a real problem", "desire": "to keep the peace at home",
                 "intention": "to attend without committing", "emotion": "defensive", "knowledge": "doctor's warning",
                 "trust": "guarded"},
        options=[
            "Look, I'll come to these sessions, but I'm not promising to stop.",
            "You're right, I'll quit drinking starting tonight.",
            "Can we talk about my job instead? That's what really stresses me.",
            "I think my doctor is completely wrong and I'm leaving.",
        ],
    )
    # the queue's order is drawn from a secret: put the retrospective item first for this walk-through
    batch_queue_sync(batch=batch)
    QueueSlot.objects.filter(pk=retrospective.pk).update(position=-1)
    return batch


def test_verifier_audits_with_the_keyboard_only(transactional_db, live_server, page, login, screenshot):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    login(verifier)
    expect(page).to_have_url(f"{live_server.url}/verify/")
    page.goto(f"{live_server.url}/verify/{batch.name}/")

    # retrospective: the dialogue with domain roles, the four options, the shortcuts
    expect(page.locator(".dialogue")).to_contain_text("Counselor: So what brings you here today?")
    expect(page.locator("#progress-text")).to_have_text("0 / 2 done")
    expect(page.locator(".keys")).to_contain_text("Enter")
    page.set_viewport_size({"width": 1100, "height": 1000})
    page.keyboard.press("3")
    assert screenshot(page, "audit-form").stat().st_size > 10_000
    page.keyboard.press("Enter")

    # prospective: the profile and the continuations only, no dialogue (htmx swap, no reload)
    expect(page.locator("#progress-text")).to_have_text("1 / 2 done")
    expect(page.locator(".profile")).to_contain_text("defensive")
    expect(page.locator(".dialogue")).to_have_count(0)
    assert "So what brings you here today?" not in page.content()
    page.keyboard.press("n")
    page.keyboard.press("Enter")

    expect(page.locator("#progress-text")).to_have_text("2 / 2 done")
    expect(page.locator("#progress")).to_have_attribute("aria-valuenow", "2")
    expect(page.get_by_text("Nothing left for you")).to_be_visible()

    judgments = {j.item.task: j for j in Judgment.objects.select_related("item", "claim")}
    retro = judgments["retrospective"]
    assert retro.displayed_label == "C" and retro.label == retro.claim.display_order[2]
    assert judgments["prospective"].label == "NONE"
    assert all(j.seconds_spent is not None for j in judgments.values())


def test_a_contexts_retrospective_items_show_the_dialogue_once(transactional_db, live_server, page, login):
    from tests.verification.factories import context_with_items

    verifier = UserFactory(username="verifier08")
    ensure_domains()
    batch = Batch.objects.create(name="mi-row", overlap=1)
    pool = Pool.objects.create(name="verifiers")
    pool.members.add(verifier)
    batch.pools.add(pool)
    context_with_items(batch=batch, context_id="mi-s0007-w00", profile_variants=())
    login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    dialogue = page.locator(".dialogue")
    note = page.locator("[data-row]")

    # the first question: the dialogue in full, and how many questions are about it
    expect(note).to_have_text("question 1 of 6 about this dialogue")
    expect(dialogue).to_be_visible()
    expect(dialogue).to_contain_text("Counselor: So what brings you here today?")
    page.keyboard.press("1")
    page.keyboard.press("Enter")

    for position in range(2, 7):
        # the same dialogue, said so, folded: shown once, not again as a fresh wall of text
        expect(note).to_have_text(f"Same dialogue as the previous question: question {position} of 6 about this dialogue")
        expect(page.locator("#progress-text")).to_have_text(f"{position - 1} / 6 done")
        expect(dialogue).to_have_count(1)
        expect(dialogue).to_be_hidden()
        if position == 3:  # D opens it, D folds it again; the answer keys still work
            page.keyboard.press("d")
            expect(dialogue).to_be_visible()
            expect(dialogue).to_contain_text("Client: My doctor said I should cut down on drinking.")
            page.keyboard.press("D")
            expect(dialogue).to_be_hidden()
        if position == 2:  # the folded form fits a phone and passes axe
            from tests.e2e.test_every_page import PHONE, _axe_serious

            page.set_viewport_size(PHONE)
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            assert _axe_serious(page, f"/verify/{batch.name}/") == []
        if position == 4:  # or one click on its summary
            page.locator(".dialogue-again > summary").click()
            expect(dialogue).to_be_visible()
        page.keyboard.press("2")
        page.keyboard.press("Enter")

    expect(page.locator("#progress-text")).to_have_text("6 / 6 done")
    expect(page.get_by_text("Nothing left for you")).to_be_visible()
    assert Judgment.objects.filter(verifier=verifier).count() == 6
