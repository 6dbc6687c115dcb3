"""The adaptive-overlap policy (aggregation.overlap) and its replay (overlap_simulate): no database."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from aggregation.overlap import (
    OverlapPolicy,
    batch_round,
    fit_model,
    item_decisions,
    replay_batch,
    used_frame,
)
from aggregation.overlap_replay import ReplayInputError, naive_stop, read_replay_files, simulate

from .synthetic import GENERATOR

POLICY = OverlapPolicy(k_min=2, k_max=5)


def frame(rows):
    return pd.DataFrame.from_records(rows, columns=["task", "worker", "label"])


def test_policy_checks_its_range():
    with pytest.raises(ValueError, match="k_max"):
        OverlapPolicy(k_min=3, k_max=2)
    with pytest.raises(ValueError, match="k_min"):
        OverlapPolicy(k_min=0, k_max=2)
    with pytest.raises(ValueError, match="max_risk"):
        OverlapPolicy(k_min=2, k_max=3, max_risk=0.7)
    recorded = OverlapPolicy(k_min=2, k_max=4, max_risk=0.05).as_dict()
    assert OverlapPolicy.from_dict(recorded) == OverlapPolicy(k_min=2, k_max=4, max_risk=0.05)


def test_prior_is_the_confusion_of_an_unseen_verifier_and_data_moves_it():
    # Given a verifier who is always right on 40 clear items (others agree with them)
    rows = [(f"i{n}", w, "ABCD"[n % 4]) for n in range(40) for w in ("good", "other1", "other2")]
    fit = fit_model(frame(rows), policy=POLICY)
    good = fit.confusion[fit.worker_index["good"]]
    # Then their estimated accuracy is far above the prior's 0.7, and every row sums to 1
    assert np.allclose(good.sum(axis=1), 1.0)
    assert min(good[k, k] for k in range(4)) > 0.85
    # And with no judgment at all a verifier is the prior: 0.7 right, the rest spread evenly
    fit0 = fit_model(frame([("i0", "solo", "A")]), policy=POLICY)
    assert 0.7 < fit0.confusion[0][0, 0] < (4 * 0.7 + 1) / (4 + 1)  # one judgment: a fifth of the evidence
    assert fit0.confusion[0][1, 1] == pytest.approx(0.7, abs=0.03)  # the rows it says nothing about stay near the prior


def _decide(rows, answers, policy=POLICY):
    items = sorted(answers)
    return batch_round(frame(rows), items=items, answers=answers, tasks={i: "retrospective" for i in items}, policy=policy)


def _background(n=60):
    """Items three careful verifiers agree on (so the model learns they are good); on a
    third of them they agree on another letter than the intended answer (flawed items)."""
    rows, answers = [], {}
    for k in range(n):
        item = f"bg{k:02d}"
        answers[item] = "ABCD"[k % 4]
        consensus = "ABCD"[(k + 1) % 4] if k % 3 == 0 else answers[item]
        rows += [(item, w, consensus) for w in ("v1", "v2", "v3")]
    return rows, answers


def test_agreement_on_the_answer_is_sure_a_split_is_not():
    rows, answers = _background()
    rows += [("agree", "v1", "B"), ("agree", "v2", "B"), ("split", "v1", "B"), ("split", "v2", "C")]
    answers.update(agree="B", split="B")
    d = _decide(rows, answers)
    assert d["agree"].keep and d["agree"].risk < POLICY.max_risk and not d["agree"].more
    assert d["split"].more and d["split"].risk > POLICY.max_risk
    # one more judgment from a good verifier can settle the split, not the agreement
    assert d["split"].priority > 0.03 and d["agree"].priority < d["split"].priority / 3


def test_never_more_than_k_max():
    rows, answers = _background()
    rows += [("split", w, lab) for w, lab in zip(("v1", "v2", "v3"), "BCD")]
    answers["split"] = "B"
    assert _decide(rows, answers)["split"].more
    assert not _decide(rows, answers, OverlapPolicy(k_min=2, k_max=3))["split"].more


def test_value_of_information_uses_each_verifiers_quality():
    # Given an unsure item and, as candidates, either a verifier the model trusts or one it
    # knows answers at random
    rows, answers = _background()
    rows += [(f"bg{k:02d}", "noisy", "ABCD"[(k * 7 + 1) % 4]) for k in range(60)]
    rows += [("split", "v1", "B"), ("split", "v2", "C")]
    answers["split"] = "B"
    items = sorted(answers)
    fit = fit_model(frame(rows), policy=POLICY, answers=answers, groups={i: "r" for i in items})
    judged = {"split": ["v1", "v2"]}
    good = item_decisions(fit, items=["split"], answers=answers, judged_by=judged, counts={"split": 2}, policy=POLICY,
                          candidates={"split": ["v3"]})["split"]
    noisy = item_decisions(fit, items=["split"], answers=answers, judged_by=judged, counts={"split": 2}, policy=POLICY,
                           candidates={"split": ["noisy"]})["split"]
    # Then a judgment from the good verifier is worth more
    assert good.priority > 1.3 * noisy.priority > 0


def test_replay_gives_k_min_first_and_more_only_where_unsure():
    rows, answers = _background(40)
    judgments = {}
    for item, worker, label in rows:
        judgments.setdefault(item, []).append((worker, label))
    judgments["hard"] = [("v1", "B"), ("v2", "C"), ("v3", "B"), ("v4", "B"), ("v5", "B")]
    answers["hard"] = "B"
    tasks = {i: "retrospective" for i in answers}
    used = replay_batch(judgments, answers=answers, tasks=tasks, policy=POLICY)
    assert all(used[i] == 2 for i in answers if i != "hard")  # clear after two agreeing verifiers
    assert 3 <= used["hard"] <= 5
    assert replay_batch(judgments, answers=answers, tasks=tasks, policy=POLICY) == used  # deterministic
    fixed = replay_batch(judgments, answers=answers, tasks=tasks, policy=OverlapPolicy(k_min=3, k_max=3))
    assert set(fixed.values()) == {3}
    assert len(used_frame(judgments, used)) == sum(used.values())


def test_naive_rule():
    assert naive_stop(["A", "A", "B"]) == 2
    assert naive_stop(["A", "B", "A", "A", "C"]) == 4
    assert naive_stop(["A", "B", "C", "D", "A"]) == 5
    assert naive_stop(["A", "B", "B", "B"]) == 4
    assert naive_stop(["A"]) == 1


@pytest.fixture(scope="module")
def overlap5(tmp_path_factory):
    out = tmp_path_factory.mktemp("overlap5")
    subprocess.run([sys.executable, str(GENERATOR), str(out), "--contexts", "40", "--overlap", "5", "--batch-size", "160",
                    "--seed", "3"], check=True, capture_output=True)
    return out


def test_overlap_simulate_prints_the_report_last(overlap5, capsys):
    call_command("overlap_simulate", "--items", str(overlap5 / "items.jsonl"), "--judgments", str(overlap5 / "judgments.csv"),
                 "--truth", str(overlap5 / "truth.csv"), "--k-min", "2", "--k-max", "5", "--json")
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    items = report["items"]
    assert set(report["fixed_judgments"]) == {"2", "3", "5"} and report["fixed_judgments"]["5"] == 5 * items
    assert report["fixed_judgments"]["2"] == 2 * items
    assert 2 * items < report["adaptive_judgments"] < 5 * items
    assert 0.5 < report["adaptive_accuracy"] <= 1 and 0.5 < report["adaptive_agreement_with_kmax"] <= 1
    assert report["fixed_accuracy"]["5"] > report["fixed_accuracy"]["2"]
    assert any(line.startswith("adaptive k=2..5") for line in out)


def test_replay_agrees_with_itself_and_with_fixed_when_k_min_is_k_max(overlap5):
    data = read_replay_files(items=overlap5 / "items.jsonl", judgments=overlap5 / "judgments.csv", truth=overlap5 / "truth.csv")
    same = simulate(data, policy=OverlapPolicy(k_min=3, k_max=3), fixed=(3,))
    assert same["adaptive_judgments"] == same["fixed_judgments"]["3"]
    assert same["adaptive_accuracy"] == same["fixed_accuracy"]["3"] and same["adaptive_agreement_with_kmax"] == 1.0


def test_bad_input_is_reported_by_file_line_and_field(tmp_path, overlap5):
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "x1", "answer": "A", "batch": "b"}\n{"item_id": "x2", "batch": "b"}\nnot json\n')
    judgments = tmp_path / "judgments.csv"
    judgments.write_text("item_id,worker,label\nx1,w1,A\nx9,w1,A\nx1,w2,Q\n")
    with pytest.raises(ReplayInputError) as err:
        read_replay_files(items=items, judgments=judgments)
    assert err.value.errors == [
        f"{items}:2: answer: missing or not a non-empty string",
        f"{items}:3: line: not JSON (Expecting value)",
        f"{judgments}:3: item_id: unknown item 'x9'",
        f"{judgments}:4: label: 'Q' is not one of A, B, C, D, NOTA, NONE, MULTIPLE",
    ]
    with pytest.raises(CommandError, match=r"items.jsonl:2: answer"):
        call_command("overlap_simulate", "--items", str(items), "--judgments", str(judgments))
    with pytest.raises(CommandError, match="k-min/k-max"):
        call_command("overlap_simulate", "--items", str(overlap5 / "items.jsonl"), "--judgments",
                     str(overlap5 / "judgments.csv"), "--k-min", "4", "--k-max", "3")


def test_truth_and_encoding_errors_are_reported_too(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_bytes(b'{"item_id": "x1", "answer": "A", "batch": "b"}\n{"item_id": "x\xff2"}\n')
    judgments = tmp_path / "judgments.csv"
    judgments.write_text("item_id,worker,label\nx1,w1,A\nx1,w2\n")
    truth = tmp_path / "truth.csv"
    truth.write_text("item_id,keep\nx1,maybe\n")
    with pytest.raises(ReplayInputError) as err:
        read_replay_files(items=items, judgments=judgments, truth=truth)
    assert err.value.errors == [
        f"{items}:2: line: not valid UTF-8 (byte 0xff)",
        f"{judgments}:3: row: expected 3 fields, got 2",
        f"{truth}:2: keep: 'maybe' is not 0 or 1",
    ]
    judgments.write_bytes(b"item_id,worker,label\nx1,w\xfe1,A\n")
    with pytest.raises(ReplayInputError, match=r"judgments.csv:\d+: file: not valid UTF-8 \(byte 0xfe\)"):
        read_replay_files(items=items, judgments=judgments)
    judgments.write_text("item,worker,label\n")
    with pytest.raises(ReplayInputError, match=r"judgments.csv:1: header: missing column\(s\) item_id"):
        read_replay_files(items=items, judgments=judgments)
