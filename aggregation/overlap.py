"""Adaptive overlap: where the next judgment goes, decided by the aggregation model.

Pure functions (numpy and pandas, no Django), used by BOTH the live refresh job
(`aggregation.services.batch_overlap_refresh`) and the replay (`overlap_simulate`), so
the two always agree.

The model is Dawid–Skene with a Dirichlet prior (MAP-EM): every verifier's confusion
matrix starts from `prior_strength` pseudo-judgments of accuracy `prior_accuracy`, spread
evenly over the wrong labels, and the class prior from one pseudo-item per label. With
few judgments the prior dominates (a new verifier counts as a fair, not a perfect or a
useless one); as judgments accumulate each verifier's own errors take over. A verifier's
quality is estimated per task (retrospective and prospective items are fitted as two
"workers"), because the same person is far surer on one than on the other.

An item's retention decision is "the aggregate label is the intended answer, with
posterior at least the retention threshold". Its risk is the model's probability that
this decision is wrong. A batch works in rounds: every item gets `k_min` judgments; when
every item has what it was asked for, the model is refitted and every item whose risk is
above `max_risk` and that has fewer than `k_max` judgments is asked for one more. Its
priority in the queue is the value of one more judgment: the probability that it would
flip the decision, averaged over the verifiers who have not judged the item yet, each
through their own estimated confusion matrix.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from verification.policy import OverlapPolicy, policy_from_settings  # noqa: F401 (recorded on the batch)

from .dawid_skene import fit_batch, retained

ANSWER_LETTERS = ("A", "B", "C", "D")


@dataclass
class ModelFit:
    """A MAP Dawid–Skene fit of one batch."""

    classes: list[str]
    tasks: list  # item keys, in row order of `posterior`
    posterior: np.ndarray  # tasks × classes
    workers: list  # worker keys, in order of `confusion`
    confusion: np.ndarray  # workers × true class × observed class (rows sum to 1)
    class_prior: np.ndarray  # classes
    iterations: int = 0
    task_index: dict = field(default_factory=dict)
    worker_index: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    keep: bool  # the model's own retention decision (the release's is crowd-kit's, see `release_decisions`)
    risk: float  # model probability that `keep` is wrong
    priority: float  # probability one more judgment changes the decision taken now
    more: bool  # asks for one more judgment


def model_classes(labels: Iterable[str]) -> list[str]:
    """The labels the model knows: the four answer letters, then every other label seen, sorted."""
    extra = sorted(set(labels) - set(ANSWER_LETTERS))
    return list(ANSWER_LETTERS) + extra


def fit_model(
    frame: pd.DataFrame,
    *,
    policy: OverlapPolicy,
    answers: Mapping | None = None,
    groups: Mapping | None = None,
    classes: Sequence[str] | None = None,
) -> ModelFit:
    """MAP-EM Dawid–Skene on `task, worker, label` rows (deterministic: rows are sorted first).

    With `answers` (item -> intended answer) an item's prior is ρ on its intended answer
    and the rest spread over the other labels by their frequency, ρ fitted per group of
    items (`groups`: item -> its task) with a uniform Beta prior: the generator's
    intended answer is right far more often than a random letter, and how often depends
    on the task. Without it, the class prior is Dawid–Skene's (one for all items).
    """
    frame = frame[["task", "worker", "label"]].sort_values(["task", "worker"], kind="mergesort")
    classes = list(classes) if classes is not None else model_classes(list(frame["label"].unique()) + list((answers or {}).values()))
    k = len(classes)
    tasks = sorted(frame["task"].unique().tolist())
    workers = sorted(frame["worker"].unique().tolist())
    t_index = {t: i for i, t in enumerate(tasks)}
    w_index = {w: i for i, w in enumerate(workers)}
    c_index = {c: i for i, c in enumerate(classes)}
    if answers is not None:
        a_col = np.array([c_index[answers[t]] for t in tasks], dtype=int)
        group_names = sorted({(groups or {}).get(t, "") for t in tasks})
        g_col = np.array([group_names.index((groups or {}).get(t, "")) for t in tasks], dtype=int)
        is_answer = np.zeros((len(tasks), k), dtype=bool)
        is_answer[np.arange(len(tasks)), a_col] = True
        rho = np.full(len(group_names), 0.5)
    ti = frame["task"].map(t_index).to_numpy()
    wi = frame["worker"].map(w_index).to_numpy()
    li = frame["label"].map(c_index).to_numpy()
    n_t, n_w = len(tasks), len(workers)

    off = (1 - policy.prior_accuracy) / max(k - 1, 1)
    alpha = np.full((k, k), policy.prior_strength * off)
    np.fill_diagonal(alpha, policy.prior_strength * policy.prior_accuracy)

    # start from smoothed vote shares
    post = np.full((n_t, k), 0.1)
    np.add.at(post, (ti, li), 1.0)
    post /= post.sum(axis=1, keepdims=True)
    confusion = np.broadcast_to(alpha / alpha.sum(axis=1, keepdims=True), (n_w, k, k)).copy()
    class_prior = np.full(k, 1.0 / k)
    item_prior = np.tile(class_prior, (n_t, 1))
    iterations = 0
    for iterations in range(1, policy.n_iter + 1):
        # M-step
        counts = np.broadcast_to(alpha, (n_w, k, k)).copy()
        np.add.at(counts, (wi, slice(None), li), post[ti])
        confusion = counts / counts.sum(axis=2, keepdims=True)
        class_prior = (post.sum(axis=0) + 1.0) / (n_t + k)
        if answers is None:
            item_prior = np.tile(class_prior, (n_t, 1))
        else:
            on_answer = post[is_answer]
            rho = (np.bincount(g_col, weights=on_answer, minlength=len(rho)) + 1.0) / (np.bincount(g_col, minlength=len(rho)) + 2.0)
            other = (np.where(is_answer, 0.0, post).sum(axis=0) + 1.0)
            spread = np.where(is_answer, 0.0, other[None, :])
            spread /= spread.sum(axis=1, keepdims=True)
            item_prior = np.where(is_answer, rho[g_col][:, None], (1 - rho[g_col])[:, None] * spread)
        # E-step
        log_post = np.log(item_prior)
        np.add.at(log_post, ti, np.log(confusion[wi, :, li]))
        log_post -= log_post.max(axis=1, keepdims=True)
        new = np.exp(log_post)
        new /= new.sum(axis=1, keepdims=True)
        delta = np.abs(new - post).max() if n_t else 0.0
        post = new
        if delta < policy.tol:
            break
    return ModelFit(classes, tasks, post, workers, confusion, class_prior, iterations, t_index, w_index)


def _keep(posterior: np.ndarray, answer_col: np.ndarray, threshold: float) -> np.ndarray:
    """Retention decision per row: the answer is the arg-max label and holds `threshold` posterior."""
    p_answer = np.take_along_axis(posterior, answer_col[..., None], axis=-1)[..., 0]
    top = posterior.argmax(axis=-1)
    return (top == answer_col) & (p_answer >= threshold)


def item_decisions(
    fit: ModelFit,
    *,
    items: Sequence,
    answers: Mapping,
    judged_by: Mapping,
    counts: Mapping,
    policy: OverlapPolicy,
    worker_key=lambda worker, item: worker,
    candidates: Mapping | None = None,
    release_keep: Mapping | None = None,
) -> dict:
    """The decision, its risk, and whether to ask for one more judgment, per item.

    `judged_by[item]`: the verifiers who judged it; `counts[item]`: judgments it holds;
    `candidates`: verifiers who may judge an item next (default: every verifier of the fit
    who has not judged it). `worker_key(verifier, item)` maps a verifier to its model key.
    """
    out = {}
    c_index = {c: i for i, c in enumerate(fit.classes)}
    uniform = np.full(len(fit.classes), 1.0 / len(fit.classes))
    fair = _prior_confusion(policy, len(fit.classes))
    all_verifiers = sorted({w for ws in judged_by.values() for w in ws}, key=str)
    for item in items:
        row = fit.task_index.get(item)
        posterior = fit.posterior[row] if row is not None else fit.class_prior if len(fit.class_prior) else uniform
        answer = c_index.get(answers[item], -1)
        if answer < 0:  # no such letter in the model: never kept, nothing to learn
            out[item] = Decision(False, 0.0, 0.0, False)
            continue
        keep = bool(_keep(posterior[None, :], np.array([answer]), policy.retention_threshold)[0])
        p_answer = float(posterior[answer])  # the model's probability that the item should be kept
        decided = keep if release_keep is None else bool(release_keep.get(item, False))
        risk = (1.0 - p_answer) if decided else p_answer
        # the verifiers who may come next, through their own confusion matrices
        seen = set(judged_by.get(item, ()))
        pool = candidates[item] if candidates is not None else [w for w in all_verifiers if w not in seen]
        mats = []
        for verifier in pool:
            idx = fit.worker_index.get(worker_key(verifier, item))
            mats.append(fit.confusion[idx] if idx is not None else fair)
        if not mats:
            mats = [fair]
        theta = np.stack(mats)  # V × true × observed
        # posterior after observing label l from verifier v: posterior ⊙ theta[v, :, l]
        joint = posterior[None, :, None] * theta  # V × true × observed
        p_label = joint.sum(axis=1)  # V × observed
        after = joint / np.maximum(p_label[:, None, :], 1e-300)
        after = np.moveaxis(after, 1, 2)  # V × observed × true
        kept_after = _keep(after, np.full(after.shape[:2], answer), policy.retention_threshold)
        # value of one more judgment: the chance that the decision taken now changes after it
        flip = float(((kept_after != decided) * p_label).sum(axis=1).mean())
        more = risk > policy.max_risk and counts.get(item, 0) < policy.k_max
        out[item] = Decision(keep, risk, flip, more)
    return out


def _prior_confusion(policy: OverlapPolicy, k: int) -> np.ndarray:
    off = (1 - policy.prior_accuracy) / max(k - 1, 1)
    theta = np.full((k, k), off)
    np.fill_diagonal(theta, policy.prior_accuracy)
    return theta


def task_worker_key(tasks: Mapping):
    """The model's verifier key when quality is estimated per task: (verifier, item's task)."""
    return lambda worker, item: f"{worker}|{tasks.get(item, '')}"


def model_frame(frame: pd.DataFrame, *, policy: OverlapPolicy, tasks: Mapping) -> pd.DataFrame:
    """`task, worker, label` rows with `worker` as the model's key (per task when the policy says so)."""
    if not policy.quality_per_task:
        return frame
    key = task_worker_key(tasks)
    return frame.assign(worker=[key(w, t) for w, t in zip(frame["worker"], frame["task"])])


