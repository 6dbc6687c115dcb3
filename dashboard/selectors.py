"""Reads behind the staff dashboard. Each selector runs a fixed, small number of queries
(tested with django_assert_num_queries), whatever the number of batches, items or people.
"""
import statistics
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Aggregate, Count, Exists, F, FloatField, Min, OuterRef, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import Role, User
from aggregation.models import AggregationRun, ItemResult, RunStatus, WorkerResult
from annotation.models import Batch, Item, Task
from releases.selectors import pairs_q
from releases.selectors import current_batch_results, current_batch_runs, retention_cells, retention_counts
from verification.models import AdaptiveOverlap, Claim, ClaimStatus, Judgment, Label, QueueSlot
from verification.queue import batch_staffing


class Median(Aggregate):
    """PostgreSQL's percentile_cont(0.5): the median inside the database."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _ratio(num, den):
    return num / den if den else None


# --- Progress -----------------------------------------------------------------------------

PROGRESS_SQL = """
WITH j AS (SELECT item_id, COUNT(*) AS n FROM {judgment} GROUP BY item_id),
     c AS (SELECT DISTINCT item_id FROM {claim} WHERE status = %s AND expires_at > %s),
     a AS (SELECT DISTINCT ir.item_id FROM {itemresult} ir JOIN {run} r ON r.id = ir.run_id WHERE r.status = %s)
SELECT b.id, b.name, b.status, b.overlap,
       COUNT(i.id),
       SUM(CASE WHEN COALESCE(j.n, 0) > b.overlap THEN b.overlap ELSE COALESCE(j.n, 0) END),
       SUM(CASE WHEN i.id IS NOT NULL AND a.item_id IS NULL AND COALESCE(j.n, 0) = 0 AND c.item_id IS NULL THEN 1 ELSE 0 END),
       SUM(CASE WHEN a.item_id IS NULL AND COALESCE(j.n, 0) < b.overlap
                 AND (COALESCE(j.n, 0) > 0 OR c.item_id IS NOT NULL) THEN 1 ELSE 0 END),
       SUM(CASE WHEN a.item_id IS NULL AND COALESCE(j.n, 0) >= b.overlap THEN 1 ELSE 0 END),
       SUM(CASE WHEN a.item_id IS NOT NULL THEN 1 ELSE 0 END)
