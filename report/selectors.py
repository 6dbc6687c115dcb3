"""Reads behind the study report: the paper's tables from the studio's own results.

`study_report` gathers three sections, every number beside the page it comes from:

- verification: items audited, retained and retention (Dawid–Skene per batch, the current
  results of a batch, or those a release froze), pooled Gwet's AC1 with its CI and the
  range of the per-batch AC1 (the paper's "AC1 ∈ [0.88, 0.92]"), per task, task × domain,
  attribute and task × attribute. AC1 is computed over the choices the form offers the
  group's items (`aggregation.selectors.categories_for`), over the judgments each batch's run
  fitted, summed in SQL from the patterns of counts the aggregation job keeps per cell
  (`aggregation.models.AgreementPattern`, `agreement_by_group`): no pass over the judgments;
- evaluation: every model run and human baseline scored on the release: accuracy with
  Wilson CIs per task, domain, attribute and variant, and the paper's tests (χ² with
  Cramér's V between domains, Mann–Whitney U for Easy vs Hard, McNemar for the
  counterfactual profile, Pearson and Spearman between domains of per-model accuracy);
- references: BLEU and ROUGE-L of model inferences against the crowd references per
  attribute (the references app's similarity runs), BERTScore where a local model is set.
"""
from __future__ import annotations

import functools
import itertools
import json
from collections import defaultdict

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import FloatField
from django.db.models.functions import Cast
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from aggregation.agreement import AgreementSums, summary_from_sums
from aggregation.current import pairs_q
from aggregation.models import AgreementPattern
from aggregation.selectors import AGREEMENT_CELL, AGREEMENT_CHOICES, BASE_CATEGORIES, NOTA, categories_for
from annotation.models import Batch, Item, Task, Variant
from dialtom_site.db.planner import jit_off
from references.models import SimilarityRun, SimilarityRunStatus
from releases import selectors as release_selectors
from releases.models import ManifestRow, Release, ReleaseStatus
from scoring import selectors as scoring_selectors
from scoring import stats as scoring_stats
from scoring.models import BaselineRun, ModelRun, ScoreStatus

from . import bertscore, stats

REPORT_FORMAT = 1
REPORT_FILES = ("report.json", "report.tex")  # frozen into a release as it is built (`services`)
GROUPINGS = {
    "by_task": ("task",),
    "by_task_domain": ("task", "domain"),
    "by_attribute": ("attribute",),
    "by_task_attribute": ("task", "attribute"),
}
DIMENSIONS = ("task", "domain", "attribute", "variant")
RETENTION_FIELDS = dict(release_selectors.RETENTION_GROUPS)  # a dimension → the field of a retention cell


# --- which results: a release's, or the current ones -----------------------------------------


def release_pairs(*, release: Release) -> dict[int, int]:
    """batch id → aggregation run of the results a release froze (its manifest's agreement rows,
    kept a row each: `ManifestRow`)."""
    rows = list(ManifestRow.objects.filter(release=release, kind="agreement").values_list("row__batch", "row__run"))
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


# AC1 is computed over AGREEMENT_CHOICES: a group offering NOTA has all seven, another the six others
# (categories_for); NOTA judgments on items of a group without it are left out


def _terms_sql(choices: tuple[str, ...], v: str) -> str:
    """SQL: an item's terms of the `AgreementSums` over `choices` (suffix `v`), from its counts c0…:
    whether it was rated (1, else NULL), t = 1 where rated twice (else NULL, so a product with it
    counts only those items), pa_i, r and Σ r_ik(r_ik − 1)/(r − 1) where rated twice, and its share
    of each choice."""
    c = [f"c{AGREEMENT_CHOICES.index(k)}" for k in choices]
    r = "(" + " + ".join(c) + ")"
    pair = "(" + " + ".join(f"{x} * ({x} - 1)" for x in c) + ")"
    return ", ".join([
        f"CASE WHEN {r} > 0 THEN 1.0 END AS rated{v}", f"CASE WHEN {r} >= 2 THEN 1.0 END AS t{v}",
        f"CASE WHEN {r} >= 2 THEN {pair} / ({r} * ({r} - 1)) ELSE 0 END AS pa{v}",
        f"CASE WHEN {r} >= 2 THEN {r} END AS r{v}", f"CASE WHEN {r} >= 2 THEN {pair} / ({r} - 1) END AS ao{v}",
        *(f"CASE WHEN {r} > 0 THEN {x} * 1.0 / {r} END AS s{v}_{n}" for n, x in enumerate(c)),
    ])


