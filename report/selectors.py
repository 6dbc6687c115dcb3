"""Reads behind the study report: the paper's tables from the studio's own results.

`study_report` gathers three sections, every number beside the page it comes from:

- verification: items audited, retained and retention (Dawid–Skene per batch, the current
  results of a batch, or those a release froze), pooled Gwet's AC1 with its CI and the
  range of the per-batch AC1 (the paper's "AC1 ∈ [0.88, 0.92]"), per task, task × domain,
  attribute and task × attribute. AC1 is computed over the choices the form offers the
  group's items (`aggregation.selectors.categories_for`), from the judgments aggregation
  reads (`usable_judgments`: the same rows a release's judgments.csv holds);
- evaluation: every model run and human baseline scored on the release: accuracy with
  Wilson CIs per task, domain, attribute and variant, and the paper's tests (χ² with
  Cramér's V between domains, Mann–Whitney U for Easy vs Hard, McNemar for the
  counterfactual profile, Pearson and Spearman between domains of per-model accuracy);
- references: BLEU and ROUGE-L of model inferences against the crowd references per
  attribute (the references app's similarity runs), BERTScore where a local model is set.
"""
from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals
from django.conf import settings
from django.db import connection
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from aggregation.agreement import agreement_summary
from aggregation.selectors import BASE_CATEGORIES, NOTA, categories_for, usable_judgments
from annotation.models import Batch, Item, Variant
from references.models import SimilarityRun, SimilarityRunStatus
from releases import selectors as release_selectors
from releases.models import Release, ReleaseStatus
from scoring import selectors as scoring_selectors
from scoring import stats as scoring_stats
from scoring.models import BaselineRun, ModelRun, ScoreStatus

from . import bertscore, stats

REPORT_FORMAT = 1
GROUPINGS = {
    "by_task": ("task",),
    "by_task_domain": ("task", "domain"),
    "by_attribute": ("attribute",),
    "by_task_attribute": ("task", "attribute"),
}
DIMENSIONS = ("task", "domain", "attribute", "variant")
RETENTION_FIELDS = {"task": "item__task", "domain": "item__context__domain_id", "attribute": "item__attribute"}
JUDGMENT_COLUMNS = ["item", "label", "batch", "task", "domain", "attribute", "variant"]


# --- which results: a release's, or the current ones -----------------------------------------


def release_pairs(*, release: Release) -> dict[int, int]:
    """batch id → aggregation run of the results a release froze (its manifest's agreement rows)."""
    rows = [(row["batch"], row["run"]) for row in (release.manifest or {}).get("agreement", [])]
    ids = dict(Batch.objects.filter(name__in=[name for name, _ in rows]).values_list("name", "id"))
    return {ids[name]: run for name, run in rows if name in ids}


def latest_ready_release() -> Release | None:
    return Release.objects.filter(status=ReleaseStatus.READY).order_by("-created_at", "-id").first()


# --- links: every number points at the page it comes from -------------------------------------


def _items_link(*, release: Release | None, **filters) -> str:
    """The item list a figure counts: the release's items filtered, or the staff's item list."""
    filters = {k: v for k, v in filters.items() if v}
    if release is not None:
        return reverse("releases:items", kwargs={"version": release.version}) + "?" + urlencode({"format": "csv", **filters})
    return reverse("review:items") + ("?" + urlencode(filters) if filters else "")


def _batch_link(name: str, *, only: str = "") -> str:
    return reverse("review:items") + "?" + urlencode({"batch": name, **({"only": only} if only else {})})


def _aggregation_run_link(run_id: int) -> str:
    return reverse("aggregation-run-detail", kwargs={"run_id": run_id})


# --- verification -----------------------------------------------------------------------------


def judgments_frame(*, batch_ids) -> pd.DataFrame:
    """The judgments the aggregation of these batches reads, on benchmark (non-gold) items,
    counted in SQL: one row per (item, label) with `n` judgments, not one per judgment."""
    rows = (
        usable_judgments().filter(item__batch_id__in=list(batch_ids), item__is_gold=False)
        .values_list("item_id", "label", "item__batch_id", "item__task", "item__context__domain_id",
                     "item__attribute", "item__variant")
        .annotate(n=Count("id"))
        .order_by()
    )
    # Read in chunks, each made compact (text columns as categoricals) before the next is read:
    # a list of every row as Python tuples took ~1.5 KB a row (600 MB at 400k items)
    columns = [*JUDGMENT_COLUMNS, "n"]
    texts = [c for c in JUDGMENT_COLUMNS if c not in ("item", "batch")]
    chunks, iterator = [], rows.iterator(chunk_size=20_000)
    while chunk := list(itertools.islice(iterator, 100_000)):
        part = pd.DataFrame.from_records(chunk, columns=columns)
        chunks.append(part.astype({c: "category" for c in texts}))
    if not chunks:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame({
        c: (union_categoricals([part[c] for part in chunks], sort_categories=True) if c in texts
            else np.concatenate([part[c].to_numpy() for part in chunks]))
        for c in columns
    })
    return frame.sort_values(["item", "label"], kind="mergesort").reset_index(drop=True)


