"""Issue 21 items 5–8 in headless Chromium: a reader downloads a release's raw files from its
page, picks the release a leaderboard ranks, uploads a run of their own that staff publish;
staff write a batch's guideline with a preview."""
from accounts.models import Role
from releases import services as release_services
from review.models import Guideline
from scoring.models import ModelRun
from scoring.services import model_run_create, model_run_score
from tests.dashboard.world import make_world
from tests.factories import StaffFactory, UserFactory
from tests.scoring.conftest import jsonl, release_of


def test_a_reader_downloads_every_raw_file_from_the_release_page(transactional_db, login, live_server, tmp_path):
    make_world()
    release_services.release_build(release_id=release_services.release_create(version="v1", build=False).id)
    page = login(UserFactory(username="reader07", role=Role.RELEASE_READER))
    page.goto(f"{live_server.url}/releases/v1/")
    for name in ("results.csv", "judgments.csv", "references.jsonl", "manifest.json"):
        with page.expect_download() as info:
            page.click(f"#files a:text-is('{name}')")
        saved = tmp_path / name
        info.value.save_as(saved)
        assert saved.stat().st_size > 0
    assert (tmp_path / "results.csv").read_text().startswith("item_id,batch,task")


def _items():
    from tests.factories import ContextFactory, ItemFactory

    items = {}
    for n in range(3):
        context = ContextFactory(context_id=f"mi-s{n:04d}-w00", session_key=f"mi-s{n:04d}")
        items[n] = ItemFactory(context=context, item_id=f"mi-s{n:04d}-w00-trust", answer="C")
    return items


def test_a_reader_picks_a_release_uploads_a_run_and_staff_publish_it(transactional_db, login, live_server, tmp_path):
    items = _items()
    release_of(items, unaudited=set(), dropped=set(), version="v1")
    release_of(items, unaudited=set(), dropped=set(), version="v2")
    for name, version in (("old-model", "v1"), ("new-model", "v2")):
        run = model_run_create(name=name, model_name=name, release=version, source="e2e",
                               lines=jsonl([{"item_id": i.item_id, "prediction": "C"} for i in items.values()]))
        model_run_score(run_id=run.pk)
    reader = UserFactory(username="reader07", role=Role.RELEASE_READER)

    page = login(reader)
    page.goto(f"{live_server.url}/leaderboard/")
    assert page.locator("#ranked-release").inner_text() == "v2"
    assert page.locator("#leaderboard tbody tr[data-run='old-model']").count() == 0
    page.select_option("#release", "v1")
    page.click("#release-select button")
    page.wait_for_selector("#leaderboard tbody tr[data-run='old-model']")
    assert page.locator("#ranked-release").inner_text() == "v1"

    page.click("text=Upload a model's predictions")
    predictions = tmp_path / "mine.jsonl"
    predictions.write_text("\n".join(jsonl([{"item_id": items[0].item_id, "prediction": "C"}])))
    page.fill("#id_name", "readers-model")
    page.fill("#id_model_name", "Reader's model")
    page.select_option("#id_release", "v2")
    page.set_input_files("#id_file", str(predictions))
    page.click("#upload button[type=submit]")
    page.wait_for_selector("#unpublished")
    assert ModelRun.objects.get(name="readers-model").uploaded_by == reader
    model_run_score(run_id=ModelRun.objects.get(name="readers-model").pk)

    page.context.clear_cookies()  # the reader leaves; staff sign in
    staff_tab = login(StaffFactory(username="boss"))
    staff_tab.goto(f"{live_server.url}/leaderboard/readers-model/")
    staff_tab.click("#publish button")
    staff_tab.wait_for_selector("text=is on the readers' leaderboard")
    assert ModelRun.objects.get(name="readers-model").published


def test_staff_write_a_guideline_with_a_preview(transactional_db, login, live_server):
    make_world()
    page = login(StaffFactory(username="boss"))
    page.goto(f"{live_server.url}/dashboard/")
    page.click("tr[data-batch='batch-a'] a.guideline-link")
    page.fill("#guideline-text", "Pick **one** option.")
    page.fill("#example-trust", "Trust: *leans on* the counselor")
    page.click("button[value=preview]")
    page.wait_for_selector("#guideline-preview strong")
    assert page.locator("#guideline-preview strong").inner_text() == "one"
    assert not Guideline.objects.exists()
    page.click("button[value=save]")
    page.wait_for_selector("text=Guideline of batch-a saved")
    assert Guideline.objects.get().examples.get().topic == "trust"
