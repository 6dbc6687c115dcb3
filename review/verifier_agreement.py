"""Reads of agreement per verifier and between verifiers: `/review/verifiers/`, its CSV and
`GET /api/v1/verifier-pairs/`. They read the maintained summaries only, never the judgments
(`verification/pair_tallies.py`: pairs, counts, seconds; `aggregation/worker_agreement.py`:
agreement with the consensus, DS accuracy), so a page costs the same at any number of items:
a fixed number of small queries, each on an index."""
from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

from django.db import connection
from django.db.models import Case, DateField, F, Sum, When
from django.utils import timezone

from accounts.models import User
from aggregation.models import BatchResult, RunStatus, WorkerAccuracyTotal, WorkerAgreement, WorkerAgreementTotal, WorkerResult
from annotation.models import Batch, Task
from verification.models import VerifierPairTally, VerifierPairTotal, VerifierSecondsTally, VerifierSecondsTotal
from verification.pair_tallies import UNTIMED

SORTS = ("username", "judgments", "consensus", "pairwise", "ds_accuracy", "median_seconds")
TASKS = tuple(Task.values)
PAGE_SIZE = 50


def _week(day: dt.datetime) -> dt.date:
    day = timezone.localtime(day).date()
    return day - dt.timedelta(days=day.weekday())


def _ratio(ok, n):
    return ok / n if n else None


class _Scope:
    """What the filters select: every batch (the totals) or one batch (its tallies, its current run)."""

    def __init__(self, *, batch: str = "", task: str = ""):
        self.task = task if task in TASKS else ""
        self.batch_id = None
        self.unknown = False
        if batch:
            self.batch_id = Batch.objects.filter(name=batch).values_list("pk", flat=True).first()
            self.unknown = self.batch_id is None

    def _tasked(self, qs):
        return qs.filter(task=self.task) if self.task else qs

    def pairs(self):
        qs = VerifierPairTally.objects.filter(batch_id=self.batch_id) if self.batch_id else VerifierPairTotal.objects.all()
        return (self._tasked(qs).order_by().values("verifier_a_id", "verifier_b_id")
                .annotate(n=Sum("co_judged"), ok=Sum("agreed")).values_list("verifier_a_id", "verifier_b_id", "n", "ok"))

    def verifiers(self) -> list[tuple[int, str, int, int, float | None, float | None]]:
        """Per verifier, in one statement: username, judgments, timed ones, the median of the timed
        ones to its bucket (`pair_tallies.median_of_buckets`, in SQL: a row a verifier, not a row a
        bucket) and the DS accuracy."""
        qs = VerifierSecondsTally.objects.filter(batch_id=self.batch_id) if self.batch_id else VerifierSecondsTotal.objects.all()
        sql, params = self._tasked(qs).order_by().values("verifier_id", "bucket").annotate(n=Sum("judgments")).query.sql_with_params()
        accuracy, accuracy_params = self._accuracy().query.sql_with_params()
        user = connection.ops.quote_name(User._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"""WITH b AS ({sql}),
                c AS (SELECT verifier_id, bucket, sum(n) OVER (PARTITION BY verifier_id ORDER BY bucket) AS cum,
                             sum(n) OVER (PARTITION BY verifier_id) AS timed FROM b WHERE bucket <> {UNTIMED})
                SELECT v.verifier_id, u.username, v.total, v.timed,
                       (SELECT min(c.bucket) FROM c WHERE c.verifier_id = v.verifier_id AND 2 * c.cum > c.timed - c.timed %% 2),
                       a.accuracy
                FROM (SELECT verifier_id, sum(n) AS total, sum(CASE WHEN bucket <> {UNTIMED} THEN n ELSE 0 END) AS timed
                      FROM b GROUP BY verifier_id) v
                JOIN {user} u ON u.id = v.verifier_id
                LEFT JOIN ({accuracy}) a ON a.verifier_id = v.verifier_id""", (*params, *accuracy_params))
            return [(v, name, int(total), int(timed), None if median is None else float(median), accuracy)
                    for v, name, total, timed, median, accuracy in cursor.fetchall()]

    def _run(self):
        return (BatchResult.objects.filter(batch_id=self.batch_id, run__status=RunStatus.SUCCEEDED)
                .order_by("-run_id").values_list("run_id", flat=True)[:1])

    def consensus(self, *, since: dt.date):
        """(verifier, week or None for the weeks before `since`, judged, agreed)."""
        if self.batch_id:
            qs = WorkerAgreement.objects.filter(batch_id=self.batch_id, run_id__in=self._run())
        else:
            qs = WorkerAgreementTotal.objects.all()
        recent = Case(When(week__gte=since, then=F("week")), default=None, output_field=DateField())
        return (self._tasked(qs).order_by().annotate(recent=recent).values("verifier_id", "recent")
                .annotate(n=Sum("judged"), ok=Sum("agreed")).values_list("verifier_id", "recent", "n", "ok"))

    def _accuracy(self):
        """(verifier_id, accuracy): the batch's current run, or weighted by judgments over every batch's."""
        if self.batch_id:
            return WorkerResult.objects.filter(batch_id=self.batch_id, run_id__in=self._run()).order_by().values("verifier_id", "accuracy")
        return (WorkerAccuracyTotal.objects.filter(judgments__gt=0).order_by()
                .annotate(accuracy=F("weighted") / F("judgments")).values("verifier_id", "accuracy"))


