"""What staff meet on the way (issue 21, item 11): counts that say what they count, a run
that asks which batches and confirms, Pause and Close confirmed, an AC1 from too few items
marked, the retention funnel per task."""
import re

import pytest
from django.urls import reverse

from aggregation.models import AggregationRun, BatchResult
from dashboard import selectors

pytestmark = pytest.mark.django_db


def test_the_run_form_lists_audited_batches_with_the_complete_ones_ticked(client, staff, world):
    from tests.factories import BatchFactory, ItemFactory

    ItemFactory(batch=BatchFactory(name="batch-idle"))  # no judgment: nothing to aggregate there
    client.force_login(staff)
    html = client.get(reverse("dashboard:fragment", args=["run"])).content.decode()
    boxes = dict(re.findall(r'<input type="checkbox" name="batch" value="(\d+)"( checked)?>', html))
    # batch-a has every judgment it needs (6 items × 3), batch-b 1 of 6: offered, not ticked
    assert boxes == {str(world.batch_a.id): " checked", str(world.batch_b.id): ""}
    assert "Start an aggregation run…" in html


def test_a_run_starts_only_on_the_batches_confirmed(client, staff, world, django_capture_on_commit_callbacks):
    client.force_login(staff)
    page = client.post(reverse("dashboard:aggregation-start"), {"batch": [world.batch_b.id]}).content.decode()
    assert "Start an aggregation run?" in page and "batch-b" in page and "not complete yet" in page
    assert "batch-a" not in page
    with django_capture_on_commit_callbacks():
        client.post(reverse("dashboard:aggregation-start"), {"batch": [world.batch_b.id], "confirm": "yes"})
    run = AggregationRun.objects.get(trigger="dashboard")
    assert list(run.batches.values_list("name", flat=True)) == ["batch-b"]
    # nothing ticked: nothing starts, and the page says why
    response = client.post(reverse("dashboard:aggregation-start"), {"confirm": "yes"}, follow=True)
    assert "Choose at least one batch" in response.content.decode()
    assert AggregationRun.objects.filter(trigger="dashboard").count() == 1


def test_pause_and_close_ask_to_confirm(client, staff, world):
    client.force_login(staff)
    html = client.get(reverse("dashboard:fragment", args=["progress"])).content.decode()
    assert 'hx-confirm="Pause batch batch-a?' in html and 'hx-confirm="Close batch batch-a?' in html


def test_counts_say_what_they_count(client, staff, world):
    client.force_login(staff)
    html = client.get(reverse("dashboard:index")).content.decode()
    assert "judgments toward the target" in html and 'id="progress-counts"' in html
    people = client.get(reverse("dashboard:fragment", args=["people"])).content.decode()
    assert "Judgments <small>(all, gold included)</small>" in people
    review = client.get(reverse("review:verifiers")).content.decode()
    assert "<small>(gold left out)</small>" in review


def test_an_ac1_from_too_few_items_is_marked_not_given_an_interval(client, staff, world):
    # the latest run's result on batch-a: 3 items, an interval of width 0
    BatchResult.objects.filter(run=world.run2, batch=world.batch_a).update(items=3, ac1=1.0, ac1_ci_low=1.0, ac1_ci_high=1.0)
    overview = selectors.agreement_overview()
    assert [r["too_few"] for r in overview["batches"]] == [True]
    assert {(g["task"], g["too_few"]) for g in overview["groups"]} == {("retrospective", True), ("prospective", True)}
    client.force_login(staff)
    html = client.get(reverse("dashboard:fragment", args=["agreement"])).content.decode()
    assert "data-too-few>n too small<" in html and "[1.000, 1.000]" not in html


def test_retention_funnel_per_task(world, django_assert_num_queries):
    with django_assert_num_queries(2):
        funnel = selectors.retention_funnel()
    rows = {r["task"]: [s["n"] for s in r["steps"]] for r in funnel}
    # imported → audited (≥ 1 judgment) → aggregated (current run) → retained
    assert rows == {"retrospective": [6, 5, 4, 3], "prospective": [2, 2, 2, 1]}


def test_the_dashboard_shows_the_funnel(client, staff, world):
    client.force_login(staff)
    html = client.get(reverse("dashboard:fragment", args=["retention"])).content.decode()
    row = re.search(r'<tr data-task="retrospective">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'data-step="(\w+)">(\d+)', row) == [("imported", "6"), ("audited", "5"), ("aggregated", "4"), ("retained", "3")]
