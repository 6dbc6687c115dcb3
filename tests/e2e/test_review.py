"""The review features in headless Chromium, each as the role that uses it, on the demo
(`load_demo`: 22 simulated verifiers, a release, flags). Screenshots for the README go to
docs/img/ with `make screenshots`."""
import hashlib
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import F
from playwright.sync_api import expect

from accounts.models import User
from annotation.models import Batch
from review.models import Adjudication, Flag
from scoring.models import ModelRun
from verification.models import Claim

DEMO_PASSWORD = "dialtom-demo"


@pytest.fixture
def demo(transactional_db):
    out = StringIO()
    call_command("load_demo", "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_verifier_meets_the_guidelines_first_then_on_g_and_flags_an_item(demo, login, live_server, screenshot):
    verifier = User.objects.get(username="verifier")
    page = login(verifier, password=DEMO_PASSWORD)

    # Defect 3: the demo leaves real work, and no empty batch offers a Start button.
    expect(page.locator("h1")).to_have_text("My audit batches")
    rows = page.locator("tbody tr")
    live = Batch.objects.exclude(name__in=["mi-b01", "pfg-b01", "esc-b01"]).order_by("name")
    expect(rows).to_have_count(live.count())
    for n, batch in enumerate(live):  # what is left for `verifier`: the simulated verifiers finished the rest
        expect(rows.nth(n)).to_contain_text(f"0 / {batch.queue_slots.filter(taken__lt=F('needed')).count()}")
        expect(rows.nth(n).locator("a.button")).to_have_text("Start")

    page.click("tr:has-text('dialtom-mi-retrospective') >> text=Start")
    dialog = page.locator("dialog#guidelines")
    expect(dialog).to_be_visible()  # before the first item
    expect(dialog.locator("#guidelines-title")).to_have_text("Guidelines for dialtom-mi-retrospective")
    expect(dialog.locator("details.example")).to_have_count(7)
    screenshot(page, "guidelines")
    page.keyboard.press("1")  # the audit's keys are quiet while the guidelines are open
    page.click("[data-close-guidelines]")
    expect(dialog).to_be_hidden()
    expect(page.locator("input[name=choice]:checked")).to_have_count(0)
    expect(page.locator(".dialogue")).to_be_visible()  # a retrospective item

    page.keyboard.press("g")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    item_id = Claim.objects.get(verifier=verifier, status="active").item.item_id  # the item in hand
    page.keyboard.press("f")
    page.check("#flag-box input[value=other]")
    page.click("#flag-box button[type=submit]")  # "other" needs a comment: the form says so
    expect(page.locator("#flag-box .error")).to_contain_text("comment")
    page.check("#flag-box input[value=dialogue_cut]")
    page.fill("#flag-comment", "The client's answer is cut off.")
    page.focus("#flag-box input[value=dialogue_cut]")
    page.keyboard.press("Enter")  # in the flag box, Enter sends the flag, not the answer
    expect(page.locator("#flag-box .notice")).to_contain_text("Flagged as “Dialogue cut”")
    flag = Flag.objects.get(flagged_by=verifier)
    assert (flag.item.item_id, flag.reason, flag.comment) == (item_id, "dialogue_cut", "The client's answer is cut off.")
    assert "Dawid" not in page.content() and "posterior" not in page.content()  # nothing revealed
    # The item is still in hand: answering goes on as usual.
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("#progress-text")).to_contain_text("1 / ")


