import json
import re
import statistics
from io import StringIO

from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

from accounts.models import User
from aggregation.models import AggregationRun, BatchResult, RunStatus
from annotation.models import Batch, Item
from releases.models import Release
from review.models import Adjudication, Flag
from scoring.models import ModelRun
from verification.models import Claim, Judgment, QueueSlot
from verification.selectors import batches_for_verifier, queue_progress_for_batches


HISTORY = ["mi-b01", "pfg-b01", "esc-b01"]


def _load_demo() -> dict:
    out = StringIO()
    call_command("load_demo", "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _answer_to_the_end(client, verifier, batch_name) -> list[str]:
    """Open the batch's audit page and answer what it serves until it serves nothing: the pages, in order."""
    pages = []
    for _ in range(100):
        page = client.get(reverse("verification:audit", args=[batch_name])).content.decode()
        claim = Claim.objects.filter(verifier=verifier, batch__name=batch_name, status="active").first()
        if claim is None:
            return pages
        pages.append(page)
        key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
        client.post(reverse("verification:answer", args=[batch_name]),
                    {"claim": claim.pk, "idempotency_key": key, "action": "submit", "choice": "A"})
    raise AssertionError(f"{batch_name} never ran out")


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


def test_demo_shows_staff_an_outlier_and_flags_from_four_weeks(db, client):
    _load_demo()
    client.force_login(User.objects.get(username="admin"))

    # People: sami, careless and too fast, is flagged on the dashboard and low on agreement per verifier.
    dashboard = client.get(reverse("dashboard:fragment", args=["people"])).content.decode()
    flagged = re.findall(r'<tr data-verifier="([^"]+)" class="flagged">', dashboard)
    assert flagged == ["sami"]
    assert "too fast" in dashboard.split('data-verifier="sami"')[1].split("</tr>")[0]
    agreement = client.get(reverse("review:verifiers")).content.decode()
    sami = agreement.split('<tr data-verifier="sami">')[1].split("</tr>")[0]
    assert 'class="low"' in sami
    assert agreement.count('class="low"') <= 4  # an outlier among 22, not the norm

    # Flags over the four weeks: the older ones handled, the recent ones waiting on the flags page.
    days = sorted({f.created_at.date() for f in Flag.objects.all()})
    assert (days[-1] - days[0]).days >= 21 and len(days) >= 5
    assert {f.item.batch.name for f in Flag.objects.select_related("item__batch")} >= set(HISTORY)
    handled = Flag.objects.exclude(status="open")
    assert handled.exists() and all(f.handled_at > f.created_at for f in handled)
    open_flags = list(Flag.objects.filter(status="open").order_by("created_at"))
    assert (open_flags[-1].created_at - open_flags[0].created_at).days >= 7
    page = client.get(reverse("review:flags")).content.decode()
    for flag in open_flags:
        assert f"{flag.created_at:%Y-%m-%d}" in page


def test_demo_leaves_the_verifier_retrospective_and_prospective_work_and_a_dialogue_that_folds(db, client):
    _load_demo()
    verifier = User.objects.get(username="verifier")
    client.force_login(verifier)
    live = Batch.objects.exclude(name__in=HISTORY)

    def progress():
        return {r["batch"]: r for r in queue_progress_for_batches(verifier=verifier, batches=batches_for_verifier(verifier=verifier))}

    # Every live batch has work for `verifier`, and only live ones are listed.
    rows = progress()
    assert not Judgment.objects.filter(verifier=verifier).exists()
    assert set(rows) == set(live.values_list("name", flat=True)) >= {"dialtom-mi-retrospective", "dialtom-mi-prospective", "pfg-b02"}
    assert all(r["assigned"] > 0 and r["held_back"] == 0 for r in rows.values())
    left = QueueSlot.objects.filter(batch__in=live, taken__lt=F("needed"))
    assert set(left.values_list("taken", "needed")) == {(2, 3)}  # two of three judgments in, one slot for `verifier`
    assert Batch.objects.get(name="mi-b01").status == "closed"  # the finished history leaves the list

    # Answer every retrospective question there is, to the end...
    retrospective = [b.name for b in live.order_by("name") if not b.items.exclude(task="retrospective").exists()]
    assert retrospective == ["dialtom-mi-retrospective", "pfg-b02"]
    pages = {name: _answer_to_the_end(client, verifier, name) for name in retrospective}
    assert all(pages.values())
    # ... pfg-b02 asks six questions a dialogue: from the second on, the dialogue folds.
    folded = ['data-dialogue-again' in page for page in pages["pfg-b02"]]
    assert folded == [False, True, True, True, True, True] * 3
    assert "Same dialogue as the previous question: question 2 of 6" in pages["pfg-b02"][1]

    # ... and the prospective batches still serve items: their dialogue was never read.
    rows = progress()
    for name in ["dialtom-mi-prospective", "dialtom-mi-counterfact", "dialtom-pfg-prospective-easy"]:
        assert rows[name]["done"] < rows[name]["assigned"], rows[name]
        page = client.get(reverse("verification:audit", args=[name])).content.decode()
        assert "Mental-state profile" in page
        assert Claim.objects.filter(verifier=verifier, batch__name=name, status="active").exists()
    listing = client.get(reverse("verification:batches")).content.decode()
    assert "data-empty" not in listing


def test_demo_is_idempotent(db):
    first = _load_demo()
    counts = (Item.objects.count(), Judgment.objects.count(), User.objects.count(), Release.objects.count(),
              ModelRun.objects.count(), Flag.objects.count())

    second = _load_demo()

    assert (Item.objects.count(), Judgment.objects.count(), User.objects.count(), Release.objects.count(),
            ModelRun.objects.count(), Flag.objects.count()) == counts
    assert second["judgments_simulated"] == 0 and first["judgments_simulated"] > 0
