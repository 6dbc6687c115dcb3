"""The study report's own statistics, as pure functions over plain numbers (SciPy underneath).

What the scoring app already computes is reused from `scoring.stats` (Cramér's V, Mann–Whitney
U, McNemar); these are the few the report adds:

- `wilson_interval`: the Wilson score interval of a proportion (no continuity correction),
  as `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` gives it.
- `chi_square_groups`: chi-square test of independence of group (e.g. domain) and
  correctness on the k × 2 table of (correct, wrong) counts, with Cramér's V.
- `correlation`: Pearson's r and Spearman's rho (SciPy) between two paired lists, e.g. the
  per-model accuracy in two domains.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scipy import stats as sps

from scoring.stats import cramers_v

Z_95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975)


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def wilson_interval(*, correct: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of correct / n; None when n is 0."""
    if n <= 0:
        return None
    p = correct / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def chi_square_groups(cells: Mapping[str, tuple[int, int]]) -> dict | None:
    """Chi-square test of independence of group and correctness on {group: (correct, n)}.

    Groups without items are left out; None when fewer than two groups remain or every
    item is right (or every one wrong): the test is undefined then. No continuity
    correction (as `scoring.stats.chi_square_gap`), so V is φ for a 2 × 2 table.
    """
    groups = sorted(key for key, (_, n) in cells.items() if n > 0)
    if len(groups) < 2:
        return None
    table = [[cells[g][0], cells[g][1] - cells[g][0]] for g in groups]
    n = sum(c + w for c, w in table)
    if sum(c for c, _ in table) in (0, n):
        return None
    chi2, p, dof, _ = sps.chi2_contingency(table, correction=False)
    return {
        "groups": groups,
        "table": table,
        "n": n,
        "chi2": float(chi2),
        "dof": int(dof),
        "p_value": _finite(p),
        "cramers_v": cramers_v(chi2=float(chi2), n=n, shape=(len(groups), 2)),
    }


def correlation(x: Sequence[float], y: Sequence[float]) -> dict | None:
    """Pearson's r and Spearman's rho with their two-sided p-values; None under 3 pairs or
    when either side is constant (the coefficients are undefined)."""
    if len(x) != len(y):
        raise ValueError("x and y must pair up")
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    pearson = sps.pearsonr(x, y)
    spearman = sps.spearmanr(x, y)
    return {
        "n": len(x),
        "pearson_r": _finite(pearson.statistic),
        "pearson_p": _finite(pearson.pvalue),
        "spearman_rho": _finite(spearman.statistic),
        "spearman_p": _finite(spearman.pvalue),
    }
