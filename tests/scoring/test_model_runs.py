import json

import pytest
from django.core.management import CommandError, call_command

from aggregation.models import AggregationRun, ItemResult, RunStatus
from scoring import selectors, stats
from releases.models import Release
from scoring.models import ModelRun, Prediction, RunComparison, ScoreStatus
from scoring.services import InputErrors, model_run_create, model_run_score

from .conftest import UNAUDITED, jsonl, release_of


def upload(name, predictions, **kwargs):
    return model_run_create(name=name, model_name=name.upper(), lines=jsonl(predictions), source=f"{name}.jsonl", **kwargs)


def answers(release, overrides=None):
    """Right answers for every audited item, with `overrides` {key: letter}."""
    overrides = overrides or {}
    return [
        {"item_id": item.item_id, "prediction": overrides.get(key, item.answer)}
        for key, item in release.items()
        if key not in UNAUDITED
    ]


def test_release_labels_are_the_releases_own(release):
    # A newer aggregation changes nothing for a release already made: it is immutable.
    newer = AggregationRun.objects.create(status=RunStatus.SUCCEEDED)
    ItemResult.objects.create(run=newer, item=release["mi-trust"], batch=release["mi-trust"].batch, label="D",
                              posterior=0.8, n_judgments=3, retained=True)
    labels = selectors.release_labels(release_id=Release.objects.get(version="v1").pk)
    assert labels[release["mi-trust"].pk] == "C"
    assert labels[release["dropped"].pk] is None  # audited, not retained: not scored
    assert release["dropped-easy"].pk not in labels  # never audited for v1
    assert labels[release["mi-easy"].pk] == "B" and labels[release["mi-cf"].pk] == "NOTA"


def test_predictions_for_unaudited_items_are_refused(release, tmp_path):
    lines = jsonl(answers(release)) + [json.dumps({"item_id": release["dropped-easy"].item_id, "prediction": "D"})]
    with pytest.raises(InputErrors) as caught:
        model_run_create(name="all-items", model_name="All", lines=lines, source="p.jsonl")
    assert caught.value.errors == [
        f"p.jsonl:9: item_id: {release['dropped-easy'].item_id} was not audited for release v1: "
        "only its audited items are scored"
    ]
    assert not ModelRun.objects.exists()
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(CommandError, match="was not audited for release v1"):
        call_command("import_predictions", str(path), "--name", "cmd", "--model", "Cmd", "--release", "v1")


def test_a_run_is_scored_on_the_release_it_names(release):
    # Given a second release where mi-trust's label changed and esc-trust was dropped
    items = {k: v for k, v in release.items() if k not in UNAUDITED}
    v2 = release_of(items, unaudited=set(), dropped={"dropped", "esc-trust"}, version="v2")
    ReleaseItem = v2.items.model
    ReleaseItem.objects.filter(release=v2, item=release["mi-trust"]).update(label="D")
    on_v1 = model_run_score(run_id=upload("on-v1", answers(release), release="v1").pk)
    latest = model_run_score(run_id=upload("on-latest", answers(release)).pk)  # blank: the latest ready release
    assert on_v1.release.version == "v1" and on_v1.overall_rate == 1.0 and on_v1.scores["n_unreleased"] == 1
    assert latest.release == v2 and latest.scores["n_unreleased"] == 2
    assert latest.scores["overall"] == {**latest.scores["overall"], "n": 6, "correct": 5}  # mi-trust: C is wrong on v2
    # Runs on different releases are not compared
    assert not RunComparison.objects.exists()
    assert "different releases (v1, v2)" in selectors.runs_comparable(run_a=on_v1, run_b=latest)
    with pytest.raises(InputErrors, match="release: 'v9' is not a ready release \\(ready: v2, v1\\)"):
        upload("nowhere", answers(release), release="v9")


def test_no_release_no_scoring(db):
    from tests.factories import ItemFactory

    item = ItemFactory()
    with pytest.raises(InputErrors, match="no ready release to score on"):
        upload("early", [{"item_id": item.item_id, "prediction": "A"}])