FROM {batch} b
LEFT JOIN {item} i ON i.batch_id = b.id
LEFT JOIN j ON j.item_id = i.id
LEFT JOIN c ON c.item_id = i.id
LEFT JOIN a ON a.item_id = i.id
GROUP BY b.id, b.name, b.status, b.overlap
ORDER BY b.name
"""


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


def progress_by_batch(*, window_days: int = 7) -> dict:
    """Judgments done / needed and items per state per batch, with throughput and ETA (2 queries).

    Item states: open (no judgment, no live claim), in progress (some judgments or a live
    claim, fewer than k), complete (k judgments, not aggregated yet), aggregated (has a
    result in a succeeded aggregation run). The ETA divides what is left by the judgments
    per day of the last `window_days` days.
    """
    now = timezone.now()
    sql = PROGRESS_SQL.format(
        judgment=Judgment._meta.db_table,
        claim=Claim._meta.db_table,
        itemresult=ItemResult._meta.db_table,
        run=AggregationRun._meta.db_table,
        batch=Batch._meta.db_table,
        item=Item._meta.db_table,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [ClaimStatus.ACTIVE, now, RunStatus.SUCCEEDED])
        rows = [BatchProgress(*(r[:4]), *(int(v or 0) for v in r[4:])) for r in cursor.fetchall()]

    since = now - timedelta(days=window_days)
    recent = {
        r["batch_id"]: r
        for r in Judgment.objects.filter(created_at__gte=since)
        .values("batch_id")
        .annotate(n=Count("id"), first=Min("created_at"))
        .order_by("batch_id")
    }
    total_recent = 0
    first_recent = None
    for batch in rows:
        r = recent.get(batch.id)
        if r:
            days = max(1.0, (now - r["first"]).total_seconds() / 86400)
            batch.rate_per_day = r["n"] / days
            total_recent += r["n"]
            first_recent = r["first"] if first_recent is None else min(first_recent, r["first"])
        batch.eta_days = _eta(batch.needed - batch.done, batch.rate_per_day)

    overall = BatchProgress(
        id=0,
        name="all batches",
        status="",
        overlap=0,
        items=sum(b.items for b in rows),
        done=sum(b.done for b in rows),
        open=sum(b.open for b in rows),
        in_progress=sum(b.in_progress for b in rows),
        complete=sum(b.complete for b in rows),
        aggregated=sum(b.aggregated for b in rows),
    )
    needed = sum(b.needed for b in rows)
    overall_rate = total_recent / max(1.0, (now - first_recent).total_seconds() / 86400) if first_recent else None
    return {
        "batches": rows,
        "overall": overall,
        "needed": needed,
        "share": _ratio(overall.done, needed) or 0.0,
        "percent": round(100 * (_ratio(overall.done, needed) or 0.0), 1),
        "rate_per_day": overall_rate,
        "eta_days": _eta(needed - overall.done, overall_rate),
        "eta": (now + timedelta(days=_eta(needed - overall.done, overall_rate))).date()
        if _eta(needed - overall.done, overall_rate) is not None
        else None,
    }


def adaptive_overlap_by_batch() -> list[dict]:
    """Per adaptive batch: judgments spent against what fixed k-max would cost, and the items
    still undecided (all of them before the first refresh, then those the last one asked more of). 3 queries."""
    batches = list(AdaptiveOverlap.objects.select_related("batch").order_by("batch__name"))
    ids = [a.batch_id for a in batches]
    spent = dict(
        Judgment.objects.filter(batch_id__in=ids, item__is_gold=False).values("batch_id").annotate(n=Count("id")).values_list("batch_id", "n")
    )
    items = dict(
        QueueSlot.objects.filter(batch_id__in=ids, is_gold=False).values("batch_id").annotate(n=Count("pk")).values_list("batch_id", "n")
    )
    rows = []
    for a in batches:
        n_items, n_spent = items.get(a.batch_id, 0), spent.get(a.batch_id, 0)
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


def staffing_by_batch() -> list[dict]:
    """Per batch: the verifiers the context rule needs and its pools hold, and how many
    judgments came from a verifier who had seen a related item (the least-exposure
    fallback of a short batch), and how many items wait for a usable judgment (exposed
    judgments do not count towards k with `DIALTOM_EXPOSED_JUDGMENTS=exclude`). 6 queries at most."""
    batches = list(Batch.objects.order_by("name").values_list("pk", "name"))
    staffing = batch_staffing(batch_ids=[pk for pk, _ in batches])
    counts = {
        r["batch_id"]: r
        for r in Judgment.objects.filter(batch_id__in=[pk for pk, _ in batches])
        .values("batch_id")
        .order_by("batch_id")
        .annotate(n=Count("id"), exposed=Count("id", filter=Q(exposed=True)))
    }
    waiting = dict(
        QueueSlot.objects.filter(batch_id__in=[pk for pk, _ in batches], is_gold=False, answered__lt=F("needed"))
        .filter(Exists(Judgment.objects.filter(item_id=OuterRef("item_id"), exposed=True)))
        .values("batch_id").order_by("batch_id").annotate(n=Count("item_id")).values_list("batch_id", "n")
    )
    rows = []
    for pk, name in batches:
        n = counts.get(pk, {"n": 0, "exposed": 0})
        rows.append({"batch": name, **staffing[pk].as_dict(), "judgments": n["n"], "exposed": n["exposed"],
                     "exposed_share": _ratio(n["exposed"], n["n"]), "waiting_for_usable": waiting.get(pk, 0)})
    return rows


def throughput_by_day(*, days: int = 30) -> list[dict]:
    """Judgments per day and cumulative judgments, for the last `days` days (2 queries)."""
    since = (timezone.now() - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    before = Judgment.objects.filter(created_at__lt=since).count()
    per_day = {
        r["day"]: r["n"]
        for r in Judgment.objects.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"))
        .order_by("day")
    }
    out, cumulative = [], before
    start = since.date()
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


def agreement_overview() -> dict:
    """AC1 with CI, kappa and alpha per batch (current run), and per task × domain (2 queries)."""
    results = list(current_batch_results())
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
    groups = [row for br in results for row in _group_rows(br.batch.name, br.by_group)]
    groups.sort(key=lambda r: (r["task"] or "", r["domain"] or "", r["batch"]))
    return {"batches": batches, "groups": groups, "threshold": settings.DIALTOM_AC1_FLAG_THRESHOLD,
            "min_items": getattr(settings, "DIALTOM_AC1_MIN_ITEMS", AC1_MIN_ITEMS)}


# --- Retention ------------------------------------------------------------------------------


FUNNEL_STEPS = ("imported", "audited", "aggregated", "retained")


def retention_funnel() -> list[dict]:
    """Per task, what became of the imported items (gold excluded): imported → audited (at
    least one judgment) → aggregated (in the current run of its batch, with judgments) →
    retained (3 queries: the items, the current runs, their results)."""
    judged = Judgment.objects.filter(item_id=OuterRef("pk"))
    items = {
        row["task"]: row
        for row in Item.objects.filter(is_gold=False).values("task").order_by("task")
        .annotate(imported=Count("id"), audited=Count("id", filter=Q(Exists(judged))))
    }
    counts = retention_counts(pairs=current_batch_runs())["task"] if items else {}
    rows = []
    for task in sorted(items):
        current = counts.get(task, {"total": 0, "retained": 0})
        row = {"task": task, "imported": items[task]["imported"], "audited": items[task]["audited"],
               "aggregated": current["total"], "retained": current["retained"]}
        row["steps"] = [{"step": step, "n": row[step], "share": _ratio(row[step], row["imported"])} for step in FUNNEL_STEPS]
        rows.append(row)
    return rows


def retention_overview(*, last_runs: int = 10) -> dict:
    """Retained / total audited items per task, domain, attribute × task (current runs), and
    per succeeded run (4 queries: the current results are read once, `retention_cells`).

    A run's `change` compares like with like: its rate on the batches an earlier run in the
    window also covered, minus the rate of those batches' latest earlier results (`change_batches`
    says how many); a run on batches never aggregated before has no change.
    """
    pairs = current_batch_runs()
    current = retention_cells(pairs=pairs)
    counts = retention_counts(pairs=pairs, cells=current)
    runs = list(AggregationRun.objects.filter(status=RunStatus.SUCCEEDED).order_by("-id")[:last_runs])
    per_run: dict[int, dict[tuple[int, str], tuple[int, int]]] = {}
    rows = (
        ItemResult.objects.filter(run__in=[r.id for r in runs], item__is_gold=False, n_judgments__gt=0)
        .values("run_id", "batch_id", "item__task")
        .annotate(total=Count("id"), retained=Count("id", filter=Q(retained=True)))
        .order_by("run_id", "batch_id", "item__task")
    )
    for row in rows:
        per_run.setdefault(row["run_id"], {})[(row["batch_id"], row["item__task"])] = (row["retained"], row["total"])

    def sums(cells, *, batches=None, task=None) -> tuple[int, int]:
        picked = [v for (b, t), v in cells.items() if (batches is None or b in batches) and (task is None or t == task)]
        return sum(v[0] for v in picked), sum(v[1] for v in picked)

    history = []
    latest: dict[tuple[int, str], tuple[int, int]] = {}  # (batch, task) -> the latest earlier result
    for run in sorted(runs, key=lambda r: r.id):
        cells = per_run.get(run.id, {})
        batches = {b for b, _ in cells}
        retained, total = sums(cells)
        common = batches & {b for b, _ in latest}
        change = None
        if common:
            before, now = _ratio(*sums(latest, batches=common)), _ratio(*sums(cells, batches=common))
            change = None if before is None or now is None else now - before
        history.append(
            {
                "run": run.id,
                "finished_at": run.finished_at,
                "total": total,
                "retained": retained,
                "rate": _ratio(retained, total),
                "retrospective": _ratio(*sums(cells, task="retrospective")),
                "prospective": _ratio(*sums(cells, task="prospective")),
                "change": change,
                "change_batches": len(common),
            }
        )
        latest = {key: value for key, value in latest.items() if key[0] not in batches} | cells  # replaced, not merged
    history.reverse()

    def table(key):
        return [{"group": k, **v} for k, v in counts[key].items()]

    return {
        "overall": counts["overall"],
        "task": table("task"),
        "domain": table("domain"),
        "attribute": _retention_by_attribute_and_task(cells=current),
        "runs": history,
    }


def _retention_by_attribute_and_task(*, cells: list[dict]) -> list[dict]:
    """Per attribute: retained / total audited items over both tasks and for each (a prospective
    item's attribute is the state its distractors were made for), from the `retention_cells`."""
    sums: dict[tuple[str, str], list[int]] = {}
    for cell in cells:
        pair = sums.setdefault((cell["item__attribute"], cell["item__task"]), [0, 0])
        pair[0] += cell["retained"]
        pair[1] += cell["total"]
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


def verifier_stats() -> list[dict]:
    """Per verifier: judgments, median seconds, gold and DS accuracy, NONE/MULTIPLE share, outliers (4 queries)."""
    letters = {f"l_{x}": Count("id", filter=Q(displayed_label=x)) for x in "ABCD"}
    in_database = connection.vendor == "postgresql"
    median = {"median_seconds": Median("seconds_spent")} if in_database else {}
    stats = {
        r["verifier_id"]: r
        for r in Judgment.objects.values("verifier_id")
        .annotate(
            n=Count("id"),
            **median,
            n_none=Count("id", filter=Q(label=Label.NONE)),
            n_multiple=Count("id", filter=Q(label=Label.MULTIPLE)),
            gold_n=Count("id", filter=Q(item__is_gold=True)),
            gold_ok=Count("id", filter=Q(item__is_gold=True, label=F("item__answer"))),
            **letters,
        )
        .order_by("verifier_id")
    }
    if not in_database:  # SQLite (the demo): the median in Python, one more query
        seconds: dict[int, list[float]] = {}
        for verifier_id, value in Judgment.objects.exclude(seconds_spent=None).values_list("verifier_id", "seconds_spent"):
            seconds.setdefault(verifier_id, []).append(value)
        for verifier_id, row in stats.items():
            row["median_seconds"] = statistics.median(seconds[verifier_id]) if verifier_id in seconds else None
    pairs = current_batch_runs()
    ds = {}
    if pairs:
        q = pairs_q(pairs)
        ds = {
            r["verifier_id"]: _ratio(r["weighted"], r["n"])
            for r in WorkerResult.objects.filter(q)
            .values("verifier_id")
            .annotate(weighted=Sum(F("accuracy") * F("n_judgments"), output_field=FloatField()), n=Sum("n_judgments"))
            .order_by("verifier_id")
        }
    people = User.objects.filter(Q(role=Role.VERIFIER) | Q(id__in=list(stats))).order_by("username")
    out = []
    for user in people:
        s = stats.get(user.id, {})
        n = s.get("n", 0)
        counts = [s.get(f"l_{x}", 0) for x in "ABCD"]
        letter_total = sum(counts)
        top_share = max(counts) / letter_total if letter_total else None
        top_letter = "ABCD"[counts.index(max(counts))] if letter_total else ""
        median_seconds = s.get("median_seconds")
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
                "gold_judgments": s.get("gold_n", 0),
                "gold_accuracy": _ratio(s.get("gold_ok", 0), s.get("gold_n", 0)),
                "ds_accuracy": ds.get(user.id),
                "none_share": _ratio(s.get("n_none", 0), n),
                "multiple_share": _ratio(s.get("n_multiple", 0), n),
                "top_letter": top_letter,
                "top_letter_share": top_share,
                "outliers": outliers,
            }
        )
    return out


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


