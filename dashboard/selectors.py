"""Reads behind the staff dashboard. Each selector runs a fixed, small number of queries
(tested with django_assert_num_queries), whatever the number of batches, items or people, and
reads the summaries kept as the work happens (`verification.tallies`, `aggregation.summaries`),
never a pass over all judgments or results. Tables of batches and people come a page at a time.
"""
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db.models import Count, F, Min, Q, Sum
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from dialtom_site.paging import Page, paged

from accounts.models import Role, User
from aggregation.models import AggregationRun, BatchResult, CurrentResultCell, CurrentWorkerTally, RunRetention
from annotation.models import Batch, Task
from verification.models import (
    AdaptiveOverlap, BatchDayTally, BatchTally, Claim, ClaimStatus, QueueSlot, VerifierSecondCount, VerifierTally,
)
from verification.queue import batch_staffing
from verification.tallies import median_seconds as median_of


def _ratio(num, den):
    return num / den if den else None


# --- Progress -----------------------------------------------------------------------------

PAGE_SIZE = 25  # rows of the batch and people tables a page


TALLY_SUMS = ("items", "judged_items", "complete_items", "done", "judgments", "exposed", "agg_items", "agg_judged", "agg_complete")


@dataclass
class BatchProgress:
    id: int
    name: str
    status: str
    overlap: int
    items: int
    done: int
    open: int
    in_progress: int
    complete: int
    aggregated: int
    rate_per_day: float | None = None
    eta_days: float | None = None
    judged: int = 0  # items with a judgment

    @property
    def needed(self) -> int:
        return self.items * self.overlap

    @property
    def share(self) -> float:
        return self.done / self.needed if self.needed else 0.0

    @property
    def percent(self) -> float:
        return round(100 * self.share, 1)

    @property
    def eta(self) -> date | None:
        if self.eta_days is None:
            return None
        return (timezone.now() + timedelta(days=self.eta_days)).date()


def _eta(remaining: int, rate: float | None) -> float | None:
    if remaining <= 0:
        return 0.0
    if not rate:
        return None
    return remaining / rate


def _states(t: dict, live: int = 0) -> dict:
    """Item states from a tally's counts; `live`: items with a live claim, no judgment, no result."""
    return {
        "open": (t["items"] - t["judged_items"]) - (t["agg_items"] - t["agg_judged"]) - live,
        "in_progress": (t["judged_items"] - t["complete_items"]) - (t["agg_judged"] - t["agg_complete"]) + live,
        "complete": t["complete_items"] - t["agg_complete"],
        "aggregated": t["agg_items"],
    }


def _live_unjudged(*, batch_ids, now) -> dict[int, int]:
    """Per batch: items with a live claim and no judgment yet, not aggregated (the live claims
    are few: the partial index `claim_active_by_batch`)."""
    return dict(
        Claim.objects.filter(status=ClaimStatus.ACTIVE, expires_at__gt=now, item__queue_slot__judged=0,
                             item__queue_slot__aggregated=False, **({} if batch_ids is None else {"batch_id__in": batch_ids}))
        .values("batch_id").order_by("batch_id").annotate(n=Count("item_id", distinct=True)).values_list("batch_id", "n")
    )


def tally_sums_by_task() -> list[dict]:
    """The batch tallies of all batches summed per task and gold (TALLY_SUMS and `needed`, items ×
    the batch's overlap), in one statement: what the progress totals and the retention funnel both
    read, so a page that shows both reads them once (`shared` in the views). Four rows at most,
    but a pass over every tally: 2 a batch (15,876 rows at 4M items)."""
    rows = (BatchTally.objects.values("task", "is_gold").order_by("task", "is_gold")  # sums not named as the fields they sum
            .annotate(**{f"all_{n}": Coalesce(Sum(n), 0) for n in TALLY_SUMS},
                      all_needed=Coalesce(Sum(F("items") * F("batch__overlap")), 0)))
    return [{name.removeprefix("all_"): value for name, value in row.items()} for row in rows]


