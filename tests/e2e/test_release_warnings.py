"""Issue 15, defect 4, in Chromium: a release made from a flagged batch (AC1 −0.17) whose
items hold 2 of their 3 judgments is no longer made without a word: the dashboard lists the
warnings, refuses the release until staff tick "I have read the warnings", and shows them
in the release's row afterwards."""

from aggregation.models import BatchResult, ItemResult
from dashboard.summaries import summaries_rebuild
from releases.models import Release
from tests.dashboard.world import make_world
from tests.e2e.pages import reveal
from tests.factories import StaffFactory


def test_a_release_with_warnings_needs_the_tick(transactional_db, live_server, login, settings, tmp_path):
    settings.RELEASE_ROOT = tmp_path / "releases"
    world = make_world()
    BatchResult.objects.filter(run=world.run2, batch=world.batch_a).update(ac1=-0.17)
    ItemResult.objects.filter(run=world.run2, item=world.items["esc-desire"]).update(n_judgments=2)
    summaries_rebuild()  # results edited around the aggregation job, which keeps the summaries the warnings read

    page = login(StaffFactory(username="admin09"))
    page.goto(f"{live_server.url}/dashboard/")
    reveal(page, "#releases")  # the Releases card loads when shown
    warnings = page.locator("#release-warnings")
    assert "AC1 -0.17 is under the flag threshold 0.6" in warnings.inner_text()
    assert "fewer judgments than its overlap 3" in warnings.inner_text()

    # Without the tick: refused, nothing recorded
    page.fill("input[name=version]", "v1")
    page.click("#releases button:has-text('Create a release')")
    page.wait_for_load_state("networkidle")
    assert "Not created" in page.content() and not Release.objects.exists()

    # With it: created, its warnings in its row
    page.fill("input[name=version]", "v1")
    page.check("input[name=acknowledge_warnings]")
    page.click("#releases button:has-text('Create a release')")
    page.wait_for_selector("#releases-table td.release-warnings .warn")
    assert "2 acknowledged warning(s)" in page.content()
    row = page.locator("#releases-table tbody tr").first.inner_text()
    assert "v1" in row and "AC1 -0.17" in row
    assert Release.objects.get(version="v1").warnings_acknowledged