def _sums_sql(choices: tuple[str, ...], v: str) -> list[str]:
    """SQL: the `AgreementSums` fields of a cell's items over `choices`, from `_terms_sql`'s columns
    of each pattern of counts and `m`, how many items have it, in the order `_sums` reads them: each
    a plain sum (NULL terms left out)."""
    q = len(choices)
    c = [f"c{AGREEMENT_CHOICES.index(k)}" for k in choices]
    shares = [f"s{v}_{n}" for n in range(q)]
    out = [f"sum(m * rated{v})", f"sum(m * t{v})", f"sum(m * pa{v})", f"sum(m * pa{v} * pa{v})", f"sum(m * r{v})",
           f"sum(m * ao{v})"]
    out += [f"sum(m * {x})" for x in shares]
    out += [f"sum(m * pa{v} * {x})" for x in shares]
    out += [f"sum(m * t{v} * {x})" for x in shares]
    out += [f"sum(m * t{v} * {x})" for x in c]
    out += [f"sum(m * {shares[k]} * {shares[m]})" for k in range(q) for m in range(k, q)]
    return out


def _value_sums_sql(choices: tuple[str, ...], v: str) -> list[str]:
    """SQL: the sums an AC1 value needs (subjects, twice rated, Σ pa_i, the shares: `_ac1_values`'
    order), the first three and the shares of `_sums_sql`."""
    q = len(choices)
    every = _sums_sql(choices, v)
    return [*every[:3], *every[6:6 + q]]


def _sums(vector: np.ndarray, q: int) -> AgreementSums:
    """AgreementSums from a row of sums over q choices (`_sums_sql`'s order)."""
    sums = AgreementSums(n=vector[0], n2=vector[1], pa=vector[2], pa2=vector[3], ratings2=vector[4], ao=vector[5])
    at = 6
    for name in AgreementSums.VECTORS:
        setattr(sums, name, vector[at:at + q])
        at += q
    cross = np.zeros((q, q))
    cross[np.triu_indices(q)] = vector[at:]
    sums.cross = cross + np.triu(cross, 1).T
    return sums


def _offers_nota_sql() -> str:
    """SQL (over a cell's task and variant): 1 where its items are offered NOTA (`categories_for`)."""
    kinds = [(task, variant) for task in Task.values for variant in Variant.values
             if NOTA in categories_for(kinds={(task, variant)})]
    return ("CASE WHEN " + " OR ".join(f"(task = '{task}' AND variant = '{variant}')" for task, variant in kinds)
            + " THEN 1 ELSE 0 END") if kinds else "0"


