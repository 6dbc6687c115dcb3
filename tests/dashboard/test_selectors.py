import pytest

from dashboard import selectors
from dashboard.summaries import summaries_rebuild
from tests.factories import BatchFactory, ItemFactory, JudgmentFactory

pytestmark = pytest.mark.django_db


def test_progress_counts_judgments_and_item_states(world, django_assert_num_queries):
    # the batches' count, the page's batches, their tallies, all tallies' sums, the live claims, the last days
    with django_assert_num_queries(6):
        progress = selectors.progress_by_batch()
    a, b = progress["batches"]
    assert (a.name, a.items, a.done, a.needed) == ("batch-a", 6, 18, 18)
    assert (a.open, a.in_progress, a.complete, a.aggregated) == (0, 0, 0, 6)
    assert (b.name, b.items, b.done, b.needed) == ("batch-b", 2, 1, 6)
    assert (b.open, b.in_progress, b.complete, b.aggregated) == (1, 1, 0, 0)
    assert progress["overall"].done == 19 and progress["needed"] == 24
    assert a.eta_days == 0
    # Every judgment was made just now: the rate is all of them over one day.
    assert b.rate_per_day == pytest.approx(1.0)
    assert b.eta_days == pytest.approx(5.0)


def test_progress_queries_do_not_grow_with_batches(world, django_assert_num_queries):
    for n in range(5):
        ItemFactory(batch=BatchFactory(name=f"extra-{n}"))
    JudgmentFactory()
    summaries_rebuild()
    with django_assert_num_queries(6):
        progress = selectors.progress_by_batch()
    assert len(progress["batches"]) == 8


def test_throughput_by_day_is_cumulative(world, django_assert_num_queries):
    from datetime import timedelta

    from django.utils import timezone

    from verification.models import BatchDayTally

    with django_assert_num_queries(1):
        days = selectors.throughput_by_day(days=7)
    assert len(days) == 7
    assert days[-1]["judgments"] == 19 and days[-1]["cumulative"] == 19
    now = timezone.now()
    for back, n in ((40, 5), (8, 2), (6, 4)):  # two days before the window, one in it
        BatchDayTally.objects.create(batch=world.batch_b, day=(now - timedelta(days=back)).date(), judgments=n,
                                     first_at=now - timedelta(days=back))
    days = selectors.throughput_by_day(days=7)
    assert [d["judgments"] for d in days] == [4, 0, 0, 0, 0, 0, 19]
    assert [d["cumulative"] for d in days] == [11, 11, 11, 11, 11, 11, 30]


def test_agreement_uses_latest_succeeded_run(world, django_assert_num_queries):
    with django_assert_num_queries(2):  # the current results' count (from an index), their page
        agreement = selectors.agreement_overview()
    [row] = agreement["batches"]
    assert row["batch"] == "batch-a" and row["run"] == world.run2.id
    assert row["ac1"] == 0.91 and row["kappa"] == 0.52 and row["alpha"] == 0.55
    assert not row["flagged"]
    groups = {(g["task"], g["domain"]): g for g in agreement["groups"]}
    assert groups[("retrospective", "mi")]["ac1"] == 0.95
    assert groups[("prospective", "esc")]["flagged"] is True  # 0.41 < 0.6


def test_agreement_flags_low_batches(world, settings):
    settings.DIALTOM_AC1_FLAG_THRESHOLD = 0.95
    assert selectors.agreement_overview()["batches"][0]["flagged"] is True