def progress_by_batch(*, window_days: int = 7, page=1, tallies: list[dict] | None = None) -> dict:
    """Judgments done / needed and items per state per batch, with throughput and ETA, from the
    tallies (`verification.tallies`): 6 queries whatever the data (the batches' count, the page of
    batches, their tallies, all batches' sums unless `tallies` (`tally_sums_by_task`) brings them,
    the live claims, the last days); `page=None`: every batch.

    Item states: open (no judgment, no live claim), in progress (some judgments or a live
    claim, fewer than k), complete (k judgments, not aggregated yet), aggregated (has a
    result in a succeeded aggregation run). The ETA divides what is left by the judgments
    per day of the last `window_days` days (whole UTC days).
    """
    now = timezone.now()
    batches = Batch.objects.order_by("name").values_list("id", "name", "status", "overlap")
    if page is None:
        chosen = list(batches)
        pager = Page(1, 1, len(chosen))
    else:
        pager, chosen = paged(batches, page, counted_by=Batch.objects.all(), size=PAGE_SIZE)
    ids = [r[0] for r in chosen]
    per_batch = {
        r["batch_id"]: r
        for r in BatchTally.objects.filter(batch_id__in=ids).values("batch_id").order_by("batch_id")
        .annotate(**{n: Sum(n) for n in TALLY_SUMS})
    }
    tallies = tally_sums_by_task() if tallies is None else tallies
    everything = {n: sum(row[n] for row in tallies) for n in (*TALLY_SUMS, "needed")}
    live = _live_unjudged(batch_ids=None, now=now)
    since = (now - timedelta(days=window_days - 1)).date()
    recent = {
        r["batch_id"]: r
        for r in BatchDayTally.objects.filter(day__gte=since).values("batch_id").order_by("batch_id")
        .annotate(n=Sum("judgments"), first=Min("first_at"))
    }
    zero = dict.fromkeys(TALLY_SUMS, 0)

    def build(pk, name, status, overlap):
        t = per_batch.get(pk, zero)
        return BatchProgress(pk, name, status, overlap, t["items"], t["done"], **_states(t, live.get(pk, 0)),
                             judged=t["judged_items"])

    rows = [build(*r) for r in chosen]
    total_recent, first_recent = 0, None
    for r in recent.values():
        total_recent += r["n"]
        first_recent = r["first"] if first_recent is None else min(first_recent, r["first"])
    for batch in rows:
        r = recent.get(batch.id)
        if r:
            batch.rate_per_day = r["n"] / max(1.0, (now - r["first"]).total_seconds() / 86400)
        batch.eta_days = _eta(batch.needed - batch.done, batch.rate_per_day)

    overall = BatchProgress(id=0, name="all batches", status="", overlap=0, items=everything["items"],
                            done=everything["done"], **_states(everything, sum(live.values())))
    needed = everything["needed"]
    overall_rate = total_recent / max(1.0, (now - first_recent).total_seconds() / 86400) if first_recent else None
    eta_days = _eta(needed - overall.done, overall_rate)
    return {
        "batches": rows,
        "page": pager,
        "overall": overall,
        "needed": needed,
        "share": _ratio(overall.done, needed) or 0.0,
        "percent": round(100 * (_ratio(overall.done, needed) or 0.0), 1),
        "rate_per_day": overall_rate,
        "eta_days": eta_days,
        "eta": (now + timedelta(days=eta_days)).date() if eta_days is not None else None,
    }