_WIDTH = {q: 6 + 4 * q + q * (q + 1) // 2 for q in (len(AGREEMENT_CHOICES), len(BASE_CATEGORIES))}


def _patterns_sql(pairs: dict[int, int]) -> tuple[str, list]:
    """SQL: a common table expression named `patterns`, the agreement patterns of the (batch → run)
    `pairs` (`AgreementPattern`, kept by the aggregation job), columns (AC1 cell..., c0…, m,
    judgments), the counts as floats."""
    floats = {f"f{k}": Cast(f"c{k}", FloatField()) for k in range(len(AGREEMENT_CHOICES))}
    sql, params = (AgreementPattern.objects.filter(pairs_q(pairs)).annotate(**floats).order_by()
                   .values_list("batch_id", *AGREEMENT_CELL[1:], *floats, "items", "judgments").query.sql_with_params())
    counts = ", ".join(f"c{k}" for k in range(len(AGREEMENT_CHOICES)))
    return f"patterns ({', '.join(AGREEMENT_CELL)}, {counts}, m, judgments) AS ({sql})", list(params)


def agreement_by_group(*, pairs: dict[int, int]) -> dict[str, dict[tuple, dict]]:
    """The report's agreement, summed in SQL: grouping (GROUPINGS) → group key → {"judgments",
    "summary" (`summary_from_sums`: AC1 with its SE and CI, kappa, alpha), "categories", "ac1_by_batch"
    (batch id → AC1 of the batch's part of the group, over the choices that part is offered)}.

    Read from the runs' agreement patterns (`AgreementPattern`: the benchmark items of a cell —
    batch, task, domain, attribute, variant — grouped by their judgments per choice, counted by the
    aggregation job), never from the judgments: a few patterns a cell (3 judgments over 7 choices),
    but a cell a batch holds only ~14 items, so about one pattern for two items. From them, two tables of sums:
    every sum `summary_from_sums` needs per kind (the cell without its batch: a few dozen, from the
    patterns summed over the batches, a few thousand), and only what an AC1 value needs per cell
    with its batch. Each grouping, and each grouping per batch, adds those up in SQL. What reaches
    Python is a row per group and per (group, batch): no judgment and no item, whatever the size."""
    q7, q6 = len(AGREEMENT_CHOICES), len(BASE_CATEGORIES)
    if not pairs:
        return {grouping: {} for grouping in GROUPINGS}
    stored, params = _patterns_sql(pairs)
    cell, kind, choices = ", ".join(AGREEMENT_CELL), ", ".join(AGREEMENT_CELL[1:]), ", ".join(f"c{k}" for k in range(q7))
    sums7 = [f"a{n}" for n in range(_WIDTH[q7])]
    sums6 = [f"b{n}" for n in range(_WIDTH[q6])]
    values = [f"v{n}" for n in range(3 + q7 + 3 + q6)]
    sums = ", ".join(f"{sql} AS {name}" for sql, name in zip(_sums_sql(AGREEMENT_CHOICES, "7") + _sums_sql(BASE_CATEGORIES, "6"),
                                                                sums7 + sums6))
    value_sums = ", ".join(f"{sql} AS {name}" for sql, name in zip(
        _value_sums_sql(AGREEMENT_CHOICES, "7") + _value_sums_sql(BASE_CATEGORIES, "6"), values))
    out: dict[str, dict[tuple, dict]] = {grouping: {} for grouping in GROUPINGS}
    with transaction.atomic(), connection.cursor() as cursor:
        jit_off(cursor)
        cursor.execute(f"""
            CREATE TEMPORARY TABLE report_agreement_patterns AS
            WITH {stored} SELECT {cell}, {choices}, m, judgments FROM patterns""",
                       params)
        cursor.execute(f"""
            CREATE TEMPORARY TABLE report_agreement_kinds AS
            WITH patterns AS (SELECT {kind}, {choices}, sum(m) AS m, sum(judgments) AS judgments
                              FROM report_agreement_patterns GROUP BY {kind}, {choices}),
            terms AS MATERIALIZED (SELECT {kind}, judgments, m, {choices}, {_terms_sql(AGREEMENT_CHOICES, "7")},
                                          {_terms_sql(BASE_CATEGORIES, "6")} FROM patterns)
            SELECT {kind}, {_offers_nota_sql()} AS nota, sum(judgments) AS judgments, {sums}
            FROM terms GROUP BY {kind}""")
        cursor.execute(f"""
            CREATE TEMPORARY TABLE report_agreement_parts AS
            WITH terms AS (SELECT {cell}, m, {_terms_sql(AGREEMENT_CHOICES, "7")}, {_terms_sql(BASE_CATEGORIES, "6")}
                           FROM report_agreement_patterns)
            SELECT {cell}, {_offers_nota_sql()} AS nota, {value_sums} FROM terms GROUP BY {cell}""")
        for grouping, keys in GROUPINGS.items():
            width = len(keys)
            cursor.execute(f"SELECT {', '.join(keys)}, max(nota), sum(judgments), "
                           f"{', '.join(f'sum({x})' for x in sums7 + sums6)} "
                           f"FROM report_agreement_kinds GROUP BY {', '.join(keys)}")
            for row in cursor.fetchall():
                nota = bool(row[width])
                vector = np.array([float(v or 0) for v in row[width + 2:]])
                vector, q = (vector[:_WIDTH[q7]], q7) if nota else (vector[_WIDTH[q7]:], q6)
                out[grouping][tuple(row[:width])] = {
                    "judgments": int(row[width + 1] or 0), "summary": summary_from_sums(_sums(vector, q)),
                    "categories": list(AGREEMENT_CHOICES if nota else BASE_CATEGORIES), "ac1_by_batch": {},
                }
            # a row per batch and group (200k at 4M items), read from a cursor on the server a few
            # thousand at a time: a client's cursor holds the whole result
            with connection.chunked_cursor() as parts:
                parts.execute(f"SELECT batch, {', '.join(keys)}, max(nota), "
                              f"{', '.join(f'coalesce(sum({x}), 0)' for x in values)} "
                              f"FROM report_agreement_parts GROUP BY batch, {', '.join(keys)}")
                while rows := parts.fetchmany(10_000):
                    ac1s = _ac1_values(np.array([row[width + 2:] for row in rows], dtype=float),
                                       np.array([bool(row[width + 1]) for row in rows]), q7=q7, q6=q6)
                    for part, ac1 in zip(rows, ac1s):
                        out[grouping][tuple(part[1:width + 1])]["ac1_by_batch"][part[0]] = ac1
        for table in ("report_agreement_patterns", "report_agreement_kinds", "report_agreement_parts"):
            cursor.execute(f"DROP TABLE {table}")  # one a statement: SQLite drops one table at a time
    return out


def _ac1_values(values: np.ndarray, nota: np.ndarray, *, q7: int, q6: int) -> list[float | None]:
    """AC1 (its value only) of each row of (n, n2, Σ pa_i, shares…) over seven choices then over
    six, taking the seven where `nota`: `summary_from_sums(...)["ac1"]` at once for many parts,
    row by row in numpy (None where a part has no item rated twice, or chance agreement is 1)."""
    out: list[float | None] = [None] * len(values)
    for offers, q, at in ((True, q7, 0), (False, q6, 3 + q7)):
        rows = np.flatnonzero(nota == offers)
        part = values[rows, at:at + 3 + q]
        n, n2, pa = part[:, 0], part[:, 1], part[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            pi = part[:, 3:] / n[:, None]
            pe = (pi * (1 - pi)).sum(axis=1) / (q - 1)
            ac1 = (pa / n2 - pe) / (1 - pe)
        defined = (n != 0) & (n2 != 0) & ~np.isclose(pe, 1.0, rtol=0.0, atol=1e-15)
        for row, ok, value in zip(rows.tolist(), defined.tolist(), ac1.tolist()):
            if ok:
                out[row] = value
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
    agreement = agreement_by_group(pairs=pairs)
    names = dict(Batch.objects.filter(pk__in=list(pairs)).values_list("id", "name"))
    section: dict = {"judgments": sum(group["judgments"] for group in agreement["by_task"].values()), "batches": []}
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
        groups = agreement[grouping]
        rows = []
        for key in sorted(set(retention) | set(groups)):
            total, kept = retention.get(key, (0, 0))
            labels = dict(zip(keys, key))
            row = {**labels, "items": total, "retained": kept, "retention": kept / total if total else None}
            if key not in groups:
                row.update(judgments=0, ac1=None, ac1_se=None, ac1_ci=None, kappa=None, alpha=None, categories=[],
                           ac1_batches=_batch_range({}))
            else:
                group, summary = groups[key], groups[key]["summary"]
                per_batch = {names.get(batch_id, str(batch_id)): value
                             for batch_id, value in sorted(group["ac1_by_batch"].items())}
                row.update(
                    judgments=group["judgments"], ac1=summary["ac1"], ac1_se=summary["ac1_se"], ac1_ci=summary["ac1_ci"],
                    kappa=summary["kappa"], alpha=summary["alpha"], categories=group["categories"],
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


def frozen_verification(*, release: Release) -> dict | None:
    """The verification section a ready release froze in its report.json as it was built (the
    results it froze never change, so neither does their verification), or None where it holds
    none in this report format (a release built before the report was, or its file gone)."""
    try:
        path, sha256 = release_selectors.release_file(release=release, name=REPORT_FILES[0])
    except KeyError:
        return None
    frozen = _frozen_report(str(path), sha256)
    if frozen.get("format") != REPORT_FORMAT or frozen.get("release") != release.version:
        return None
    return frozen.get("verification")


@functools.lru_cache(maxsize=2)
def _frozen_report(path: str, sha256: str) -> dict:
    """A release's report.json as read once by this process (a release's files never change; the
    key holds the checksum its manifest lists): 3.8 MB of JSON at 4M items, ~80 ms to decode. Shared
    by the requests that read it: not to be changed."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def study_report(*, release: Release | None = None, pairs: dict[int, int] | None = None) -> dict:
    """The study report of a release (its frozen results, the runs scored on it) or, without
    one, of the current results with the runs scored on the latest ready release. A ready
    release's verification is read from its report.json (`frozen_verification`), not counted
    again; given `pairs` (the build, writing that file), it is counted from them."""
    verification = frozen_verification(release=release) if release is not None and pairs is None else None
    if verification is None:
        if pairs is None:
            pairs = release_pairs(release=release) if release is not None else release_selectors.current_batch_runs()
        verification = verification_section(pairs=pairs, release=release)
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
        "verification": verification,
        "evaluation": evaluation_section(release=evaluated),
        "references": references_section(),
    }
