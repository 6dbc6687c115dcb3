"""A Prolific participant's path in Chromium: the study link, the items up to the quota, the
completion code and the way back to Prolific; and a failed qualification's screen-out code."""
from annotation.models import OPTION_LETTERS
from studies import services
from tests.verification.factories import open_batch
from verification.models import Claim
from verification.services import items_gold_set

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


def _answer(page, *, right: bool):
    claim_id = page.locator("input[name=claim]").get_attribute("value")
    claim = Claim.objects.select_related("item").get(pk=claim_id)
    original = claim.item.answer if right else next(x for x in "ABCD" if x != claim.item.answer)
    page.check(f"input[name=choice][value={OPTION_LETTERS[claim.display_order.index(original)]}]")
    page.click("[data-submit]")
    page.wait_for_load_state("networkidle")


def test_a_prolific_participant_audits_to_the_quota_and_gets_the_code(transactional_db, live_server, live_server_requests, page):
    live_server_requests.open()
    batch = open_batch(name="e2e-study", n_items=6, pool="e2e-unused")
    study = services.study_create(name="e2e", platform="prolific", batches=[batch.name], quota=2,
                                  completion_code="E2EC0DE1", pay_per_item="0.10")
    page.goto(f"{live_server.url}/s/{study.token}/?PROLIFIC_PID={PID}&STUDY_ID=abc&SESSION_ID=def")
    assert "0 of 2 done" in page.inner_text("[data-study-progress]")
    for _ in range(2):
        _answer(page, right=True)
    assert page.inner_text("[data-code]") == "E2EC0DE1"
    assert page.get_attribute("[data-return]", "href") == "https://app.prolific.com/submissions/complete?cc=E2EC0DE1"
    page.goto(f"{live_server.url}/verify/")  # nothing else is reachable
    assert page.url.endswith(f"/s/{study.token}/done/")
    page.goto("about:blank")
    live_server_requests.wait_until_quiet()
    live_server_requests.shut()


def test_a_failed_qualification_ends_at_the_screen_out_code(transactional_db, live_server, live_server_requests, page):
    live_server_requests.open()
    batch = open_batch(name="e2e-real", n_items=2, pool="e2e-unused")
    qual = open_batch(name="e2e-qual", overlap=1, n_items=2, pool="e2e-unused", gold_rate=1.0)
    items_gold_set(item_ids=list(qual.items.values_list("item_id", flat=True)), is_gold=True)
    study = services.study_create(name="e2e-screen", platform="prolific", batches=[batch.name], quota=2,
                                  completion_code="E2EC0DE2", screen_out_code="E2ESCRN2", pay_per_item="0.10",
                                  qualification_batch=qual.name, qualification_pass_mark=1.0)
    page.goto(f"{live_server.url}/s/{study.token}/?PROLIFIC_PID={PID}&STUDY_ID=abc&SESSION_ID=def")
    assert "Qualification" in page.inner_text("[data-study-progress]")
    _answer(page, right=True)
    _answer(page, right=False)
    assert page.inner_text("[data-code]") == "E2ESCRN2"
    assert "did not pass the qualification" in page.inner_text("[data-study-done]")
    page.goto("about:blank")
    live_server_requests.wait_until_quiet()
    live_server_requests.shut()


def test_study_pages_fit_a_phone_and_pass_axe(transactional_db, live_server, live_server_requests, page, login):
    from tests.e2e.test_every_page import AXE, DESKTOP, PHONE, _axe_serious
    from tests.factories import StaffFactory

    live_server_requests.open()
    batch = open_batch(name="e2e-axe", n_items=3, pool="e2e-unused")
    study = services.study_create(name="e2e-axe", platform="prolific", batches=[batch.name], quota=1,
                                  completion_code="E2EC0DE3", pay_per_item="0.10", minimum_hourly="9.00")
    problems = []

    def check(path):
        for size in (PHONE, DESKTOP):
            page.set_viewport_size(size)
            page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            if size is PHONE and width > 390:
                problems.append(f"{path} at 390 px: page is {width} px wide")
            if AXE.exists():  # axe-core from node_modules (`make install`)
                problems.extend(f"{path} at {size['width']} px: {v}" for v in _axe_serious(page, path))

    check(f"/s/{study.token}/?PROLIFIC_PID={PID}&STUDY_ID=abc&SESSION_ID=def")  # → the work page
    _answer(page, right=True)
    check(f"/s/{study.token}/done/")
    page.context.clear_cookies()
    login(StaffFactory(username="e2e-staff"))
    check("/studies/")
    check("/studies/e2e-axe/")
    assert not problems, "\n".join(problems)
