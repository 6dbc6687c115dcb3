"""The staff dashboard in headless Chromium: the fixture's numbers are on the page, live.

`make screenshots` writes the screenshot to docs/img/dashboard.png.
"""

from aggregation.models import AggregationRun, RunStatus
from tests.dashboard.world import make_world
from tests.e2e.pages import reveal
from tests.factories import StaffFactory, UserFactory


def test_staff_sees_the_fixture_numbers(transactional_db, live_server, login, screenshot):
    make_world()
    # The world's failed run 3 is for the unit tests (it must change nothing); the README's
    # screenshot shows the everyday state, the current run succeeded.
    AggregationRun.objects.filter(status=RunStatus.FAILED).delete()
    page = login(StaffFactory(username="admin07"))
    page.goto(f"{live_server.url}/dashboard/")
    page.wait_for_load_state("networkidle")

    assert "Succeeded" in page.inner_text("#run")
    assert page.inner_text("[data-testid=judgments-done]") == "19"
    assert page.inner_text("[data-testid=judgments-needed]") == "24"
    assert page.inner_text("#progress-table tr[data-batch=batch-b] .done") == "1"
    assert page.inner_text("#agreement-table tr[data-batch=batch-a] .ac1") == "0.910"
    assert page.inner_text("[data-testid=retained]") == "4"
    assert "66.7 %" in page.inner_text("#retention")
    # People and Releases load when scrolled to (htmx "revealed"), not with the page
    assert page.locator("#verifiers-table").count() == 0
    reveal(page, "#people")
    assert "verifier-3" in page.locator("#verifiers-table").inner_text()
    reveal(page, "#releases")
    page.wait_for_selector("#releases-table")
    # Chart.js drew the three charts from the npm package served as a static file.
    assert page.evaluate("typeof Chart") == "function"
    assert page.evaluate("Object.keys(Chart.instances).length") == 3

    # Pausing a batch swaps the progress section in place (htmx), without a page load.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#progress-table tr[data-batch=batch-b] button:has-text('Pause')")
    page.wait_for_selector("#progress-table tr[data-batch=batch-b] button:has-text('Reopen')")

    page.set_viewport_size({"width": 1280, "height": 900})
    assert screenshot(page, "dashboard").stat().st_size > 10_000


def test_verifier_is_refused(transactional_db, live_server, login):
    page = login(UserFactory(username="verifier08"))
    response = page.goto(f"{live_server.url}/dashboard/")
    assert response.status == 403
