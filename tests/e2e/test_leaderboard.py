"""The leaderboard in headless Chromium with two uploaded, scored models."""

from accounts.models import Role
from scoring.services import model_run_create, model_run_score
from tests.factories import ContextFactory, ItemFactory, ProspectiveItemFactory, UserFactory
from tests.scoring.conftest import jsonl, release_of



def test_leaderboard_shows_two_models(transactional_db, login, live_server, screenshot):
    items = []
    for n in range(4):
        context = ContextFactory(context_id=f"mi-s{n:04d}-w00", session_key=f"mi-s{n:04d}")
        items.append(ItemFactory(context=context, item_id=f"mi-s{n:04d}-w00-trust", answer="C"))
        items.append(ProspectiveItemFactory(context=context, item_id=f"mi-s{n:04d}-w00-prospective", answer="A"))
    release_of(dict(enumerate(items)), unaudited=set(), dropped=set(), version="2026.1")
    for name, n_right in [("gpt-like", 6), ("small-model", 3)]:
        records = [{"item_id": item.item_id, "prediction": item.answer if i < n_right else "B"}
                   for i, item in enumerate(items)]
        run = model_run_create(name=name, model_name=name.replace("-", " ").title(), lines=jsonl(records), source="e2e")
        model_run_score(run_id=run.pk)
    reader = UserFactory(username="reader07", role=Role.RELEASE_READER)

    page = login(reader)
    page.goto(f"{live_server.url}/leaderboard/")
    page.wait_for_selector("#leaderboard tbody tr[data-run='small-model']")

    first = page.locator("#leaderboard tbody tr").nth(0)
    second = page.locator("#leaderboard tbody tr").nth(1)
    assert "gpt-like" in first.inner_text() and "75.0 %" in first.inner_text()
    assert "small-model" in second.inner_text() and "37.5 %" in second.inner_text()
    assert first.locator("td.release").inner_text() == "2026.1"  # each figure names its release
    assert page.locator("canvas#rates").is_visible()
    assert screenshot(page, "leaderboard").stat().st_size > 10_000

    page.click("text=Compare the top two (McNemar)")
    page.wait_for_selector("#mcnemar")
    assert "exact" in page.locator("#mcnemar").inner_text()
