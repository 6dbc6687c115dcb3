"""Issue 15's defects and comfort features, each as the person who meets them, in Chromium."""
from urllib.parse import urlparse

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from accounts.models import User
from aggregation.models import BatchResult
from tests.dashboard.world import make_world
from tests.e2e.test_audit import make_batch
from tests.e2e.test_every_page import AXE
from tests.factories import ContextFactory, StaffFactory, UserFactory


@pytest.fixture
def demo(transactional_db):
    call_command("load_demo", "--json", stdout=open("/dev/null", "w"))

    def person(username):
        user = User.objects.get(username=username)
        user.set_password("pw-for-tests-1")
        user.save(update_fields=["password"])
        return user

    return person


# --- 1. the admin ----------------------------------------------------------------------


def test_staff_work_in_the_admin_with_least_privilege(demo, live_server, login):
    page = login(demo("admin"))
    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("body")).not_to_contain_text("You don't have permission")
    expect(page.locator("#content-main")).to_contain_text("Batch queues")
    page.goto(f"{live_server.url}/admin/verification/batchqueue/")
    expect(page.locator("#result_list")).to_be_visible()
    # staff cannot hand out rights: no superuser / groups / permissions fields on a person
    verifier = User.objects.get(username="verifier")
    page.goto(f"{live_server.url}/admin/accounts/user/{verifier.pk}/change/")
    expect(page.locator("#id_is_active")).to_be_visible()
    expect(page.locator("#id_is_superuser")).to_have_count(0)
    expect(page.locator("#id_groups")).to_have_count(0)
    # and never auth's own models
    assert page.goto(f"{live_server.url}/admin/auth/group/").status == 403


# --- 2. API docs offline ------------------------------------------------------------------


def test_api_docs_render_offline(transactional_db, live_server, login):
    page = login(StaffFactory(username="admin07"))
    elsewhere = []

    def only_this_server(route):
        if urlparse(route.request.url).hostname not in ("localhost", "127.0.0.1"):
            elsewhere.append(route.request.url)
            return route.abort()
        return route.continue_()

    page.route("**/*", only_this_server)
    page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("DialToM Studio API", timeout=15_000)
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    assert elsewhere == []


# --- 5. the agreement chart ----------------------------------------------------------------


def test_agreement_chart_draws_negative_ac1_with_ci_and_threshold(transactional_db, live_server, login):
    world = make_world()
    BatchResult.objects.filter(run=world.run2).update(ac1=-0.17, ac1_ci_low=-0.42, ac1_ci_high=0.08)
    page = login(StaffFactory(username="admin07"))
    page.goto(f"{live_server.url}/dashboard/")
    page.wait_for_load_state("networkidle")
    chart = page.evaluate("""() => {
        const c = Chart.getChart("chart-ac1"), y = c.scales.y, bar = c.getDatasetMeta(0).data[0];
        return {min: y.min, max: y.max, barTop: bar.y, zero: y.getPixelForValue(0),
                labels: c.data.datasets.map(d => d.label), ci: c.data.datasets[0].ci,
                threshold: c.data.datasets.find(d => d.type === "line")};
    }""")
    assert chart["min"] <= -0.42 and chart["max"] == 1
    assert chart["barTop"] > chart["zero"]  # the bar goes down from zero: it is drawn
    assert chart["ci"][0] == [-0.42, 0.08]
    assert chart["threshold"]["data"][0] == pytest.approx(0.6) or chart["threshold"]["label"].startswith("Threshold")