def adaptive_overlap_by_batch(*, batch_ids=None) -> list[dict]:
    """Per adaptive batch (of `batch_ids`, the page's batches; else all): judgments spent against
    what fixed k-max would cost, and the items still undecided (all of them before the first
    refresh, then those the last one asked more of). 2 queries (1 when no batch is adaptive)."""
    adaptive = AdaptiveOverlap.objects.select_related("batch").order_by("batch__name")
    batches = list(adaptive if batch_ids is None else adaptive.filter(batch_id__in=batch_ids))
    ids = [a.batch_id for a in batches]
    counts = {
        r["batch_id"]: r
        for r in BatchTally.objects.filter(batch_id__in=ids, is_gold=False).values("batch_id").order_by("batch_id")
        .annotate(items=Sum("items"), judgments=Sum("judgments"))
    } if ids else {}
    rows = []
    for a in batches:
        c = counts.get(a.batch_id, {"items": 0, "judgments": 0})
        n_items, n_spent = c["items"], c["judgments"]
        cost = n_items * a.k_max
        rows.append({
            "batch": a.batch.name,
            "k_min": a.k_min,
            "k_max": a.k_max,
            "items": n_items,
            "judgments": n_spent,
            "fixed_k_max_judgments": cost,
            "share_of_fixed": _ratio(n_spent, cost),
            "undecided": 0 if a.settled else (a.undecided if a.rounds else n_items),
            "rounds": a.rounds,
            "settled": a.settled,
            "max_risk": a.policy.get("max_risk"),
        })
    return rows


def batches_page(*, page=1) -> dict:
    """(id, name) of a page of batches, by name (2 queries: their count, the page)."""
    pager, rows = paged(Batch.objects.order_by("name").values_list("pk", "name"), page, counted_by=Batch.objects.all(), size=PAGE_SIZE)
    return {"rows": rows, "page": pager}


def staffing_by_batch(*, batches=None) -> list[dict]:
    """Per batch (of the page: `batches`, (id, name) pairs; else all): the verifiers the context
    rule needs and its pools hold, and how many judgments came from a verifier who had seen a
    related item (the least-exposure fallback of a short batch), and how many items wait for a
    usable judgment (exposed judgments do not count towards k with
    `DIALTOM_EXPOSED_JUDGMENTS=exclude`). 6 queries at most."""
    if batches is None:
        batches = list(Batch.objects.order_by("name").values_list("pk", "name"))
    ids = [pk for pk, _ in batches]
    staffing = batch_staffing(batch_ids=ids)
    counts = {
        r["batch_id"]: r
        for r in BatchTally.objects.filter(batch_id__in=ids).values("batch_id").order_by("batch_id")
        .annotate(n=Sum("judgments"), exposed=Sum("exposed"))
    }
    waiting = dict(
        # an exposed judgment stored but not counted towards k (`exclude`): judged > answered
        QueueSlot.objects.filter(batch_id__in=ids, is_gold=False, answered__lt=F("needed"), judged__gt=F("answered"))
        .values("batch_id").order_by("batch_id").annotate(n=Count("item_id")).values_list("batch_id", "n")
    )
    rows = []
    for pk, name in batches:
        n = counts.get(pk, {"n": 0, "exposed": 0})
        rows.append({"batch": name, **staffing[pk].as_dict(), "judgments": n["n"], "exposed": n["exposed"],
                     "exposed_share": _ratio(n["exposed"], n["n"]), "waiting_for_usable": waiting.get(pk, 0)})
    return rows


def throughput_by_day(*, days: int = 30) -> list[dict]:
    """Judgments per (UTC) day and cumulative judgments, for the last `days` days (1 query, on `BatchDayTally`)."""
    start = (timezone.now() - timedelta(days=days - 1)).date()
    # the days before the window fall into one bucket, the day before it
    per_day = dict(
        BatchDayTally.objects.annotate(bucket=Greatest("day", start - timedelta(days=1))).values("bucket").order_by("bucket")
        .annotate(n=Sum("judgments")).values_list("bucket", "n")
    )
    out, cumulative = [], per_day.get(start - timedelta(days=1), 0)
    for offset in range(days):
        day = start + timedelta(days=offset)
        n = per_day.get(day, 0)
        cumulative += n
        out.append({"day": day.isoformat(), "judgments": n, "cumulative": cumulative})
    return out


# --- Agreement ------------------------------------------------------------------------------


def _flag(ac1) -> bool:
    return ac1 is not None and ac1 < settings.DIALTOM_AC1_FLAG_THRESHOLD


