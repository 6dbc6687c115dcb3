"""A crowd worker types an inference, reloads the page, and the draft is still there."""

from references import services
from tests.references.conftest import ensure_domains
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


def test_typing_that_never_reached_the_server_is_restored_after_a_reload(transactional_db, live_server, login):
    """The network drops every save and the tab's last-chance beacon is lost too: the text
    typed is kept in the browser, and the reloaded page puts it back and saves it."""
    from references.models import ReferenceDraft

    ensure_domains()
    context = ContextFactory(context_id="mi-s0043-w01", domain=domain("mi"), session_key="mi-s0043", window_index=1, turns=TURNS)
    worker = CrowdWorkerFactory(username="crowd08")
    reference_set = services.reference_set_create(name="e2e-offline", per_context=3, context_ids=[context.context_id])
    assignment = services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)
    desire = "He wants his doctor and his wife to stop worrying about his drinking."

    page = login(worker)
    page.goto(f"{live_server.url}/annotate/work/{assignment.pk}/")
    dropped = []
    page.route("**/autosave/", lambda route: (dropped.append(route.request.url), route.abort()))
    page.evaluate("navigator.sendBeacon = function () { return false; }")
    page.locator("#id_desire").press_sequentially(desire)
    for _ in range(100):  # until the debounced save has been sent, and dropped
        if dropped:
            break
        page.wait_for_timeout(100)
    assert dropped and not ReferenceDraft.objects.filter(worker=worker).exists()

    page.unroute("**/autosave/")
    page.reload()
    assert page.locator("#id_desire").input_value() == desire
    page.wait_for_selector("#autosave-status:has-text('Draft saved')", timeout=10_000)
    assert ReferenceDraft.objects.get(worker=worker).texts["desire"] == desire
    assert "1 of 6 inferences written" in page.content()


def test_typing_offline_says_it_is_only_in_this_browser_then_saves_when_back_online(transactional_db, live_server, login):
    """Issue 21, item 10: offline, the status never says "saved" of text the server has not got."""
    from references.models import ReferenceDraft

    ensure_domains()
    context = ContextFactory(context_id="mi-s0044-w01", domain=domain("mi"), session_key="mi-s0044", window_index=1, turns=TURNS)
    worker = CrowdWorkerFactory(username="crowd09")
    reference_set = services.reference_set_create(name="e2e-offline-status", per_context=3, context_ids=[context.context_id])
    assignment = services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)
    belief = "He believes the doctor is exaggerating."

    page = login(worker)
    page.goto(f"{live_server.url}/annotate/work/{assignment.pk}/")
    page.context.set_offline(True)
    page.locator("#id_belief").press_sequentially(belief)
    status = page.locator("#autosave-status")
    page.wait_for_selector("#autosave-status [data-local-only]", timeout=10_000)
    page.wait_for_timeout(1500)  # the debounced save has failed by now: still no "saved" on the server
    assert "Saved in this browser — not yet on the server" in status.inner_text()
    assert "Draft saved" not in status.inner_text()
    assert not ReferenceDraft.objects.filter(worker=worker).exists()

    page.context.set_offline(False)  # back online: the text goes to the server by itself
    page.wait_for_selector("#autosave-status:has-text('Draft saved')", timeout=10_000)
    assert ReferenceDraft.objects.get(worker=worker).texts["belief"] == belief