# --- 6. the dialogue -------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1100, 390])
def test_the_last_turns_of_a_long_dialogue_are_shown_whole(width, transactional_db, live_server, login):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    long_turns = [{"speaker": "initiator" if i % 2 else "recipient",
                   "text": f"Turn {i}: " + "and then I told my wife I would think about it, " * 4} for i in range(18)]
    long_turns[-1]["text"] = "LAST TURN: I suppose I could try cutting down on weekdays, if it keeps the peace at home."
    item = batch.items.filter(task="retrospective").first()
    item.context.turns = long_turns
    item.context.save(update_fields=["turns"])
    page = login(verifier)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    box = page.locator(".dialogue")
    expect(box).to_contain_text("LAST TURN")
    geometry = page.evaluate("""() => {
        const d = document.querySelector(".dialogue"), turns = d.querySelectorAll(".turn"), last = turns[turns.length - 1];
        const db = d.getBoundingClientRect(), lb = last.getBoundingClientRect();
        return {scroll: d.scrollHeight, client: d.clientHeight, lastBottom: lb.bottom, boxBottom: db.bottom};
    }""")
    assert geometry["scroll"] <= geometry["client"] + 1  # nothing hidden inside a scroll box
    assert geometry["lastBottom"] <= geometry["boxBottom"]


# --- 9. the progress table ------------------------------------------------------------------


