"""The paper's statistics, as pure functions over plain numbers (SciPy underneath).

- `correctness_table`: Correctness Rate overall and per task, domain, attribute and
  variant, each with the random baseline (25 % with four options, 20 % where the fifth
  option "None of the above" is shown) averaged over the group's items.
- `chi_square_gap`: chi-square test of independence on the 2×2 table task × correct,
  with Cramér's V (no continuity correction, so V is the textbook φ for 2×2).
- `mann_whitney_easy_hard`: Mann–Whitney U on per-item correctness (0/1) of Easy vs
  Hard prospective items (two-sided; SciPy's default method, asymptotic with ties).
- `mcnemar`: McNemar's test for two paired runs: exact binomial when the discordant
  pairs are fewer than 25, else chi-square with continuity correction.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from scipy import stats as sps

MCNEMAR_EXACT_BELOW = 25
DIMENSIONS = ("task", "domain", "attribute", "variant")


@dataclass(frozen=True)
class Outcome:
    """One answered item: what it is and whether the answer was right."""

    task: str
    domain: str
    attribute: str
    variant: str
    correct: bool
    nota_shown: bool = False


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def random_baseline(*, nota_shown: bool) -> float:
    return 0.2 if nota_shown else 0.25


def _cell(outcomes: list[Outcome]) -> dict:
    n = len(outcomes)
    correct = sum(1 for o in outcomes if o.correct)
    baseline = sum(random_baseline(nota_shown=o.nota_shown) for o in outcomes) / n if n else None
    return {"n": n, "correct": correct, "rate": correct / n if n else None, "baseline": baseline}


def correctness_table(outcomes: Iterable[Outcome]) -> dict:
    """{"overall": cell, "task": {value: cell}, "domain": …, "attribute": …, "variant": …}.

    Every item has an attribute (a prospective item's is the state its distractors were
    made for), so the attribute breakdown covers both tasks.
    """
    outcomes = list(outcomes)
    table: dict = {"overall": _cell(outcomes)}
    for dimension in DIMENSIONS:
        groups: dict[str, list[Outcome]] = {}
        for outcome in outcomes:
            key = getattr(outcome, dimension)
            if key:
                groups.setdefault(key, []).append(outcome)
        table[dimension] = {key: _cell(groups[key]) for key in sorted(groups)}
    return table


def cramers_v(*, chi2: float, n: int, shape: tuple[int, int]) -> float:
    return math.sqrt(chi2 / (n * (min(shape) - 1)))


def chi_square_gap(*, a_correct: int, a_wrong: int, b_correct: int, b_wrong: int) -> dict | None:
    """Chi-square test of independence of group (a, b) and correctness; None if undefined."""
    table = [[a_correct, a_wrong], [b_correct, b_wrong]]
    n = a_correct + a_wrong + b_correct + b_wrong
    if min(a_correct + a_wrong, b_correct + b_wrong, a_correct + b_correct, a_wrong + b_wrong) == 0:
        return None
    chi2, p, dof, _ = sps.chi2_contingency(table, correction=False)
    return {
        "table": table,
        "n": n,
        "chi2": float(chi2),
        "dof": int(dof),
        "p_value": _finite(p),
        "cramers_v": cramers_v(chi2=float(chi2), n=n, shape=(2, 2)),
    }


def mann_whitney_easy_hard(*, easy: list[int], hard: list[int]) -> dict | None:
    """Mann–Whitney U on per-item correctness (1/0) of Easy vs Hard items; None if a side is empty."""
    if not easy or not hard:
        return None
    if len(set(easy) | set(hard)) == 1:  # every value tied: no evidence either way
        u, p = len(easy) * len(hard) / 2, 1.0
    else:
        result = sps.mannwhitneyu(easy, hard, alternative="two-sided")
        u, p = result.statistic, result.pvalue
    return {
        "n_easy": len(easy),
        "n_hard": len(hard),
        "rate_easy": sum(easy) / len(easy),
        "rate_hard": sum(hard) / len(hard),
        "u": float(u),
        "p_value": _finite(p),
        "unit": "item",
    }


def mcnemar(*, both: int, only_a: int, only_b: int, neither: int) -> dict:
    """McNemar's test on paired correctness: only_a = A right and B wrong, only_b the reverse."""
    discordant = only_a + only_b
    if discordant == 0:
        statistic, p, method = 0.0, 1.0, "exact"
    elif discordant < MCNEMAR_EXACT_BELOW:
        # statsmodels' mcnemar(exact=True): two-sided binomial test of min(b, c) out of b + c at 1/2.
        statistic = float(min(only_a, only_b))
        p = sps.binomtest(min(only_a, only_b), discordant, 0.5, alternative="two-sided").pvalue
        method = "exact"
    else:
        # statsmodels' mcnemar(exact=False, correction=True).
        statistic = (abs(only_a - only_b) - 1) ** 2 / discordant
        p = sps.chi2.sf(statistic, 1)
        method = "chi2"
    n = both + only_a + only_b + neither
    return {
        "table": [[both, only_a], [only_b, neither]],
        "n": n,
        "discordant": discordant,
        "statistic": float(statistic),
        "p_value": _finite(p),
        "method": method,
        "rate_a": (both + only_a) / n if n else None,
        "rate_b": (both + only_b) / n if n else None,
    }