def batch_round(
    frame: pd.DataFrame, *, items: Sequence, answers: Mapping, tasks: Mapping, policy: OverlapPolicy
) -> dict:
    """One refresh of a settled batch: fit the model on its judgments and decide every item."""
    fitted = fit_model(model_frame(frame, policy=policy, tasks=tasks), policy=policy, answers=answers, groups=tasks)
    release = release_decisions(frame, answers=answers, policy=policy)
    judged_by: dict = {}
    for task, worker in zip(frame["task"], frame["worker"]):
        judged_by.setdefault(task, []).append(worker)
    counts = {item: len(judged_by.get(item, ())) for item in items}
    key = task_worker_key(tasks) if policy.quality_per_task else (lambda worker, item: worker)
    return item_decisions(
        fitted, items=items, answers=answers, judged_by=judged_by, counts=counts, policy=policy, worker_key=key,
        release_keep=release,
    )


def release_decisions(frame: pd.DataFrame, *, answers: Mapping, policy: OverlapPolicy) -> dict:
    """item -> retained, as a release decides it: crowd-kit Dawid–Skene per batch on `frame`,
    kept when the aggregate label is the intended answer with posterior ≥ the threshold."""
    fit = fit_batch(frame, n_iter=policy.ds_n_iter, tol=policy.ds_tol)
    labels, posterior = fit.labels.to_dict(), fit.posterior.to_dict()
    return {
        item: bool(retained(labels.get(item), posterior.get(item, 0.0), answer, policy.retention_threshold))
        for item, answer in answers.items()
    }