# Below this many items an AC1's interval says nothing (a handful of items, or a
# degenerate interval of width 0): the page marks it "n too small" and draws no whisker.
AC1_MIN_ITEMS = 5


def _too_few(items, low, high) -> bool:
    return (items or 0) < getattr(settings, "DIALTOM_AC1_MIN_ITEMS", AC1_MIN_ITEMS) or (low is not None and low == high)


def _group_rows(batch: str, by_group) -> list[dict]:
    """Flattens BatchResult.by_group ({"<task>:<domain>": {...}}, nested dicts or a list) into rows."""
    rows = []

    def visit(path, value):
        if isinstance(value, dict) and ("ac1" in value or "retained" in value):
            task = value.get("task") or (path[0] if path else "")
            domain = value.get("domain") or (path[1] if len(path) > 1 else "")
            rows.append({"batch": batch, "task": task, "domain": domain, **{k: value.get(k) for k in GROUP_FIELDS}})
        elif isinstance(value, dict):
            for key, sub in value.items():
                parts = [p for p in str(key).replace("×", ":").replace("|", ":").replace("/", ":").split(":") if p]
                visit([*path, *[p.strip() for p in parts]], sub)
        elif isinstance(value, list):
            for sub in value:
                visit(path, sub)

    visit([], by_group or {})
    for row in rows:
        if row.get("ac1_ci_low") is None and isinstance(row.get("ac1_ci"), list | tuple) and len(row["ac1_ci"]) == 2:
            row["ac1_ci_low"], row["ac1_ci_high"] = row["ac1_ci"]
        row["flagged"] = _flag(row.get("ac1"))
        row["too_few"] = _too_few(row.get("items"), row.get("ac1_ci_low"), row.get("ac1_ci_high"))
    return rows


GROUP_FIELDS = ("items", "retained", "ac1", "ac1_ci", "ac1_ci_low", "ac1_ci_high", "kappa", "alpha")


def agreement_overview(*, page=1, groups: bool = True) -> dict:
    """AC1 with CI, kappa and alpha per batch (current run; a page of 25 batches: `page=None`,
    every batch), and per task × domain of those batches unless `groups` is false (the page's
    table of batches: the groups are a section of their own, loaded when shown) (2 queries: the
    count of current results, from their partial index, and the page)."""
    current = BatchResult.objects.filter(is_current=True)  # each batch's current run
    results = current.select_related("batch").order_by("batch__name").defer("details", "timings",
                                                                           *(() if groups else ("by_group",)))
    if page is None:
        pager = Page(1, 1, 0)
        results = list(results)
        pager.total = len(results)
    else:
        pager, results = paged(results, page, counted_by=current, size=PAGE_SIZE)
    results = list(results)
    batches = [
        {
            "batch": br.batch.name,
            "run": br.run_id,
            "items": br.items,
            "judgments": br.judgments,
            "retained": br.retained,
            "retention": br.retention,
            "ac1": br.ac1,
            "ac1_ci_low": br.ac1_ci_low,
            "ac1_ci_high": br.ac1_ci_high,
            "kappa": br.kappa,
            "alpha": br.alpha,
            "flagged": _flag(br.ac1),
            "too_few": _too_few(br.items, br.ac1_ci_low, br.ac1_ci_high),
        }
        for br in results
    ]
    groups = [row for br in results for row in _group_rows(br.batch.name, br.by_group)] if groups else []
    groups.sort(key=lambda r: (r["task"] or "", r["domain"] or "", r["batch"]))
    return {"batches": batches, "groups": groups, "page": pager, "threshold": settings.DIALTOM_AC1_FLAG_THRESHOLD,
            "min_items": getattr(settings, "DIALTOM_AC1_MIN_ITEMS", AC1_MIN_ITEMS)}


# --- Retention ------------------------------------------------------------------------------


FUNNEL_STEPS = ("imported", "audited", "aggregated", "retained")