def test_scoring_stores_rates_per_facet_and_leaves_unreleased_items_out(release):
    run = upload("model-a", answers(release, {"mi-belief": "A", "mi-prosp": "B", "esc-prosp": "B", "mi-cf": "A"}))
    run = model_run_score(run_id=run.pk)
    assert run.status == ScoreStatus.SUCCEEDED
    scores = run.scores
    assert scores["n_unreleased"] == 1
    assert scores["overall"]["n"] == 7 and scores["overall"]["correct"] == 3
    assert scores["overall"]["baseline"] == pytest.approx((6 * 0.25 + 0.2) / 7)
    assert scores["task"]["retrospective"] == {"n": 3, "correct": 2, "rate": 2 / 3, "baseline": 0.25}
    assert scores["task"]["prospective"]["rate"] == pytest.approx(1 / 4)
    assert scores["variant"]["counterfactual"] == {"n": 1, "correct": 0, "rate": 0.0, "baseline": 0.2}
    assert scores["variant"]["easy"]["rate"] == 1.0
    assert scores["domain"]["esc"]["rate"] == 0.5
    # every prospective item of the set was made for trust: 2 retrospective + 4 prospective
    assert scores["attribute"] == {
        "belief": {"n": 1, "correct": 0, "rate": 0.0, "baseline": 0.25},
        "trust": {"n": 6, "correct": 3, "rate": 0.5, "baseline": pytest.approx((5 * 0.25 + 0.2) / 6)},
    }
    assert Prediction.objects.filter(run=run, correct=None).count() == 1
    assert run.release.version == "v1"
    gap = run.stats["retrospective_vs_prospective"]
    assert gap["table"] == [[2, 1], [0, 2]]
    assert gap == stats.chi_square_gap(a_correct=2, a_wrong=1, b_correct=0, b_wrong=2)
    assert run.stats["easy_vs_hard"] == stats.mann_whitney_easy_hard(easy=[1], hard=[0, 0])


def test_scoring_twice_gives_the_same_result_and_comparisons_are_stored(release):
    a = model_run_score(run_id=upload("model-a", answers(release)).pk)
    b_run = upload("model-b", answers(release, {"mi-trust": "A", "esc-trust": "A", "mi-cf": "B"}))
    b = model_run_score(run_id=b_run.pk)
    again = model_run_score(run_id=b_run.pk)
    assert again.scores == b.scores and again.stats == b.stats
    stored = RunComparison.objects.get()
    assert (stored.run_a, stored.run_b) == (a, b)
    assert stored.result["table"] == [[4, 3], [0, 0]]
    assert stored.result["p_value"] == pytest.approx(0.25)  # exact: 2 · (½)³
    reverse = selectors.runs_compare(run_a=b, run_b=a)
    assert reverse["mcnemar"]["table"] == [[4, 0], [3, 0]] and reverse["stored"]
    assert reverse["mcnemar"]["rate_a"] == pytest.approx(4 / 7)


def test_upload_errors_are_all_or_nothing(release):
    lines = [
        json.dumps({"item_id": release["mi-trust"].item_id, "prediction": "C"}),
        json.dumps({"item_id": release["mi-trust"].item_id, "prediction": "C"}),
        json.dumps({"item_id": "unknown", "prediction": "A"}),
        json.dumps({"item_id": release["mi-belief"].item_id, "prediction": "E"}),
        json.dumps({"item_id": release["esc-trust"].item_id, "prediction": "NOTA"}),
        json.dumps({"item_id": release["mi-cf"].item_id, "prediction": "nota", "reasoning": 3}),
        "[1, 2]",
    ]
    with pytest.raises(InputErrors) as caught:
        model_run_create(name="bad", model_name="Bad", lines=lines, source="p.jsonl")
    assert caught.value.errors == [
        f"p.jsonl:2: item_id: {release['mi-trust'].item_id} already predicted on line 1",
        "p.jsonl:3: item_id: unknown item unknown",
        "p.jsonl:4: prediction: must be one of A, B, C, D, NOTA",
        "p.jsonl:5: prediction: NOTA is only shown for counterfactual items",
        "p.jsonl:6: reasoning: must be a string",
        "p.jsonl:7: record: must be a JSON object",
    ]
    assert not ModelRun.objects.exists()
    with pytest.raises(InputErrors, match="p.jsonl:1: file: no records"):
        model_run_create(name="empty", model_name="Empty", lines=[""], source="p.jsonl")
    upload("taken", answers(release))
    with pytest.raises(InputErrors, match="name: a run named 'taken' exists already"):
        upload("taken", answers(release))


def test_commands_upload_and_score(release, tmp_path, capsys):
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(jsonl(answers(release))))
    call_command("import_predictions", str(path), "--name", "cmd-model", "--model", "Cmd", "--json")
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["predictions"] == 8 and report["release"] == "v1"
    call_command("score_run", "cmd-model", "--json")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["status"] == "succeeded" and summary["overall"]["rate"] == 1.0
    with pytest.raises(CommandError, match="unknown run"):
        call_command("score_run", "nope")


def test_scoring_queries_do_not_grow_with_the_predictions(release, django_assert_max_num_queries):
    run = upload("model-a", answers(release))
    with django_assert_max_num_queries(14):
        model_run_score(run_id=run.pk)
