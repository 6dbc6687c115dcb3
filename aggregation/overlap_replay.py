"""The offline replay of adaptive overlap (`manage.py overlap_simulate`), no database.

Reads items.jsonl, judgments.csv and (optionally) truth.csv, replays each batch's
judgments (in file order per item) through the same policy functions the live queue's
refresh job calls (`aggregation.overlap`), and scores the retention decisions the way a
release makes them: crowd-kit Dawid–Skene per batch on the judgments used, kept when the
aggregate label is the intended answer with posterior ≥ the retention threshold.
"""
from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .overlap import OverlapPolicy, release_decisions, replay_batch, used_frame

LABELS = ("A", "B", "C", "D", "NOTA", "NONE", "MULTIPLE")


class ReplayInputError(Exception):
    """Bad input: `errors` holds one `file:line: field: reason` string per problem."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass
class ReplayData:
    batches: dict[str, list[str]]  # batch -> item ids, in file order
    answers: dict[str, str]
    tasks: dict[str, str]
    judgments: dict[str, list[tuple[str, str]]]  # item -> [(worker, label)] in file order
    truth: dict[str, bool] | None


def _open(path: Path):
    try:
        return path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise ReplayInputError([f"{path}:0: file: {exc.strerror or exc}"]) from exc


def _csv_records(path: Path, *, required: Sequence[str], error: Callable, errors: list[str]):
    """(line, {column: stripped value}) of a CSV file with a header naming `required`; a short
    or long row is an error, blank rows are skipped, bytes that are not CSV text stop the read."""
    from .services import JudgmentImportError, _csv_guarded

    with _open(path) as handle:
        try:
            reader = _csv_guarded(csv.reader(handle), name=str(path))
            header = [h.strip() for h in next(reader, [])]
            missing = [c for c in required if c not in header]
            if missing:
                raise ReplayInputError(errors + [f"{path}:1: header: missing column(s) {', '.join(missing)}"])
            for line, record in enumerate(reader, start=2):
                if not record or all(not v.strip() for v in record):
                    continue
                if len(record) != len(header):
                    error(path, line, "row", f"expected {len(header)} fields, got {len(record)}")
                    continue
                yield line, {name: value.strip() for name, value in zip(header, record)}
        except JudgmentImportError as exc:
            raise ReplayInputError(errors + exc.errors) from None


def read_replay_files(*, items: Path, judgments: Path, truth: Path | None = None, max_errors: int = 50) -> ReplayData:
    errors: list[str] = []

    def error(name, line, fld, reason):
        if len(errors) < max_errors:
            errors.append(f"{name}:{line}: {fld}: {reason}")

    batches: dict[str, list[str]] = defaultdict(list)
    answers, tasks = {}, {}
    with _open(Path(items)) as handle:
        for line, raw in enumerate(handle.buffer, start=1):
            try:
                text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                error(items, line, "line", f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x})")
                continue
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                error(items, line, "line", f"not JSON ({exc.msg})")
                continue
            if not isinstance(record, dict):
                error(items, line, "line", "not a JSON object")
                continue
            ok = True
            for fld in ("item_id", "answer", "batch"):
                if not isinstance(record.get(fld), str) or not record[fld].strip():
                    error(items, line, fld, "missing or not a non-empty string")
                    ok = False
            if not ok:
                continue
            item_id = record["item_id"]
            if item_id in answers:
                error(items, line, "item_id", f"duplicate item {item_id!r}")
                continue
            answers[item_id] = record["answer"]  # NOTA on counterfactual items
            tasks[item_id] = str(record.get("task", ""))
            batches[record["batch"]].append(item_id)
    if not answers and not errors:
        error(items, 1, "file", "no items")

    rows: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen = set()
    for line, record in _csv_records(Path(judgments), required=("item_id", "worker", "label"), error=error, errors=errors):
        item_id, worker, label = record["item_id"], record["worker"], record["label"]
        if item_id not in answers:
            error(judgments, line, "item_id", f"unknown item {item_id!r}")
        elif not worker:
            error(judgments, line, "worker", "empty")
        elif label not in LABELS:
            error(judgments, line, "label", f"{label!r} is not one of {', '.join(LABELS)}")
        elif (item_id, worker) in seen:
            error(judgments, line, "worker", f"{worker} judged {item_id} twice")
        else:
            seen.add((item_id, worker))
            rows[item_id].append((worker, label))

    truth_map = None
    if truth is not None:
        truth_map = {}
        for line, record in _csv_records(Path(truth), required=("item_id", "keep"), error=error, errors=errors):
            item_id, keep = record["item_id"], record["keep"].lower()
            if item_id not in answers:
                error(truth, line, "item_id", f"unknown item {item_id!r}")
            elif keep not in ("0", "1", "true", "false"):
                error(truth, line, "keep", f"{keep!r} is not 0 or 1")
            else:
                truth_map[item_id] = keep in ("1", "true")
    if errors:
        raise ReplayInputError(errors)
    return ReplayData(dict(batches), answers, tasks, {i: rows.get(i, []) for i in answers}, truth_map)


def naive_stop(labels: Sequence[str]) -> int:
    """The naive rule: stop at two if the first two agree, else at three equal votes, else at five."""
    for n in range(2, 6):
        if n > len(labels):
            return len(labels)
        counts = pd.Series(labels[:n]).value_counts()
        if (n == 2 and counts.iloc[0] == 2) or counts.iloc[0] >= 3:
            return n
    return min(5, len(labels))


@dataclass
class Strategy:
    judgments: int
    decisions: dict


def run_strategy(data: ReplayData, used_for: Callable[[str, list[str]], dict], *, policy: OverlapPolicy) -> Strategy:
    """Apply `used_for(batch, items) -> {item: judgments used}` to every batch and decide retention."""
    total, decisions = 0, {}
    for batch in sorted(data.batches):
        items = data.batches[batch]
        used = used_for(batch, items)
        total += sum(used.values())
        frame = used_frame({i: data.judgments[i] for i in items}, used)
        answers = {i: data.answers[i] for i in items}
        decisions.update(release_decisions(frame, answers=answers, policy=policy))
    return Strategy(total, decisions)


def simulate(data: ReplayData, *, policy: OverlapPolicy, fixed: Sequence[int] = (), naive: bool = False) -> dict:
    """The replay's report: adaptive vs fixed k (and the naive rule), judgments and accuracy."""
    score = dict(policy=policy)

    def adaptive(batch, items):
        return replay_batch(
            {i: data.judgments[i] for i in items},
            answers={i: data.answers[i] for i in items},
            tasks={i: data.tasks[i] for i in items},
            policy=policy,
        )

    def fixed_k(k):
        return lambda batch, items: {i: min(k, len(data.judgments[i])) for i in items}

    strategies = {"adaptive": run_strategy(data, adaptive, **score)}
    for k in sorted(set(fixed) | {policy.k_max}):
        strategies[str(k)] = run_strategy(data, fixed_k(k), **score)
    if naive:
        strategies["naive"] = run_strategy(
            data, lambda b, items: {i: naive_stop([lab for _, lab in data.judgments[i]]) for i in items}, **score
        )

    def accuracy(s: Strategy):
        if data.truth is None:
            return None
        scored = [i for i in data.truth if i in s.decisions]
        return sum(s.decisions[i] == data.truth[i] for i in scored) / len(scored) if scored else None

    kmax = strategies[str(policy.k_max)].decisions
    adaptive_s = strategies["adaptive"]
    report = {
        "items": len(data.answers),
        "batches": len(data.batches),
        "judgments_available": sum(len(v) for v in data.judgments.values()),
        "policy": policy.as_dict(),
        "adaptive_judgments": adaptive_s.judgments,
        "adaptive_accuracy": accuracy(adaptive_s),
        "adaptive_agreement_with_kmax": sum(adaptive_s.decisions[i] == kmax[i] for i in kmax) / len(kmax) if kmax else None,
        "fixed_judgments": {k: s.judgments for k, s in strategies.items() if k.isdigit()},
        "fixed_accuracy": {k: accuracy(s) for k, s in strategies.items() if k.isdigit()},
    }
    if naive:
        report["naive_judgments"] = strategies["naive"].judgments
        report["naive_accuracy"] = accuracy(strategies["naive"])
    return report