def test_staff_review_flags_drill_down_adjudicate_and_see_agreement_per_verifier(demo, login, live_server, screenshot):
    admin = User.objects.get(username="admin")
    page = login(admin, password=DEMO_PASSWORD)

    page.click("nav >> text=Review")
    expect(page.locator("h1")).to_have_text("Flagged items")
    open_flags = page.locator("#flags tbody tr[data-flag]")
    expect(open_flags).to_have_count(Flag.objects.filter(status="open").count())
    assert page.locator("#comments tbody tr").count() >= 1
    screenshot(page, "review-flags")
    first = open_flags.first
    flag_id = int(first.get_attribute("data-flag"))
    first.locator("input[name=note]").fill("B and D now differ")
    first.locator("button[value=resolved]").click()
    expect(page.locator(".messages")).to_contain_text("Flag resolved")
    assert Flag.objects.get(pk=flag_id).status == "resolved"

    # The item the demo's staff dropped: judgments as shown and stored, the aggregate, qualities.
    dropped = Adjudication.objects.get().item
    page.goto(f"{live_server.url}/review/items/{dropped.item_id}/")
    expect(page.locator("#decision")).to_contain_text("Drop from releases")
    expect(page.locator("#judgments tbody tr")).to_have_count(3)
    expect(page.locator("#aggregate")).to_contain_text("Posterior")
    screenshot(page, "review-item")
    page.check("#adjudicate input[value=keep]")
    page.fill("#adjudicate textarea", "Re-read: option C is clearly the best.")
    page.click("#adjudicate button[type=submit]")
    expect(page.locator("#decision")).to_contain_text("Keep")
    assert Adjudication.objects.filter(item=dropped).first().decided_by == admin

    page.click("text=Agreement per verifier")
    table = page.locator("#verifier-agreement tbody tr")
    expect(table).to_have_count(22)
    screenshot(page, "agreement-per-verifier")
    best = table.first.get_attribute("data-verifier")  # by consensus, best first
    page.click("#verifier-agreement th >> text=Consensus")  # then ascending
    expect(table.last).to_have_attribute("data-verifier", best)
    weakest = table.first.get_attribute("data-verifier")
    assert weakest in {"sami", "omar", "ivan"}  # the three who judged the flagged batch carelessly
    page.fill("input[name=batch]", "esc-b01")
    page.click("form.filters button")
    expect(table).to_have_count(3)


def test_reader_lands_on_the_releases_and_downloads_a_checked_file(demo, login, live_server, screenshot):
    reader = User.objects.get(username="reader")
    page = login(reader, password=DEMO_PASSWORD)

    # Defect 12: the reader's home is the release browser, not a dead end.
    expect(page.locator("h1")).to_have_text("Releases")
    page.click("#releases >> text=v1")
    expect(page.locator("h1")).to_have_text("Release v1")
    expect(page.locator("#release-stats")).to_contain_text("items")
    expect(page.locator("#adjudications tbody tr")).to_have_count(1)
    screenshot(page, "release-browser")
    with page.expect_download() as download:
        page.click("#files >> text=items.jsonl")
    body = open(download.value.path(), "rb").read()
    sha = page.locator("#files tr:has-text('items.jsonl') td").nth(3).inner_text()
    assert hashlib.sha256(body).hexdigest() == sha and body.count(b"\n") > 100


def test_staff_upload_predictions_and_see_them_scored(demo, celery_worker, login, live_server, tmp_path, screenshot):
    admin = User.objects.get(username="admin")
    lines = [json.dumps({"item_id": "mi-t0000-w00-trust", "prediction": "A"}),
             json.dumps({"item_id": "nope", "prediction": "B"})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    page = login(admin, password=DEMO_PASSWORD)
    page.goto(f"{live_server.url}/leaderboard/")
    page.click("text=Upload a model's predictions")
    page.fill("#id_name", "my-model")
    page.fill("#id_model_name", "My model")
    page.set_input_files("#id_file", str(bad))
    page.click("#upload button[type=submit]")
    expect(page.locator("#upload-errors")).to_contain_text("bad.jsonl:2: item_id: unknown item nope")
    assert not ModelRun.objects.filter(name="my-model").exists()

    good = tmp_path / "good.jsonl"
    good.write_text(lines[0] + "\n")
    page.set_input_files("#id_file", str(good))
    page.click("#upload button[type=submit]")
    expect(page.locator("h1")).to_contain_text("My model")
    expect(page.locator("#overall")).not_to_have_text("–", timeout=20_000)  # the page refreshes until scored
    assert ModelRun.objects.get(name="my-model").status == "succeeded"


def test_staff_item_list_gives_the_exact_count_after_an_estimate(demo, login, live_server, monkeypatch):
    """A count over the page's budget: "about" first, then the exact count, fetched once the page has loaded."""
    from annotation.models import ItemSummary
    from review import item_list

    real = item_list.bounded_count
    monkeypatch.setattr(item_list, "bounded_count", lambda queryset, budget_ms, max_cost=None: (
        (99_999, True) if budget_ms == item_list.COUNT_BUDGET_MS else real(queryset, budget_ms=budget_ms)))
    page = login(User.objects.get(username="admin"), password=DEMO_PASSWORD)
    page.goto(f"{live_server.url}/review/items/?task=retrospective")
    exact = ItemSummary.objects.filter(task="retrospective").count()
    expect(page.locator("#item-count")).to_contain_text(f"{exact:,} items")
    expect(page.locator("#item-count")).not_to_contain_text("about")