def test_retention_tables_and_change_between_runs(world, django_assert_num_queries):
    with django_assert_num_queries(2):  # the current cells, the last runs' retention (aggregation.summaries)
        retention = selectors.retention_overview()
    assert retention["overall"] == {"total": 6, "retained": 4, "rate": pytest.approx(4 / 6, abs=1e-6)}
    task = {r["group"]: (r["retained"], r["total"]) for r in retention["task"]}
    assert task == {"prospective": (1, 2), "retrospective": (3, 4)}
    domain = {r["group"]: (r["retained"], r["total"]) for r in retention["domain"]}
    assert domain == {"esc": (2, 3), "mi": (2, 3)}
    attribute = {r["group"]: (r["retained"], r["total"]) for r in retention["attribute"]}
    # the two prospective items (esc) were made for trust: the trust row counts them beside mi-trust
    assert attribute == {"belief": (1, 1), "desire": (1, 1), "emotion": (0, 1), "trust": (2, 3)}
    trust = next(r for r in retention["attribute"] if r["group"] == "trust")
    assert trust["retrospective"] == {"retained": 1, "total": 1, "rate": 1.0}
    assert trust["prospective"] == {"retained": 1, "total": 2, "rate": 0.5}
    emotion = next(r for r in retention["attribute"] if r["group"] == "emotion")
    assert emotion["prospective"] == {"retained": 0, "total": 0, "rate": None}
    latest, first = retention["runs"]
    assert (latest["run"], latest["retained"], first["retained"]) == (world.run2.id, 4, 3)
    assert latest["change"] == pytest.approx(1 / 6) and latest["change_batches"] == 1
    assert first["change"] is None and first["change_batches"] == 0


def test_retention_counts_audited_items_and_the_change_compares_like_with_like(world):
    """A later run over batch-a and a barely audited batch-b: overall retention leaves batch-b's
    unjudged item out, and the change is batch-a's against batch-a's, not a mix."""
    from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus

    run3 = AggregationRun.objects.create(status=RunStatus.SUCCEEDED)
    run3.batches.add(world.batch_a, world.batch_b)
    BatchResult.objects.create(run=run3, batch=world.batch_a, items=6, judgments=18, retained=3, ac1=0.9)
    BatchResult.objects.create(run=run3, batch=world.batch_b, items=2, judgments=1, retained=0, ac1=None)
    for key in ("mi-trust", "mi-belief", "mi-emotion", "esc-desire", "esc-prospective-1", "esc-prospective-2"):
        ItemResult.objects.create(run=run3, item=world.items[key], batch=world.batch_a, label="A", posterior=0.9,
                                  n_judgments=3, retained=key in ("mi-trust", "mi-belief", "esc-desire"))
    ItemResult.objects.create(run=run3, item=world.items["b-1"], batch=world.batch_b, label="", posterior=0.3,
                              n_judgments=1, retained=False)
    ItemResult.objects.create(run=run3, item=world.items["b-2"], batch=world.batch_b, label="", posterior=0.0,
                              n_judgments=0, retained=False)  # never audited
    summaries_rebuild()
    retention = selectors.retention_overview()
    assert retention["overall"] == {"total": 7, "retained": 3, "rate": pytest.approx(3 / 7, abs=1e-6)}
    latest = retention["runs"][0]
    assert (latest["run"], latest["total"], latest["retained"]) == (run3.id, 7, 3)
    # batch-a went from 4 / 6 to 3 / 6; batch-b, new, is not part of the change
    assert latest["change"] == pytest.approx(3 / 6 - 4 / 6) and latest["change_batches"] == 1


def test_verifier_stats(world, django_assert_num_queries):
    with django_assert_num_queries(4):
        people = selectors.verifier_stats()
    by_name = {p["username"]: p for p in people}
    v1, v3 = by_name["verifier-1"], by_name["verifier-3"]
    assert v1["judgments"] == 7 and v3["judgments"] == 6
    assert v1["median_seconds"] == 10.0 and v3["median_seconds"] == 30.0
    assert v1["none_share"] == pytest.approx(1 / 7)
    assert v3["top_letter"] == "A" and v3["top_letter_share"] == 1.0
    assert v1["ds_accuracy"] == pytest.approx(0.9) and v3["ds_accuracy"] == pytest.approx(0.3)
    assert v1["gold_accuracy"] is None
    assert v3["outliers"] == []  # fewer than 20 judgments: not judged yet


def test_verifier_outliers_and_gold_accuracy(db, django_assert_num_queries):
    batch = BatchFactory(name="gold")
    fast = JudgmentFactory(item=ItemFactory(batch=batch, is_gold=True, answer="C"), label="C", seconds_spent=1.0).verifier
    for n in range(24):
        JudgmentFactory(item=ItemFactory(batch=batch, is_gold=n < 3, answer="C"), verifier=fast, label="A",
                        displayed_label="A", seconds_spent=1.0)
    summaries_rebuild()
    [row] = [p for p in selectors.verifier_stats() if p["username"] == fast.username]
    assert row["gold_judgments"] == 4 and row["gold_accuracy"] == pytest.approx(0.25)
    assert "too fast" in row["outliers"] and "one-letter bias (A)" in row["outliers"]


