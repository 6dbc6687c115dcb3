"""What a person meets on the way (issue 21, items 9, 11, 12), walked in the browser: a
verifier's flag that stays in sight, a submit that fails and is retried, the question beside
a long dialogue, guidelines opened at their top, items held back said; staff starting a run
over the batches they confirm, pausing with a confirmation, making an API token."""
from pathlib import Path

from playwright.sync_api import expect

from annotation.models import Batch
from review.models import Flag, Guideline
from tests.e2e.test_audit import make_batch
from tests.factories import StaffFactory, UserFactory
from verification.models import Judgment

GUIDELINES = Path(__file__).resolve().parents[2] / "demo" / "demo_data" / "guidelines.md"


def _long_dialogue(batch):
    turns = [{"speaker": "initiator" if i % 2 else "recipient",
              "text": f"Turn {i}: " + "and then I told my wife I would think about it, " * 4} for i in range(14)]
    item = batch.items.filter(task="retrospective").first()
    item.context.turns = turns
    item.context.save(update_fields=["turns"])


def test_verifier_flag_stays_in_sight_and_a_failed_submit_is_kept_and_retried(transactional_db, live_server, login):
    verifier = UserFactory(username="verifier21")
    batch = make_batch(verifier)
    _long_dialogue(batch)
    page = login(verifier)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/verify/{batch.name}/")

    # a long dialogue: the question and its options sit beside it, above the fold
    first_option = page.locator("label.option").first.bounding_box()
    dialogue = page.locator(".dialogue").bounding_box()
    assert first_option["y"] + first_option["height"] < 900
    assert first_option["x"] > dialogue["x"] + dialogue["width"]  # side by side
    expect(page.locator("#choice-help")).to_be_visible()

    # the flag's confirmation is in sight, and still there after a reload
    page.keyboard.press("f")
    page.check("#flag-box input[value=question_unclear]")
    page.click("#flag-box button[type=submit]")
    expect(page.locator("#flag-box [data-flagged]")).to_be_visible()
    expect(page.locator("#flag-box [data-flagged]")).to_contain_text("Flagged as “Question unclear”")
    page.reload()
    expect(page.locator("#flag-box [data-flagged]")).to_be_visible()
    expect(page.locator("#flag-box summary")).to_contain_text("You flagged this item")
    assert Flag.objects.filter(flagged_by=verifier).count() == 1

    # offline: the submit says it was not sent, the answer stays picked, and back online it goes
    page.keyboard.press("3")
    page.context.set_offline(True)
    page.keyboard.press("Enter")
    failed = page.locator("[data-submit-failed]")
    expect(failed).to_be_visible()
    expect(failed).to_contain_text("not sent")
    expect(page.locator("input[name=choice][value=C]")).to_be_checked()
    assert not Judgment.objects.exists()
    page.context.set_offline(False)
    expect(page.locator("#progress-text")).to_have_text("1 / 2 done")
    assert Judgment.objects.count() == 1

    # a server error: said with its code, the answer kept; "Try again" sends it once it works
    page.route("**/answer/", lambda route: route.fulfill(status=500, body="boom"))
    page.keyboard.press("n")
    page.keyboard.press("Enter")
    expect(failed).to_contain_text("error 500")
    expect(page.locator("input[name=choice][value=NONE]")).to_be_checked()
    page.unroute("**/answer/")
    page.click("[data-retry]")
    expect(page.locator("#progress-text")).to_have_text("2 / 2 done")
    assert Judgment.objects.count() == 2
    # the recent answers name the items by attribute and question
    expect(page.locator(".recent td.item-name").first).to_contain_text("Which continuation")


def test_verifier_meets_guidelines_at_their_top_held_back_items_and_a_paused_batch(transactional_db, live_server, login):
    from tests.verification.factories import context_with_items, open_batch, verifiers
    from verification.services import batch_pause, batch_queue_sync

    people = verifiers(4, prefix="held")
    batch = open_batch(name="mi-held", n_items=0, overlap=1, verifiers=people)
    context_with_items(batch=batch, context_id="mi-s0101-w00")
    batch_queue_sync(batch=batch)
    Guideline.objects.create(batch=batch, text=GUIDELINES.read_text() + "\n\n" + "More to read.\n\n" * 60)
    verifier = people[0]
    verifier.set_password("pw-for-tests-1")
    verifier.save(update_fields=["password"])
    page = login(verifier)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/verify/{batch.name}/")

    dialog = page.locator("dialog#guidelines")
    expect(dialog).to_be_visible()
    assert page.evaluate("document.querySelector('dialog#guidelines').scrollTop") == 0  # opened at the top
    expect(dialog.locator("#guidelines-title")).to_be_in_viewport()
    expect(dialog.locator("table")).to_contain_text("Backspace")
    page.keyboard.press("Enter")  # Enter starts, as the button does
    expect(dialog).to_be_hidden()

    page.keyboard.press("1")
    page.keyboard.press("Enter")
    held = page.locator("#held-back")
    expect(held).to_be_visible()
    expect(held).to_contain_text("held back from you: you have read their dialogue")

    batch_pause(batch=Batch.objects.get(pk=batch.pk))
    page.goto(f"{live_server.url}/verify/")
    row = page.locator("tr:has-text('mi-held')")
    expect(row.locator("[data-paused]")).to_be_visible()
    expect(row.locator("a.button")).to_have_count(0)


def test_staff_confirm_the_batches_of_a_run_confirm_a_pause_and_make_an_api_token(transactional_db, live_server, login):
    from aggregation.models import AggregationRun
    from rest_framework.authtoken.models import Token
    from tests.dashboard.world import make_world

    world = make_world()
    staff = StaffFactory(username="staff21")
    page = login(staff)
    page.goto(f"{live_server.url}/dashboard/")
    form = page.locator("#aggregation-start")
    expect(form.locator(f"input[value='{world.batch_a.id}']")).to_be_checked()  # complete
    expect(form.locator(f"input[value='{world.batch_b.id}']")).not_to_be_checked()
    form.locator("button[type=submit]").click()
    expect(page.locator("h1")).to_have_text("Start an aggregation run?")
    expect(page.locator("#aggregation-confirm tbody tr")).to_have_count(1)
    page.click("button:has-text('Start the run')")
    expect(page.locator(".messages")).to_contain_text("started")
    run = AggregationRun.objects.get(trigger="dashboard")
    assert list(run.batches.values_list("name", flat=True)) == ["batch-a"]

    # Pause asks first; dismissing it leaves the batch open
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("tr[data-batch='batch-b'] button:has-text('Pause')")
    page.wait_for_timeout(300)
    assert asked and asked[0].startswith("Pause batch batch-b?")
    assert Batch.objects.get(pk=world.batch_b.pk).status == "open"

    page.goto(f"{live_server.url}/accounts/profile/")
    page.click("#api-token button:has-text('Make a token')")
    key = page.locator("[data-new-token]").inner_text()
    assert Token.objects.get(user=staff).key == key
    page.goto(f"{live_server.url}/accounts/profile/")
    expect(page.locator("#api-token")).to_contain_text("You have a token")
    assert key not in page.content()