def retention_funnel(*, cells: list | None = None, tallies: list[dict] | None = None) -> list[dict]:
    """Per task, what became of the imported items (gold excluded): imported → audited (at
    least one judgment) → aggregated (in the current run of its batch, with judgments) →
    retained (2 queries, on the tallies: `BatchTally` (`tally_sums_by_task`, unless `tallies`
    brings them), `CurrentResultCell` (unless `cells` does))."""
    items = {
        row["task"]: {"imported": row["items"], "audited": row["judged_items"]}
        for row in (tally_sums_by_task() if tallies is None else tallies) if not row["is_gold"]
    }
    counts: dict[str, dict] = {}
    for cell in (list(CurrentResultCell.objects.all()) if cells is None else cells) if items else []:
        c = counts.setdefault(cell.task, {"total": 0, "retained": 0})
        c["total"] += cell.total
        c["retained"] += cell.retained
    rows = []
    for task in sorted(items):
        current = counts.get(task, {"total": 0, "retained": 0})
        row = {"task": task, "imported": items[task]["imported"], "audited": items[task]["audited"],
               "aggregated": current["total"], "retained": current["retained"]}
        row["steps"] = [{"step": step, "n": row[step], "share": _ratio(row[step], row["imported"])} for step in FUNNEL_STEPS]
        rows.append(row)
    return rows


def _rate(retained: int, total: int) -> float | None:
    return round(retained / total, 6) if total else None


def retention_overview(*, last_runs: int = 10) -> dict:
    """Retained / total audited items per task, domain, attribute × task (current runs), and per
    succeeded run (2 queries, on `CurrentResultCell` and `RunRetention`, written by the
    aggregation job: `aggregation.summaries`).

    A run's `change` compares like with like: its rate on the batches aggregated before it,
    minus the rate of those batches' latest earlier results (`change_batches` says how many);
    a run on batches never aggregated before has no change.
    """
    cells = list(CurrentResultCell.objects.order_by("task", "domain", "attribute"))
    runs = list(RunRetention.objects.select_related("run").only("run__finished_at", *RUN_RETENTION_FIELDS)
                .order_by("-run_id")[:last_runs])

    def table(field):
        sums: dict[str, list[int]] = {}
        for cell in cells:
            pair = sums.setdefault(getattr(cell, field) or "(none)", [0, 0])
            pair[0] += cell.retained
            pair[1] += cell.total
        return [{"group": k, "total": t, "retained": r, "rate": _rate(r, t)} for k, (r, t) in sorted(sums.items())]

    retained, total = sum(c.retained for c in cells), sum(c.total for c in cells)
    history = [
        {
            "run": r.run_id,
            "finished_at": r.run.finished_at,
            "total": r.total,
            "retained": r.retained,
            "rate": _ratio(r.retained, r.total),
            "retrospective": _ratio(r.retro_retained, r.retro_total),
            "prospective": _ratio(r.prosp_retained, r.prosp_total),
            "change": r.change,
            "change_batches": r.change_batches,
        }
        for r in runs
    ]
    return {
        "overall": {"total": total, "retained": retained, "rate": _rate(retained, total)},
        "task": table("task"),
        "domain": table("domain"),
        "attribute": _retention_by_attribute_and_task(cells=cells),
        "runs": history,
        "cells": cells,
    }


RUN_RETENTION_FIELDS = ("run_id", "total", "retained", "retro_total", "retro_retained", "prosp_total", "prosp_retained",
                        "change", "change_batches")


def _retention_by_attribute_and_task(*, cells: list) -> list[dict]:
    """Per attribute: retained / total audited items over both tasks and for each (a prospective
    item's attribute is the state its distractors were made for), from the `CurrentResultCell`s."""
    sums: dict[tuple[str, str], list[int]] = {}
    for cell in cells:
        pair = sums.setdefault((cell.attribute or "(none)", cell.task), [0, 0])
        pair[0] += cell.retained
        pair[1] += cell.total
    out: dict[str, dict] = {}
    for (attribute, task), (retained, total) in sorted(sums.items()):
        entry = out.setdefault(attribute, {"group": attribute, "retained": 0, "total": 0,
                                           **{t: _cell(0, 0) for t in Task.values}})
        entry[task] = _cell(retained, total)
        entry["retained"] += retained
        entry["total"] += total
    for entry in out.values():
        entry["rate"] = _ratio(entry["retained"], entry["total"])
    return list(out.values())


