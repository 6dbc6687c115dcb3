"""A crowd worker types an inference, reloads the page, and the draft is still there."""

from annotation import reference_services as services
from tests.annotation_references.conftest import ensure_domains
from tests.factories import ContextFactory, CrowdWorkerFactory, domain

TURNS = [
    {"speaker": "initiator", "text": "Thanks for coming in today. What brings you here?"},
    {"speaker": "recipient", "text": "My doctor said my liver values are up and that I should cut down on drinking."},
    {"speaker": "initiator", "text": "How do you feel about what the doctor said?"},
    {"speaker": "recipient", "text": "Honestly, a bit annoyed. I only drink a few beers after work to relax."},
    {"speaker": "initiator", "text": "So the beers help you unwind, and the doctor's news came as a surprise."},
    {"speaker": "recipient", "text": "Yeah. I guess I could skip them on weekdays, if that keeps everyone happy."},
]


def test_draft_survives_a_reload(transactional_db, live_server, login, screenshot):
    ensure_domains()
    context = ContextFactory(context_id="mi-s0042-w03", domain=domain("mi"), session_key="mi-s0042", window_index=3, turns=TURNS)
    worker = CrowdWorkerFactory(username="crowd07")
    reference_set = services.reference_set_create(name="e2e", per_context=3, context_ids=[context.context_id])
    assignment = services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)

    page = login(worker)
    page.goto(f"{live_server.url}/annotate/work/{assignment.pk}/")
    page.locator("#id_belief").press_sequentially("The client believes a few beers after work are harmless.")
    page.wait_for_selector("#autosave-status:has-text('Draft saved')", timeout=10_000)
    page.locator("#id_emotion").press_sequentially("He feels annoyed and caught off guard by the doctor's news.")
    page.wait_for_selector("#ref-progress:has-text('2 of 6')", timeout=10_000)

    page.reload()
    page.wait_for_load_state("networkidle")

    assert page.locator("#id_belief").input_value() == "The client believes a few beers after work are harmless."
    assert page.locator("#id_emotion").input_value() == "He feels annoyed and caught off guard by the doctor's news."
    assert "2 of 6 inferences written" in page.content()
    page.set_viewport_size({"width": 1280, "height": 1100})
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "reference-form")
