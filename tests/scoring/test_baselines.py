import json

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Pool, Role
from releases.models import Release
from scoring.models import BaselineRun, ScoreStatus
from scoring.selectors import pool_correctness
from scoring.services import InputErrors, baseline_pool_create, baseline_run_create, baseline_run_score
from tests.factories import JudgmentFactory, StaffFactory, UserFactory


@pytest.fixture
def lay_pool(db):
    UserFactory(username="lay1", role=Role.VERIFIER)
    UserFactory(username="lay2", role=Role.VERIFIER)
    return baseline_pool_create(name="lay", usernames=["lay1", "lay2"])


def test_participants_are_kept_out_of_aggregation(lay_pool):
    people = list(lay_pool.members.all())
    assert [p.username for p in people] == ["lay1", "lay2"]
    assert all(p.role == Role.PARTICIPANT and p.excluded_from_aggregation for p in people)
    with pytest.raises(InputErrors, match="unknown user"):
        baseline_pool_create(name="lay", usernames=["ghost"])
    StaffFactory(username="boss")
    with pytest.raises(InputErrors, match="staff cannot be baseline participants"):
        baseline_pool_create(name="lay", usernames=["boss"])


def test_pool_correctness_against_released_labels(release, lay_pool):
    lay1, lay2 = lay_pool.members.all()
    verifier = UserFactory(username="expert1")  # not in the pool: never counted
    for item, label in [(release["mi-trust"], "C"), (release["mi-belief"], "A"), (release["dropped"], "A"),
                        (release["mi-cf"], "NOTA")]:
        JudgmentFactory(item=item, verifier=lay1, label=label, batch=item.batch or release["mi-trust"].batch)
    for item, label in [(release["mi-trust"], "NONE"), (release["esc-prosp"], "A")]:
        JudgmentFactory(item=item, verifier=lay2, label=label)
    JudgmentFactory(item=release["mi-belief"], verifier=verifier, label="B")
    JudgmentFactory(item=release["dropped-easy"], verifier=lay2, label="D",
                    batch=release["dropped"].batch)  # never audited for v1: left out
    result = pool_correctness(pool=lay_pool, release_id=Release.objects.get(version="v1").pk)
    scores = result["scores"]
    assert scores["n_unreleased"] == 1 and scores["n_unaudited"] == 1
    assert (scores["overall"]["n"], scores["overall"]["correct"]) == (5, 3)
    assert scores["variant"]["counterfactual"]["baseline"] == 0.2
    assert scores["task"]["retrospective"] == {"n": 3, "correct": 1, "rate": 1 / 3, "baseline": 0.25}
    assert result["by_person"]["lay1"]["rate"] == pytest.approx(2 / 3)
    assert result["by_person"]["lay2"]["rate"] == 0.5
    assert "expert1" not in result["by_person"]


def test_baseline_run_stores_the_result(release, lay_pool, django_capture_on_commit_callbacks):
    lay1 = lay_pool.members.first()
    JudgmentFactory(item=release["mi-trust"], verifier=lay1, label="C")
    with django_capture_on_commit_callbacks() as callbacks:
        run = baseline_run_create(pool=lay_pool)
    assert len(callbacks) == 1  # the scoring job is queued after commit
    run = baseline_run_score(run_id=run.pk)
    assert run.status == ScoreStatus.SUCCEEDED and run.overall_rate == 1.0 and run.release.version == "v1"


def test_baseline_command(release, lay_pool, capsys, django_capture_on_commit_callbacks):
    UserFactory(username="lay3")
    with django_capture_on_commit_callbacks():
        call_command("baseline", "lay", "--members", "lay3", "--score", "--release", "v1", "--json")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["members"] == 3 and BaselineRun.objects.filter(pk=summary["baseline_run"]).exists()
    assert summary["release"] == "v1"
    assert Pool.objects.get(name="lay").members.count() == 3


def test_a_baseline_needs_a_release(lay_pool):
    with pytest.raises(CommandError, match="no ready release to score on"):
        call_command("baseline", "lay", "--score")
    assert not BaselineRun.objects.exists()


def test_participants_answer_through_the_same_audit_queue(lay_pool):
    """Human baselines use the verifiers' audit form and API: a participant claims, answers
    in the displayed order, and the judgment is stored in the original letters."""
    import uuid

    from tests.verification.factories import open_batch
    from verification.services import item_claim_next, judgment_submit

    lay1 = lay_pool.members.get(username="lay1")
    batch = open_batch(name="baseline-b01", n_items=2, overlap=1, pool="lay")
    claim = item_claim_next(verifier=lay1, batch=batch)
    assert claim is not None
    displayed = "ABCD"[claim.display_order.index("C")]
    judgment = judgment_submit(verifier=lay1, claim_id=claim.pk, choice=displayed, idempotency_key=uuid.uuid4()).judgment
    assert judgment.label == "C" and judgment.verifier.excluded_from_aggregation
    # Scored on a release that audited the item (by verifiers; the participant is never aggregated)
    from releases.models import Release, ReleaseItem, ReleaseStatus

    v1 = Release.objects.create(version="v1", status=ReleaseStatus.READY)
    ReleaseItem.objects.create(release=v1, item=judgment.item, label="C", posterior=0.9, n_judgments=3, retained=True)
    assert pool_correctness(pool=lay_pool, release_id=v1.pk)["scores"]["overall"]["n"] == 1