def _cell(retained: int, total: int) -> dict:
    return {"retained": retained, "total": total, "rate": _ratio(retained, total)}


# --- People ----------------------------------------------------------------------------------


def verifier_stats(*, page=None) -> list[dict] | dict:
    """Per verifier: judgments, median seconds, gold and DS accuracy, NONE/MULTIPLE share,
    outliers (4 queries: the page of people, and the tallies `VerifierTally`, `VerifierSecondCount`,
    `CurrentWorkerTally`). With `page`: {"rows": one page of 25, "page": Page}."""
    people = User.objects.filter(Q(role=Role.VERIFIER) | Q(pk__in=VerifierTally.objects.values("verifier_id"))).order_by("username")
    pager = None
    people = people.only("id", "username", "excluded_from_aggregation")
    if page is not None:
        pager, people = paged(people, page, size=PAGE_SIZE)
    people = list(people)
    ids = [p.id for p in people]
    stats = {t.verifier_id: t for t in VerifierTally.objects.filter(verifier_id__in=ids)}
    seconds: dict[int, dict[int, int]] = {}
    for verifier_id, second, n in VerifierSecondCount.objects.filter(verifier_id__in=ids).values_list("verifier_id", "second", "n"):
        seconds.setdefault(verifier_id, {})[second] = n
    ds = {w.verifier_id: _ratio(w.weighted, w.n) for w in CurrentWorkerTally.objects.filter(verifier_id__in=ids)}
    out = []
    for user in people:
        s = stats.get(user.id) or VerifierTally()
        n = s.judgments
        counts = [s.l_a, s.l_b, s.l_c, s.l_d]
        letter_total = sum(counts)
        top_share = max(counts) / letter_total if letter_total else None
        top_letter = "ABCD"[counts.index(max(counts))] if letter_total else ""
        median_seconds = median_of(seconds.get(user.id, {}))
        outliers = []
        if n >= 20 and median_seconds is not None and median_seconds < settings.DIALTOM_FAST_SECONDS:
            outliers.append("too fast")
        if letter_total >= 20 and top_share is not None and top_share > settings.DIALTOM_LETTER_BIAS:
            outliers.append(f"one-letter bias ({top_letter})")
        out.append(
            {
                "id": user.id,
                "username": user.username,
                "excluded": user.excluded_from_aggregation,
                "judgments": n,
                "median_seconds": median_seconds,
                "gold_judgments": s.gold_n,
                "gold_accuracy": _ratio(s.gold_ok, s.gold_n),
                "ds_accuracy": ds.get(user.id),
                "none_share": _ratio(s.n_none, n),
                "multiple_share": _ratio(s.n_multiple, n),
                "top_letter": top_letter,
                "top_letter_share": top_share,
                "outliers": outliers,
            }
        )
    return out if pager is None else {"rows": out, "page": pager}


def crowd_worker_stats() -> list[dict]:
    """Per crowd worker: contexts written and times their work was sent back, from the
    references app's `reference_counts_by_worker` (2 queries)."""
    from references.selectors import reference_counts_by_worker  # noqa: PLC0415

    counts = reference_counts_by_worker()
    workers = User.objects.filter(Q(role=Role.CROWD_WORKER) | Q(id__in=list(counts))).order_by("username")
    return [
        {
            "username": w.username,
            "written": counts.get(w.id, {}).get("written", 0),
            "sent_back": counts.get(w.id, {}).get("sent_back", 0),
        }
        for w in workers
    ]


def latest_aggregation_run() -> AggregationRun | None:
    return AggregationRun.objects.order_by("-created_at", "-id").first()


from .versions import section_version, section_versions  # noqa: E402,F401 (the sections' fingerprints)
