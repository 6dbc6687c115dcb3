"""Dawid–Skene and majority vote on one batch's judgments: crowd-kit, deterministically.

Pure functions on a pandas frame of `task, worker, label` rows (no Django here), so a
test or a benchmark can call exactly what a run calls. The frame is sorted by
(task, worker) before fitting: the same judgments always give the same labels,
posteriors and confusion matrices, whatever order the database returned them in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from crowdkit.aggregation import DawidSkene, MajorityVote

FRAME_COLUMNS = ["task", "worker", "label"]


@dataclass
class BatchFit:
    labels: pd.Series  # task -> DS label
    posterior: pd.Series  # task -> DS posterior probability of that label
    mv_labels: pd.Series  # task -> majority-vote label
    n_judgments: pd.Series  # task -> judgments used
    errors: pd.DataFrame  # crowd-kit errors_: index (worker, observed label), columns true label
    priors: pd.Series  # label -> prior
    iterations: int

    def _diagonal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per errors_ row: its worker, observed label, and P(observed | truth = observed)."""
        workers = self.errors.index.get_level_values("worker").to_numpy()
        observed = self.errors.index.get_level_values("label").to_numpy()
        columns = {lab: k for k, lab in enumerate(self.errors.columns)}
        values = self.errors.to_numpy(dtype=float)
        cols = np.array([columns.get(lab, -1) for lab in observed])
        diag = np.where(cols >= 0, values[np.arange(len(values)), np.maximum(cols, 0)], 0.0)
        return workers, observed, diag

    def worker_accuracy(self) -> pd.Series:
        """Σ_c prior(c) · P(worker says c | truth is c): the chance of a right answer on a random item."""
        if self.errors.empty:
            return pd.Series(dtype=float)
        workers, observed, diag = self._diagonal()
        weights = self.priors.reindex(observed).fillna(0.0).to_numpy()
        return pd.Series(diag * weights, index=workers).groupby(level=0, sort=True).sum()

    def worker_confusion(self) -> dict[object, dict[str, dict[str, float]]]:
        """worker -> {true label: {observed label: probability}} (each true label's column sums to 1)."""
        out: dict[object, dict[str, dict[str, float]]] = {}
        if self.errors.empty:
            return out
        workers = self.errors.index.get_level_values("worker").tolist()
        observed = [str(x) for x in self.errors.index.get_level_values("label").tolist()]
        truths = [str(x) for x in self.errors.columns]
        order = sorted(range(len(truths)), key=lambda k: truths[k])
        for worker, obs, row in zip(workers, observed, self.errors.to_numpy(dtype=float).tolist()):
            matrix = out.setdefault(worker, {truths[k]: {} for k in order})
            for k in order:
                matrix[truths[k]][obs] = row[k]
        for matrix in out.values():  # observed labels in sorted order, for stable JSON
            for true in matrix:
                matrix[true] = dict(sorted(matrix[true].items()))
        return dict(sorted(out.items()))


def retained(label, posterior, answer, threshold: float):
    """The retention rule, on scalars or aligned Series: the aggregate label is the intended
    answer and holds at least `threshold` posterior. (Runs also drop gold items.)"""
    return (label == answer) & (posterior >= threshold)


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The canonical order every fit uses: by task, then worker."""
    return frame[FRAME_COLUMNS].sort_values(["task", "worker"], kind="mergesort").reset_index(drop=True)


def fit_batch(frame: pd.DataFrame, *, n_iter: int, tol: float) -> BatchFit:
    """Fit crowd-kit's DawidSkene(n_iter, tol) and MajorityVote on one batch's rows."""
    frame = sorted_frame(frame)
    if frame.empty:
        empty = pd.Series(dtype=object)
        return BatchFit(empty, pd.Series(dtype=float), empty, pd.Series(dtype=int), pd.DataFrame(), pd.Series(dtype=float), 0)
    ds = DawidSkene(n_iter=n_iter, tol=tol)
    probas = ds.fit_predict_proba(frame)
    labels = ds.labels_
    # the posterior of the chosen label is the row maximum (idxmax picked it)
    posterior = probas.max(axis=1)
    mv_labels = MajorityVote().fit_predict(frame)
    n_judgments = frame.groupby("task", sort=True).size()
    return BatchFit(
        labels=labels,
        posterior=posterior,
        mv_labels=mv_labels,
        n_judgments=n_judgments,
        errors=ds.errors_,
        priors=ds.priors_,
        iterations=len(ds.loss_history_),
    )