def verifier_pairs(*, batch: str = "", task: str = "") -> list[dict]:
    """Every pair of verifiers who co-judged an item (gold left out): items in common, answered alike, the share."""
    scope = _Scope(batch=batch, task=task)
    if scope.unknown:
        return []
    rows = [r for r in scope.pairs() if r[2]]
    names = dict(User.objects.filter(id__in={v for r in rows for v in r[:2]}).values_list("id", "username"))
    out = [{"verifier_a": names.get(a, str(a)), "verifier_b": names.get(b, str(b)), "co_judged": n, "agreed": ok,
            "agreement": ok / n} for a, b, n, ok in rows]
    return sorted(out, key=lambda r: (r["verifier_a"], r["verifier_b"]))


def verifier_agreement(*, batch: str = "", task: str = "", min_judgments: int = 0, sort: str = "consensus",
                       descending: bool = True, page: int = 1, weeks: int = 6, pair_sort: str = "") -> dict:
    """Per verifier: judgments (gold left out), agreement with the consensus (the current
    Dawid–Skene label) in all and per week over the last `weeks` weeks, mean pairwise agreement
    (share of co-judged items answered alike), DS accuracy and median seconds; the verifiers
    paged (`PAGE_SIZE`), and the verifier × verifier matrix of the page's verifiers. Seven queries
    whatever the number of judgments."""
    scope = _Scope(batch=batch, task=task)
    now_week = _week(timezone.now())
    week_starts = [now_week - dt.timedelta(weeks=k) for k in range(weeks - 1, -1, -1)]
    empty = {"verifiers": [], "weeks": week_starts, "pairs_lowest": [], "pairs": 0, "matrix": [], "page": 1, "pages": 1,
             "count": 0, "tasks": TASKS, "task": scope.task, "pair_sort": ""}
    if scope.unknown:
        return empty

    timing, ds, names = {}, {}, {}
    for v, name, total, timed, median, accuracy in scope.verifiers():
        timing[v], names[v] = (total, timed, median), name
        if accuracy is not None:
            ds[v] = accuracy
    pair_n, pair_ok = defaultdict(int), defaultdict(int)
    pairs = {}
    for a, b, n, ok in scope.pairs():
        if not n:
            continue
        pairs[(a, b)] = pairs[(b, a)] = (n, ok)
        for v in (a, b):
            pair_n[v] += n
            pair_ok[v] += ok
    cons = defaultdict(lambda: [0, 0])
    weekly = defaultdict(dict)
    for v, week, n, ok in scope.consensus(since=week_starts[0]):
        cons[v][0] += n
        cons[v][1] += ok
        if week is not None:
            weekly[v][week] = (n, ok)

    judged = {v: total for v, (total, _, _) in timing.items()}
    ids = [v for v, n in judged.items() if n and n >= min_judgments]
    listed = set(ids)
    rows = []
    for v in ids:
        w = weekly.get(v, {})
        rows.append({
            "id": v,
            "username": names.get(v, str(v)),
            "judgments": judged[v],
            "timed": timing[v][1],
            "consensus": _ratio(cons[v][1], cons[v][0]) if v in cons else None,
            "pairwise": _ratio(pair_ok[v], pair_n[v]),
            "ds_accuracy": ds.get(v),
            "median_seconds": timing[v][2],
            "weekly": [{"week": s, "n": w.get(s, (0, 0))[0], "rate": _ratio(w.get(s, (0, 0))[1], w.get(s, (0, 0))[0])}
                       for s in week_starts],
        })
    sort = sort if sort in SORTS else "consensus"
    missing = sorted((r for r in rows if r[sort] is None), key=lambda r: r["username"])
    present = sorted((r for r in rows if r[sort] is not None), key=lambda r: (r[sort], r["username"]), reverse=descending)
    ordered = present + missing
    pages = max(1, math.ceil(len(ordered) / PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = ordered[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]

    # the matrix of the page's verifiers; `pair_sort` (a username) orders its rows by agreement with that verifier
    columns = shown
    by_name = {r["username"]: r["id"] for r in shown}
    row_order = shown
    if pair_sort in by_name:
        anchor = by_name[pair_sort]

        def with_anchor(r):
            n, ok = pairs.get((r["id"], anchor), (0, 0))
            return (r["id"] != anchor, -(ok / n) if n else 2, r["username"])
        row_order = sorted(shown, key=with_anchor)
    else:
        pair_sort = ""
    matrix = []
    for r in row_order:
        cells = []
        for c in columns:
            n, ok = pairs.get((r["id"], c["id"]), (0, 0))
            cells.append({"other": c["username"], "self": r["id"] == c["id"], "n": n, "rate": ok / n if n else None})
        matrix.append({"username": r["username"], "cells": cells})
    seen = {(a, b) for (a, b) in pairs if a < b}
    lowest = sorted(
        ({"a": names.get(a, str(a)), "b": names.get(b, str(b)), "n": pairs[(a, b)][0], "rate": pairs[(a, b)][1] / pairs[(a, b)][0]}
         for a, b in seen if a in listed and b in listed),
        key=lambda p: (p["rate"], -p["n"], p["a"], p["b"]),
    )
    return {**empty, "verifiers": shown, "pairs_lowest": lowest[:10], "pairs": len(seen), "matrix": matrix,
            "page": page, "pages": pages, "count": len(ordered), "pair_sort": pair_sort}