def replay_batch(
    judgments: Mapping[object, Sequence[tuple[object, str]]],
    *,
    answers: Mapping,
    tasks: Mapping,
    policy: OverlapPolicy,
) -> dict:
    """Replay one batch's judgments (per item, in the order given) through the policy.

    Returns {item: judgments used}: each item starts with `k_min` of its judgments, and
    each round gives one more to every item the refitted model is unsure of, while the
    item has judgments left and fewer than `k_max`. (The live queue runs the same rounds
    on the judgments as they arrive; an item it asks more of simply waits for a verifier.)
    """
    items = sorted(judgments, key=str)
    used = {item: min(policy.k_min, len(judgments[item])) for item in items}
    if not policy.adaptive:
        return used
    while True:
        frame = used_frame(judgments, used)
        decisions = batch_round(frame, items=items, answers=answers, tasks=tasks, policy=policy)
        grow = [i for i in items if decisions[i].more and used[i] < len(judgments[i])]
        if not grow:
            return used
        for item in grow:
            used[item] += 1


def used_frame(judgments: Mapping[object, Sequence[tuple[object, str]]], used: Mapping) -> pd.DataFrame:
    rows = [(item, worker, label) for item in judgments for worker, label in judgments[item][: used[item]]]
    return pd.DataFrame.from_records(rows, columns=["task", "worker", "label"])
