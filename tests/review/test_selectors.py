"""The staff reads of the review app, on the hand-checked world of tests/dashboard/world.py."""
import json

import pytest

from releases import services as release_services
from review import selectors, services, verifier_agreement
from tests.dashboard.world import make_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    return make_world()


def test_item_detail_shows_judgments_as_shown_and_stored_the_aggregate_and_qualities(world, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        detail = selectors.item_detail(item_id="mi-trust")

    assert detail["item"].answer == "C"
    assert detail["result"].label == "C" and detail["result"].posterior == 0.95 and detail["result"].run_id == world.run2.id
    rows = {r["verifier"]: r for r in detail["judgments"]}
    assert rows["verifier-1"]["stored"] == "C" and rows["verifier-1"]["matches_aggregate"]
    assert rows["verifier-3"]["stored"] == "A" and not rows["verifier-3"]["matches_aggregate"]
    assert [rows[v]["quality"]["accuracy"] for v in ("verifier-1", "verifier-2", "verifier-3")] == [0.9, 0.8, 0.3]
    assert detail["context"][0]["speaker"] == "counselor"


def test_item_detail_of_an_unknown_item_is_none(world):
    assert selectors.item_detail(item_id="nope") is None


def test_verifier_agreement_with_consensus_and_pairwise(world):
    data = verifier_agreement.verifier_agreement(batch="batch-a", sort="consensus")

    rows = {r["username"]: r for r in data["verifiers"]}
    # Consensus (run 2's labels): verifiers 1 and 2 give the intended answer, which is the DS
    # label on the 4 retained items and differs from "NONE" on the other 2; verifier-1 says
    # NONE on esc-prospective-2 (DS label NONE there) -> 5 of 6; verifier-2 4 of 6.
    assert rows["verifier-1"]["consensus"] == pytest.approx(5 / 6)
    assert rows["verifier-2"]["consensus"] == pytest.approx(4 / 6)
    # verifier-3 always says A: right on mi-belief and esc-prospective-1 only.
    assert rows["verifier-3"]["consensus"] == pytest.approx(2 / 6)
    # Pairwise: v1 and v2 agree on 5 of 6 items, v1/v3 and v2/v3 on the items whose answer is A.
    assert rows["verifier-2"]["pairwise"] == pytest.approx((5 + 2) / 12)
    assert [r["username"] for r in data["verifiers"]] == ["verifier-1", "verifier-2", "verifier-3"]
    assert rows["verifier-1"]["ds_accuracy"] == 0.9
    assert [(p["a"], p["b"], p["rate"]) for p in data["pairs_lowest"]][0] == ("verifier-1", "verifier-3", pytest.approx(2 / 6))
    assert sum(w["n"] for w in rows["verifier-1"]["weekly"]) == 6


def test_verifier_agreement_sorts_and_filters(world):
    ascending = verifier_agreement.verifier_agreement(sort="median_seconds", descending=False)
    assert [r["username"] for r in ascending["verifiers"]] == ["verifier-1", "verifier-2", "verifier-3"]
    by_count = verifier_agreement.verifier_agreement(min_judgments=7)
    assert [r["username"] for r in by_count["verifiers"]] == ["verifier-1"]  # 6 in batch-a + 1 in batch-b
    assert verifier_agreement.verifier_agreement(batch="nope")["verifiers"] == []


def test_the_release_honours_adjudications_and_lists_them(world, staff, settings, tmp_path):
    settings.RELEASE_ROOT = tmp_path / "releases"
    services.adjudication_record(item_id="mi-trust", decision="drop", reason="options B and C overlap", staff=staff)
    services.adjudication_record(item_id="mi-emotion", decision="keep", reason="the aggregate is wrong: B is right", staff=staff)

    release = release_services.release_build(release_id=release_services.release_create(version="v1", build=False).id)

    rows = [json.loads(line) for line in (tmp_path / "releases" / "v1" / "items.jsonl").read_text().splitlines()]
    answers = {r["item_id"]: r["answer"] for r in rows}
    assert "mi-trust" not in answers
    assert answers["mi-emotion"] == "B"  # the intended answer, not the DS label NONE
    assert set(answers) == {"esc-desire", "esc-prospective-1", "mi-belief", "mi-emotion"}
    listed = {a["item_id"]: a for a in release.manifest["adjudications"]}
    assert listed["mi-trust"]["decision"] == "drop" and listed["mi-trust"]["decided_by"] == staff.username
    assert listed["mi-emotion"]["reason"] == "the aggregate is wrong: B is right"


def test_only_the_latest_adjudication_is_in_force(world, staff, settings, tmp_path):
    settings.RELEASE_ROOT = tmp_path / "releases"
    services.adjudication_record(item_id="mi-trust", decision="drop", reason="overlap", staff=staff)
    services.adjudication_record(item_id="mi-trust", decision="keep", reason="no overlap after all", staff=staff)

    assert [a["decision"] for a in selectors.adjudications_in_force()] == ["keep"]
    release = release_services.release_build(release_id=release_services.release_create(version="v2", build=False).id)
    assert release.n_items == 4


def test_the_decision_in_force_is_the_latest_by_time_then_id(world, staff):
    """review_decision_in_force (a view): the latest adjudication of each item by decided_at, ties
    by id; `adjudicated` applies it to results and `adjudications_in_force` lists it."""
    from datetime import timedelta

    from django.utils import timezone

    from aggregation.selectors import current_item_results
    from review.models import Adjudication, DecisionInForce

    a = services.adjudication_record(item_id="mi-trust", decision="drop", reason="first", staff=staff)
    b = services.adjudication_record(item_id="mi-trust", decision="keep", reason="second", staff=staff)
    c = services.adjudication_record(item_id="mi-emotion", decision="keep", reason="only", staff=staff)
    now = timezone.now()
    Adjudication.objects.filter(pk=a.pk).update(decided_at=now)  # the earlier row is the later decision
    Adjudication.objects.filter(pk=b.pk).update(decided_at=now - timedelta(hours=1))
    in_force = dict(DecisionInForce.objects.values_list("item__item_id", "adjudication_id"))
    assert in_force == {"mi-trust": a.pk, "mi-emotion": c.pk}
    results = {r.item.item_id: r for r in selectors.adjudicated(current_item_results()).select_related("item")}
    assert (results["mi-trust"].adjudication, results["mi-trust"].released) == ("drop", False)
    assert results["mi-emotion"].adjudication == "keep" and results["mi-emotion"].released is True
    assert results["mi-emotion"].released_label == results["mi-emotion"].item.answer
    assert {r.adjudication for name, r in results.items() if name not in in_force} == {None}

    Adjudication.objects.filter(pk=b.pk).update(decided_at=now)  # the same moment: the larger id is in force
    assert DecisionInForce.objects.get(item__item_id="mi-trust").decision == "keep"
    assert [(x["item_id"], x["reason"]) for x in selectors.adjudications_in_force()] == [
        ("mi-emotion", "only"), ("mi-trust", "second")]


def test_items_search_filters(world, staff):
    services.adjudication_record(item_id="mi-trust", decision="drop", reason="x", staff=staff)
    assert [r["item"].item_id for r in selectors.items_search(only="adjudicated")] == ["mi-trust"]
    assert [r["item"].item_id for r in selectors.items_search(only="not_retained")] == ["esc-prospective-2", "mi-emotion"]
    assert [r["item"].item_id for r in selectors.items_search(q="b-", batch="batch-b")] == ["b-1", "b-2"]
    assert selectors.items_search(q="mi-trust")[0]["decision"] == "drop"