def group_counts(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """items × categories counts of a group's judgments, over the choices the form offers its items."""
    categories = categories_for(kinds=set(zip(frame["task"], frame["variant"])))
    subjects = pd.Index(sorted(frame["item"].unique()))
    rows = pd.Categorical(frame["item"], categories=subjects).codes
    cols = pd.Categorical(frame["label"], categories=categories).codes
    keep = cols >= 0
    counts = np.zeros((len(subjects), len(categories)))
    np.add.at(counts, (rows[keep], cols[keep]), frame["n"].to_numpy(dtype=float)[keep])
    return counts, categories


_AC1_CELL = ("batch", "task", "domain", "attribute", "variant")


def _ac1_judgments_sql(batch_ids) -> tuple[str, list]:
    """The per (item, label) counts of `judgments_frame` as a common table expression named
    `judged`, columns (item, label, cell..., n); a CTE's column list works on SQLite too, where a
    derived table's column aliases do not."""
    sql, params = (
        usable_judgments().filter(item__batch_id__in=list(batch_ids), item__is_gold=False)
        .values_list("item_id", "label", "item__batch_id", "item__task", "item__context__domain_id",
                     "item__attribute", "item__variant")
        .annotate(n=Count("id")).order_by()
        .query.sql_with_params()
    )
    return f"judged (item, label, {', '.join(_AC1_CELL)}, n) AS ({sql})", list(params)


def batch_ac1s(*, batch_ids) -> dict[str, dict[tuple, dict[int, float | None]]]:
    """Gwet's AC1 (its value only) of each batch's part of every group of GROUPINGS:
    grouping -> group key -> batch id -> AC1, as `gwet_ac1(group_counts(part))` gives it, computed
    in SQL from per-item counts: what AC1 needs is additive over the items (how many were
    rated, how many twice or more, Σ pa_i, and Σ r_ik / r_i per choice), so the database
    returns those sums per (batch, task, domain, attribute, variant) and the groups add them up.

    A part offers NOTA when one of its items does (categories_for); a NOTA judgment on an item of
    a part that does not offer it is left out, as `group_counts` does: hence the sums twice,
    with and without NOTA judgments (`_n` columns)."""
    if not batch_ids:
        return {grouping: {} for grouping in GROUPINGS}
    judged, params = _ac1_judgments_sql(batch_ids)
    choices = [*BASE_CATEGORIES[:4], NOTA, *BASE_CATEGORIES[4:]]
    marks = ", ".join(["%s"] * len(choices))
    cell = ", ".join(_AC1_CELL)
    per_item = f"""
        WITH {judged},
        j AS (SELECT * FROM judged WHERE label IN ({marks})),
        i AS (SELECT item, {cell}, sum(n) AS r, sum(n * (n - 1)) AS pair,
                     sum(CASE WHEN label <> %s THEN n ELSE 0 END) AS r_n,
                     sum(CASE WHEN label <> %s THEN n * (n - 1) ELSE 0 END) AS pair_n
              FROM j GROUP BY item, {cell})"""
    head = [*params, *choices, NOTA, NOTA]
    items_sql = f"""{per_item}
        SELECT {cell}, count(*), sum(CASE WHEN r >= 2 THEN 1 ELSE 0 END),
               sum(CASE WHEN r >= 2 THEN pair * 1.0 / (r * (r - 1)) ELSE 0 END),
               sum(CASE WHEN r_n > 0 THEN 1 ELSE 0 END), sum(CASE WHEN r_n >= 2 THEN 1 ELSE 0 END),
               sum(CASE WHEN r_n >= 2 THEN pair_n * 1.0 / (r_n * (r_n - 1)) ELSE 0 END)
        FROM i GROUP BY {cell}"""
    shares_sql = f"""{per_item}
        SELECT {', '.join('j.' + c for c in _AC1_CELL)}, j.label, sum(j.n * 1.0 / i.r),
               sum(CASE WHEN j.label <> %s AND i.r_n > 0 THEN j.n * 1.0 / i.r_n ELSE 0 END)
        FROM j JOIN i ON i.item = j.item GROUP BY {', '.join('j.' + c for c in _AC1_CELL)}, j.label"""
    with connection.cursor() as cursor:
        cursor.execute(items_sql, head)
        items = {tuple(row[:5]): [float(v or 0) for v in row[5:]] for row in cursor.fetchall()}
        cursor.execute(shares_sql, [*head, NOTA])
        shares: dict[tuple, dict[str, tuple[float, float]]] = defaultdict(dict)
        for *key, label, share, share_n in cursor.fetchall():
            shares[tuple(key)][label] = (float(share or 0), float(share_n or 0))

    out: dict[str, dict[tuple, dict[int, float | None]]] = {}
    position = {name: n for n, name in enumerate(_AC1_CELL)}
    for grouping, keys in GROUPINGS.items():
        parts: dict[tuple, list[tuple]] = defaultdict(list)
        for key in items:
            parts[(tuple(key[position[k]] for k in keys), key[0])].append(key)
        result: dict[tuple, dict[int, float | None]] = defaultdict(dict)
        for (group, batch_id), cells in sorted(parts.items(), key=lambda kv: repr(kv[0])):
            categories = categories_for(kinds={(c[1], c[4]) for c in cells})
            nota, q = NOTA in categories, len(categories)
            base = 0 if nota else 3
            n, n2, pa_sum = (sum(items[c][base + k] for c in cells) for k in range(3))
            pi = defaultdict(float)
            for c in cells:
                for label, pair in shares[c].items():
                    pi[label] += pair[0 if nota else 1]
            if n == 0 or n2 == 0:
                result[group][batch_id] = None
                continue
            pe = sum((v / n) * (1 - v / n) for label, v in pi.items() if nota or label != NOTA) / (q - 1)
            result[group][batch_id] = None if math.isclose(pe, 1.0, rel_tol=0.0, abs_tol=1e-15) else \
                (pa_sum / n2 - pe) / (1 - pe)
        out[grouping] = dict(result)
    return out


def _retention_by(cells: list[dict], keys: tuple[str, ...]) -> dict[tuple, tuple[int, int]]:
    out: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for cell in cells:
        key = tuple(cell[RETENTION_FIELDS[k]] for k in keys)
        out[key][0] += cell["total"]
        out[key][1] += cell["retained"]
    return {key: (total, retained) for key, (total, retained) in out.items()}


def _batch_range(values: dict[str, float | None]) -> dict:
    """min, max and n of the per-batch AC1 (batches where it is defined), with the batches."""
    defined = {name: v for name, v in values.items() if v is not None}
    if not defined:
        return {"min": None, "max": None, "n": 0, "min_batch": None, "max_batch": None}
    low = min(defined, key=lambda name: (defined[name], name))
    high = max(defined, key=lambda name: (defined[name], name))
    return {"min": defined[low], "max": defined[high], "n": len(defined), "min_batch": low, "max_batch": high,
            "min_link": _batch_link(low), "max_link": _batch_link(high)}


def verification_section(*, pairs: dict[int, int], release: Release | None) -> dict:
    """Retention and agreement per task, task × domain, attribute and task × attribute, and per batch."""
    cells = release_selectors.retention_cells(pairs=pairs)
    frame = judgments_frame(batch_ids=pairs)
    names = dict(Batch.objects.filter(pk__in=list(pairs)).values_list("id", "name"))
    section: dict = {"judgments": int(frame["n"].sum()) if len(frame) else 0, "batches": []}
    batch_values = batch_ac1s(batch_ids=pairs)  # per-batch AC1 of each group, summed in SQL
    for result in release_selectors.current_batch_results(pairs=pairs):
        section["batches"].append({
            "batch": result.batch.name, "run": result.run_id, "items": result.items, "retained": result.retained,
            "retention": result.retention, "judgments": result.judgments, "ac1": result.ac1,
            "ac1_ci": [result.ac1_ci_low, result.ac1_ci_high] if result.ac1_ci_low is not None else None,
            "links": {"items": _batch_link(result.batch.name), "dropped": _batch_link(result.batch.name, only="not_retained"),
                      "run": _aggregation_run_link(result.run_id)},
        })
    for grouping, keys in GROUPINGS.items():
        retention = _retention_by(cells, keys)
        groups = ({key: group for key, group in frame.groupby(list(keys), sort=True, observed=True)}
                  if len(frame) else {})
        groups = {(key if isinstance(key, tuple) else (key,)): group for key, group in groups.items()}
        rows = []
        for key in sorted(set(retention) | set(groups)):
            total, kept = retention.get(key, (0, 0))
            group = groups.get(key)
            labels = dict(zip(keys, key))
            row = {**labels, "items": total, "retained": kept, "retention": kept / total if total else None}
            if group is None:
                row.update(judgments=0, ac1=None, ac1_se=None, ac1_ci=None, kappa=None, alpha=None, categories=[],
                           ac1_batches=_batch_range({}))
            else:
                counts, categories = group_counts(group)
                summary = agreement_summary(counts)
                per_batch = {names.get(batch_id, str(batch_id)): value
                             for batch_id, value in sorted(batch_values[grouping].get(key, {}).items())}
                row.update(
                    judgments=int(group["n"].sum()), ac1=summary["ac1"], ac1_se=summary["ac1_se"], ac1_ci=summary["ac1_ci"],
                    kappa=summary["kappa"], alpha=summary["alpha"], categories=categories,
                    ac1_batches=_batch_range(per_batch),
                )
            row["links"] = {"items": _items_link(release=release, **labels)}
            rows.append(row)
        section[grouping] = rows
    return section


# --- evaluation -------------------------------------------------------------------------------


def _cell_with_ci(cell: dict) -> dict:
    interval = stats.wilson_interval(correct=cell["correct"], n=cell["n"])
    return {**cell, "ci": list(interval) if interval else None}


def accuracy_with_ci(scores: dict) -> dict:
    """A stored correctness table (`scoring.stats.correctness_table`) with a Wilson CI in every cell."""
    out = {"overall": _cell_with_ci(scores["overall"])} if scores.get("overall") else {}
    for dimension in DIMENSIONS:
        out[dimension] = {key: _cell_with_ci(cell) for key, cell in sorted((scores.get(dimension) or {}).items())}
    return out


def counterfactual_mcnemar(*, run: ModelRun) -> dict | None:
    """McNemar's test on the same items with the true profile (the hard original) and the
    counterfactual one: pairs whose two items the run answered and the release retained."""
    correct = dict(run.predictions.exclude(correct=None).values_list("item_id", "correct"))
    pairs = Item.objects.filter(pk__in=list(correct), variant=Variant.COUNTERFACTUAL, parent__isnull=False)
    counts = {"both": 0, "only_a": 0, "only_b": 0, "neither": 0}
    for item_id, parent_id in pairs.values_list("pk", "parent_id"):
        if parent_id not in correct:
            continue
        key = {(True, True): "both", (True, False): "only_a", (False, True): "only_b", (False, False): "neither"}
        counts[key[(correct[parent_id], correct[item_id])]] += 1
    if not any(counts.values()):
        return None
    return {**scoring_stats.mcnemar(**counts), "a": "true profile", "b": "counterfactual profile"}


def _domain_cells(outcomes, *, task: str | None) -> dict[str, tuple[int, int]]:
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for o in outcomes:
        if o.variant == Variant.HARD and (task is None or o.task == task):
            cells[o.domain][0] += int(o.correct)
            cells[o.domain][1] += 1
    return {domain: (c, n) for domain, (c, n) in cells.items()}


def _model_tests(*, run: ModelRun) -> dict:
    outcomes = scoring_selectors.run_outcomes(run=run)
    paper = scoring_selectors.run_statistics(outcomes=outcomes)
    return {
        "domain_gap": {
            task: stats.chi_square_groups(_domain_cells(outcomes, task=task))
            for task in ("retrospective", "prospective")
        },
        "retrospective_vs_prospective": paper["retrospective_vs_prospective"],
        "easy_vs_hard": paper["easy_vs_hard"],
        "counterfactual": counterfactual_mcnemar(run=run),
    }


def _domain_gap_all(scores: dict) -> dict | None:
    return stats.chi_square_groups({d: (c["correct"], c["n"]) for d, c in (scores.get("domain") or {}).items()})


def domain_correlations(runs: list[dict]) -> list[dict]:
    """Pearson and Spearman between two domains of the per-model accuracy, for each pair of domains."""
    domains = sorted({d for run in runs for d in run["accuracy"].get("domain", {})})
    out = []
    for a, b in itertools.combinations(domains, 2):
        both = [r for r in runs if a in r["accuracy"]["domain"] and b in r["accuracy"]["domain"]]
        x = [r["accuracy"]["domain"][a]["rate"] for r in both]
        y = [r["accuracy"]["domain"][b]["rate"] for r in both]
        result = stats.correlation(x, y)
        out.append({"a": a, "b": b, "runs": [r["name"] for r in both], **(result or {"n": len(both)}),
                    "note": None if result else "needs 3 models or more, and accuracy that varies in both domains"})
    return out


def evaluation_section(*, release: Release | None) -> dict:
    """Accuracy with Wilson CIs and the paper's tests for every run and baseline scored on the release."""
    if release is None:
        return {"release": None, "runs": [], "baselines": [], "correlations": [],
                "note": "no ready release: model runs and baselines are scored on a release"}
    runs = []
    for run in ModelRun.objects.filter(release=release, status=ScoreStatus.SUCCEEDED).order_by("name"):
        tests = _model_tests(run=run)
        tests["domain_gap"]["all"] = _domain_gap_all(run.scores)
        runs.append({
            "name": run.name, "model": run.model_name, "kind": "model",
            "accuracy": accuracy_with_ci(run.scores), "tests": tests,
            "links": {"run": reverse("leaderboard-run", kwargs={"name": run.name})},
        })
    baselines, seen = [], set()
    for baseline in BaselineRun.objects.filter(release=release, status=ScoreStatus.SUCCEEDED).select_related("pool"):
        if baseline.pool_id in seen:  # newest first: the latest of each pool
            continue
        seen.add(baseline.pool_id)
        baselines.append({
            "name": f"human-{baseline.pool.name}", "pool": baseline.pool.name, "kind": "baseline",
            "accuracy": accuracy_with_ci(baseline.scores), "tests": {"domain_gap": {"all": _domain_gap_all(baseline.scores)}},
            "links": {"run": reverse("leaderboard") + "#baselines"},
        })
    baselines.sort(key=lambda b: b["name"])
    note = None
    if not runs and not baselines:
        note = "no model run or human baseline is scored on this release yet"
    return {"release": release.version, "runs": runs, "baselines": baselines, "correlations": domain_correlations(runs),
            "note": note}


# --- references -------------------------------------------------------------------------------


def references_section() -> dict:
    """BLEU and ROUGE-L per attribute of every finished similarity run; BERTScore where available."""
    available, reason = bertscore.availability()
    runs = []
    for run in SimilarityRun.objects.filter(status=SimilarityRunStatus.DONE).prefetch_related("scores").order_by("name", "id"):
        by_attribute = [
            {"attribute": s.attribute, "bleu": s.bleu, "rouge_l": s.rouge_l, "bertscore": None,
             "n_contexts": s.n_contexts, "n_references": s.n_references, "n_skipped": s.n_skipped}
            for s in sorted(run.scores.all(), key=lambda s: (s.attribute == "all", s.attribute))
        ]
        if available:
            scores = bertscore.run_scores(run=run)
            for row in by_attribute:
                row["bertscore"] = scores.get(row["attribute"])
        runs.append({"name": run.name, "id": run.pk, "by_attribute": by_attribute,
                     "links": {"run": reverse("references:similarity-run", kwargs={"run_id": run.pk})}})
    return {"runs": runs, "bertscore": {"available": available, "reason": reason,
                                        "model_dir": settings.DIALTOM_BERTSCORE_MODEL_DIR or None}}


# --- the whole report -------------------------------------------------------------------------


def study_report(*, release: Release | None = None, pairs: dict[int, int] | None = None) -> dict:
    """The study report of a release (its frozen results, the runs scored on it) or, without
    one, of the current results with the runs scored on the latest ready release."""
    if pairs is None:
        pairs = release_pairs(release=release) if release is not None else release_selectors.current_batch_runs()
    evaluated = release if release is not None else latest_ready_release()
    return {
        "format": REPORT_FORMAT,
        "generated_at": timezone.now().isoformat(),
        "release": release.version if release is not None else None,
        "results": f"release {release.version}" if release is not None else "current results",
        "retention_threshold": settings.DIALTOM_RETENTION_THRESHOLD,
        "links": {
            "release": reverse("release-pages:detail", kwargs={"version": evaluated.version}) if evaluated else None,
            "dashboard": reverse("dashboard:index"),
            "leaderboard": reverse("leaderboard"),
        },
        "verification": verification_section(pairs=pairs, release=release),
        "evaluation": evaluation_section(release=evaluated),
        "references": references_section(),
    }