def test_progress_table_cells_align_and_do_not_wrap(transactional_db, live_server, login):
    make_world()
    page = login(StaffFactory(username="admin07"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/dashboard/")
    rows = page.evaluate("""() => Array.from(document.querySelectorAll("#progress-table tbody tr[data-batch]")).map(tr => {
        const cells = Array.from(tr.cells);
        // lines of text in a cell: rects whose tops are more than half a line apart
        const lines = td => { const r = document.createRange(); r.selectNodeContents(td);
            const tops = Array.from(r.getClientRects()).filter(x => x.width > 0).map(x => x.top).sort((a, b) => a - b);
            const half = parseFloat(getComputedStyle(td).fontSize) * 0.75;
            return tops.filter((t, i) => i === 0 || t - tops[i - 1] > half).length; };
        return {display: getComputedStyle(cells[cells.length - 1]).display,
                tops: cells.map(td => Math.round(td.getBoundingClientRect().top)),
                judgmentLines: lines(cells[2]), etaLines: lines(cells[8])};
    })""")
    assert rows
    for row in rows:
        assert row["display"] == "table-cell"
        assert len(set(row["tops"])) == 1
        assert row["judgmentLines"] == 1 and row["etaLines"] <= 1


# --- 11. error pages, the admin as a verifier, the profile ------------------------------------


def test_refused_and_missing_pages_lead_home(transactional_db, live_server, login):
    page = login(UserFactory(username="verifier07"))
    response = page.goto(f"{live_server.url}/dashboard/")
    assert response.status == 403
    expect(page.locator("h1")).to_contain_text("not allowed")
    expect(page.locator("a:has-text('Go to your start page')")).to_have_attribute("href", "/")
    assert page.goto(f"{live_server.url}/no-such-page/").status == 404
    expect(page.locator("a:has-text('Go to your start page')")).to_be_visible()
    # the admin says no, instead of showing the login form again
    response = page.goto(f"{live_server.url}/admin/")
    assert response.status == 403
    expect(page.locator("#id_password")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("The admin is for project staff")


def test_the_welcome_message_leads_to_a_profile_where_a_password_is_set(transactional_db, live_server, page, login):
    from accounts.services import login_link_path, person_create

    person = person_create(username="newcomer", email="n@example.org", role="crowd_worker")
    login(UserFactory(username="someone-else"))  # the fixture: quiet teardown
    page.context.clear_cookies()
    page.goto(live_server.url + login_link_path(user=person))
    page.click("button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("profile")
    page.click("a.who")
    expect(page).to_have_url(f"{live_server.url}/accounts/profile/")
    page.fill("#id_new_password1", "a-long-new-pass-19")
    page.fill("#id_new_password2", "a-long-new-pass-19")
    page.click("button:has-text('Save the password')")
    expect(page.locator(".messages")).to_contain_text("password is saved")
    person.refresh_from_db()
    assert person.check_password("a-long-new-pass-19")


# --- 14. focus, colours, inputs, favicon ----------------------------------------------------


def _contrast(page, selector, background_selector):
    return page.evaluate("""([sel, bgSel]) => {
        const rgb = s => s.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
        const lum = c => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                           return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
        const fg = lum(rgb(getComputedStyle(document.querySelector(sel)).color));
        const bg = lum(rgb(getComputedStyle(document.querySelector(bgSel)).backgroundColor));
        return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    }""", [selector, background_selector])


def test_focus_is_visible_and_colours_pass_aa(transactional_db, live_server, login):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    page.locator("input[name=choice]").first.focus()
    page.keyboard.press("ArrowDown")  # keyboard focus: :focus-visible
    outline = page.evaluate("""() => { const l = document.activeElement.closest("label");
        const s = getComputedStyle(l); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }""")
    assert outline[0] != "none" and outline[1] >= 2
    # --ok and --warn as text on a card reach 4.5:1
    page.evaluate("""() => { for (const name of ["ok", "warn"]) { const s = document.createElement("span");
        s.id = "probe-" + name; s.style.color = "var(--" + name + ")"; s.textContent = name;
        document.querySelector(".card").appendChild(s); } }""")
    assert _contrast(page, "#probe-ok", ".card") >= 4.5
    assert _contrast(page, "#probe-warn", ".card") >= 4.5
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(live_server.url + icon).status == 200


def test_number_inputs_are_styled_like_the_others(transactional_db, live_server, login):
    page = login(StaffFactory(username="admin07"))
    page.goto(f"{live_server.url}/annotate/references/")
    styles = page.evaluate("""() => ["#id_size", "input[type=text]"].map(sel => {
        const s = getComputedStyle(document.querySelector(sel)); return [s.borderTopLeftRadius, s.paddingTop]; })""")
    assert styles[0] == styles[1] and styles[0][0] != "0px"


# --- 13. skipping asks why and can be taken back; a changed answer leads back to the queue ----


def test_skip_asks_a_reason_keeps_the_total_and_can_be_taken_back(transactional_db, live_server, login):
    from verification.models import Claim

    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    expect(page.locator("#progress-text")).to_have_text("0 / 2 done")
    first = page.locator(".audit-item > p.muted").inner_text()

    page.keyboard.press("s")
    expect(page.locator("[data-skip-panel] legend")).to_have_text("Why do you skip this item?")
    page.keyboard.press("Enter")  # no reason yet: asked again, nothing skipped
    expect(page.locator(".error")).to_contain_text("Say why you skip this item.")
    assert not Claim.objects.filter(status="skipped").exists()
    page.keyboard.press("s")
    page.keyboard.press("ArrowDown")  # the second reason
    page.keyboard.press("Enter")

    expect(page.locator("#progress-text")).to_have_text("0 / 2 done")  # the total does not shrink
    expect(page.locator("#skipped-count")).to_have_text("1 skipped")
    assert Claim.objects.get(status="skipped").skip_reason == "dialogue"
    row = page.locator("#skipped tr[data-skipped]")
    expect(row).to_contain_text("The dialogue is cut off or garbled")
    second = page.locator(".audit-item > p.muted").inner_text()
    assert second != first

    row.locator("button:has-text('Take it back')").click()
    expect(page.locator(".notice")).to_contain_text("back in your queue")
    expect(page.locator("#skipped")).to_have_count(0)
    page.keyboard.press("n")
    page.keyboard.press("Enter")  # the item in hand first, then the one taken back
    expect(page.locator(".audit-item > p.muted")).to_have_text(first)
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator("#progress-text")).to_have_text("2 / 2 done")


def test_undo_with_backspace_changes_the_last_answer_and_returns_to_the_queue(transactional_db, live_server, login):
    from verification.models import Judgment

    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("[data-undo]")).to_contain_text("Saved your answer")
    judgment = Judgment.objects.get(verifier=verifier)
    first_label = judgment.label

    page.keyboard.press("Backspace")
    expect(page.locator("[data-audit-form]")).to_contain_text("Changing your answer")
    expect(page).to_have_url(f"{live_server.url}/verify/judgments/{judgment.pk}/")
    expect(page.locator("input[name=choice][value=A]")).to_be_checked()
    page.keyboard.press("2")
    page.keyboard.press("Enter")

    expect(page.locator(".notice")).to_contain_text("changed")
    expect(page).to_have_url(f"{live_server.url}/verify/{batch.name}/")  # not the edit page
    judgment.refresh_from_db()
    assert judgment.label != first_label and judgment.displayed_label == "B"


def test_the_undo_offer_goes_away(transactional_db, live_server, login, settings):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    page.clock.install()
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("[data-undo]")).to_be_visible()
    page.clock.run_for(11_000)
    expect(page.locator("[data-undo]")).to_have_count(0)
    page.keyboard.press("Backspace")  # nothing to undo any more
    expect(page.locator("[data-audit-form]")).not_to_contain_text("Changing your answer")


def test_question_mark_lists_every_shortcut(transactional_db, live_server, login):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    page.keyboard.press("?")
    dialog = page.locator("dialog#shortcuts")
    expect(dialog).to_be_visible()
    for key in ("1", "5", "N", "M", "Enter", "S", "Backspace", "?", "Esc"):
        expect(dialog.locator("kbd", has_text=key).first).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


# --- the crowd form: Ctrl+Enter, and a failed submit is not posted again on reload -------------


def test_crowd_form_ctrl_enter_and_post_redirect_get(transactional_db, live_server, login):
    from references import services
    from references.models import ReferenceSubmission
    from tests.e2e.test_reference_draft import TURNS
    from tests.factories import CrowdWorkerFactory, domain

    context = ContextFactory(context_id="mi-s0042-w03", domain=domain("mi"), session_key="mi-s0042", window_index=3, turns=TURNS)
    worker = CrowdWorkerFactory(username="crowd07")
    reference_set = services.reference_set_create(name="e2e", per_context=3, context_ids=[context.context_id])
    assignment = services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)
    page = login(worker)
    work = f"{live_server.url}/annotate/work/{assignment.pk}/"
    page.goto(work)
    page.fill("#id_belief", "He believes a few beers after work are harmless.")
    methods = []
    page.on("request", lambda r: methods.append(r.method) if r.is_navigation_request() else None)
    page.locator("#id_belief").press("Control+Enter")  # from inside a text box
    expect(page.locator("p.error[role=alert]")).to_be_visible()
    expect(page).to_have_url(work)
    assert methods[:2] == ["POST", "GET"]  # POST, then redirected to a GET
    methods.clear()
    page.reload()
    assert methods == ["GET"]
    assert page.locator("#id_belief").input_value() == "He believes a few beers after work are harmless."

    texts = {"desire": "He wants his wife to stop bringing the drinking up.", "intention": "He intends to skip beers on weekdays only.",
             "emotion": "He feels annoyed and caught off guard by the news.", "knowledge": "He knows his liver values are up now.",
             "trust": "He trusts the counselor enough to consider a change."}
    for name, text in texts.items():
        page.fill(f"#id_{name}", text)
    page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Submitted")
    assert ReferenceSubmission.objects.filter(assignment=assignment).count() == 1


# --- comfort: dark mode and text size, remembered ---------------------------------------------


def test_dark_mode_and_text_size_are_remembered(transactional_db, live_server, login, screenshot):
    verifier = UserFactory(username="verifier07")
    batch = make_batch(verifier)
    page = login(verifier)
    page.goto(f"{live_server.url}/accounts/profile/")
    page.check("input[name=theme][value=dark]")
    page.check("input[name=text][value=larger]")
    page.goto(f"{live_server.url}/verify/{batch.name}/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 20, 27)"
    assert page.evaluate("getComputedStyle(document.documentElement).fontSize") == "19px"
    page.evaluate(AXE.read_text())  # not a <script> tag: the CSP refuses inline scripts
    contrast = page.evaluate("""async () => (await axe.run(document, {runOnly: ["color-contrast"]})).violations.length""")
    assert contrast == 0  # the dark colours reach AA too
    page.set_viewport_size({"width": 390, "height": 844})
    page.keyboard.press("s")  # the skip reasons, too
    screenshot(page, "audit-form-phone-dark")
    page.goto(f"{live_server.url}/accounts/profile/")
    expect(page.locator("input[name=theme][value=dark]")).to_be_checked()
