import json
import statistics
from io import StringIO

from django.core.management import call_command

from accounts.models import User
from aggregation.models import AggregationRun, BatchResult, RunStatus
from annotation.models import Batch, Item
from releases.models import Release
from review.models import Adjudication, Flag
from scoring.models import ModelRun
from verification.models import Judgment
from verification.selectors import batches_for_verifier, queue_progress_for_batches


def _load_demo() -> dict:
    out = StringIO()
    call_command("load_demo", "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_demo_looks_like_a_real_project(db):
    summary = _load_demo()

    assert {"admin", "verifier", "crowd", "reader"} <= set(summary["people"])
    assert len(summary["people"]) == 4 + 22
    assert User.objects.get(username="admin").check_password(summary["password"])
    assert Item.objects.count() == 30 + 150  # the sample release (6 retrospective, 9 prospective, 6 easy, 9 counterfactual) + six items per segmented context
    assert Judgment.objects.count() == summary["judgments_simulated"] > 400
    run = AggregationRun.objects.get(pk=summary["aggregation_run"])
    assert run.status == RunStatus.SUCCEEDED
    # A few weeks of history at a human pace, gold items answered, one batch that needs attention.
    days = {j.created_at.date() for j in Judgment.objects.all()}
    assert (max(days) - min(days)).days >= 21 and len(days) >= 15
    assert 15 < statistics.median(Judgment.objects.values_list("seconds_spent", flat=True)) < 90
    assert Judgment.objects.filter(item__is_gold=True).count() >= 10
    assert Judgment.objects.exclude(comment="").exists()
    ac1 = {r.batch.name: r.ac1 for r in BatchResult.objects.filter(run=run).select_related("batch")}
    assert ac1["esc-b01"] < 0.4 < min(ac1["mi-b01"], ac1["pfg-b01"])
    # Flags waiting for staff, a decision carried into release v1, two scored models.
    assert Flag.objects.filter(status="open").count() >= 2
    release = Release.objects.get(version=summary["release"])
    assert release.is_ready and release.n_items > 100
    [decision] = Adjudication.objects.all()
    assert release.manifest["adjudications"][0]["item_id"] == decision.item.item_id
    assert sorted(ModelRun.objects.values_list("status", flat=True)) == ["succeeded", "succeeded"]
    # Contexts wait for `crowd` to write references.
    from references.models import ReferenceSet

    assert ReferenceSet.objects.get(name=summary["reference_set"]).members.count() == 6


def test_demo_leaves_the_verifier_real_work_and_no_startable_empty_batch(db):
    _load_demo()
    verifier = User.objects.get(username="verifier")

    rows = {r["batch"]: r for r in queue_progress_for_batches(verifier=verifier, batches=batches_for_verifier(verifier=verifier))}

    assert not Judgment.objects.filter(verifier=verifier).exists()
    live = Batch.objects.exclude(name__in=["mi-b01", "pfg-b01", "esc-b01"])
    assert set(rows) == set(live.values_list("name", flat=True)) and "dialtom-mi-retrospective" in rows
    for batch in live:  # one slot of three left on each item
        assert rows[batch.name]["assigned"] == batch.items.filter(is_gold=False).count() > 0
    assert Batch.objects.get(name="mi-b01").status == "closed"  # the finished history leaves the list


def test_demo_is_idempotent(db):
    first = _load_demo()
    counts = (Item.objects.count(), Judgment.objects.count(), User.objects.count(), Release.objects.count(),
              ModelRun.objects.count(), Flag.objects.count())

    second = _load_demo()

    assert (Item.objects.count(), Judgment.objects.count(), User.objects.count(), Release.objects.count(),
            ModelRun.objects.count(), Flag.objects.count()) == counts
    assert second["judgments_simulated"] == 0 and first["judgments_simulated"] > 0