def test_crowd_worker_stats(world, django_assert_num_queries):
    with django_assert_num_queries(2):
        crowd = {c["username"]: c for c in selectors.crowd_worker_stats()}
    assert crowd["crowd-1"] == {"username": "crowd-1", "written": 1, "sent_back": 0}
    assert crowd["crowd-2"] == {"username": "crowd-2", "written": 1, "sent_back": 1}
    assert crowd["crowd-3"] == {"username": "crowd-3", "written": 0, "sent_back": 0}


def test_adaptive_overlap_spent_vs_fixed_k_max_and_undecided(world, client, staff, django_assert_num_queries):
    # Given batch-b opened adaptive 2..4 (two items, one judgment so far, no refresh yet)
    from django.urls import reverse

    from verification.models import AdaptiveOverlap, QueueSlot
    from verification.services import batch_queue_sync

    batch_queue_sync(batch=world.batch_b)
    adaptive = AdaptiveOverlap.objects.create(batch=world.batch_b, k_min=2, k_max=4, policy={"max_risk": 0.03})
    with django_assert_num_queries(2):
        [row] = selectors.adaptive_overlap_by_batch()
    assert (row["batch"], row["items"], row["judgments"], row["fixed_k_max_judgments"]) == ("batch-b", 2, 1, 8)
    assert row["share_of_fixed"] == 1 / 8 and row["undecided"] == 2 and not row["settled"]

    # When a refresh has asked one more judgment of one item, then when the batch settles
    AdaptiveOverlap.objects.filter(pk=adaptive.pk).update(rounds=1, undecided=1)
    assert selectors.adaptive_overlap_by_batch()[0]["undecided"] == 1
    AdaptiveOverlap.objects.filter(pk=adaptive.pk).update(rounds=2, undecided=0, settled=True)
    assert selectors.adaptive_overlap_by_batch()[0]["undecided"] == 0
    assert QueueSlot.objects.filter(batch=world.batch_b).count() == 2

    # Then the dashboard's progress section shows it
    client.force_login(staff)
    html = client.get(reverse("dashboard:fragment", args=["progress"])).content.decode()
    assert 'id="adaptive-table"' in html and '<td class="spent">1</td><td class="cost">8</td>' in html
    assert "0 (settled)" in html
    # …on the page of batches it is in, not on another (the adaptive table is paged with the progress table)
    assert selectors.adaptive_overlap_by_batch(batch_ids=[world.batch_a.id]) == []
    from dashboard import selectors as dashboard_selectors

    dashboard_selectors.PAGE_SIZE, size = 1, dashboard_selectors.PAGE_SIZE
    try:
        first = client.get(reverse("dashboard:fragment", args=["progress"])).content.decode()
        second = client.get(reverse("dashboard:fragment", args=["progress"]) + "?page=2").content.decode()
    finally:
        dashboard_selectors.PAGE_SIZE = size
    assert 'id="adaptive-table"' not in first and 'id="adaptive-table"' in second


def test_staffing_shows_what_each_batch_needs_and_its_exposed_judgments(django_assert_num_queries):
    from tests.verification.factories import context_with_items, open_batch, verifiers

    people = verifiers(2)
    batch = open_batch(name="short-b01", n_items=0, overlap=3, verifiers=people)
    context_with_items(batch=batch, context_id="mi-s0001-w00")
    item = batch.items.filter(task="retrospective").first()
    JudgmentFactory(item=item, verifier=people[0], exposed=True)
    JudgmentFactory(item=item, verifier=people[1])
    summaries_rebuild()
    with django_assert_num_queries(6):  # + the reveals across windows (issue 20) and the items waiting for a usable judgment
        rows = selectors.staffing_by_batch()
    assert rows == [{"batch": "short-b01", "verifiers_needed": 12, "verifiers_available": 2, "short": True,
                     "judgments": 2, "exposed": 1, "exposed_share": 0.5, "waiting_for_usable": 0}]
