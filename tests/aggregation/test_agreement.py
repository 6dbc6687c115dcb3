"""Agreement coefficients: against irrCAC, the `krippendorff` package and hand computation."""
import math
import random
from fractions import Fraction as F

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC

from aggregation.agreement import (
    agreement_summary,
    counts_from_long,
    counts_from_ratings,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha_nominal,
)

CATEGORIES = ["A", "B", "C", "D", "NONE", "MULTIPLE"]

# Four subjects, three raters, categories A/B/C, with missing ratings (None):
HAND = [
    ["A", "A", "A"],  # r=3: counts (3,0,0)
    ["A", "B", None],  # r=2: (1,1,0)
    ["B", "B", "C"],  # r=3: (0,2,1)
    ["C", None, None],  # r=1: (0,0,1) counts in the shares only
]


def test_ac1_kappa_alpha_by_hand():
    # Given the hand-worked example:
    #   pa_i = 1, 0, 1/3 over the three subjects rated 2+ times -> pa = 4/9
    #   pi = ((1 + 1/2)/4, (1/2 + 2/3)/4, (1/3 + 1)/4) = (3/8, 7/24, 1/3)
    #   AC1 pe = sum pi(1 - pi) / (q - 1) = 191/576 -> AC1 = (4/9 - 191/576)/(385/576) = 13/77
    #   kappa pe = sum pi^2 = 97/288 -> kappa = 31/191
    #   alpha: N = 8 pairable values, Ao = (6/2 + 0 + 2/2)/8 = 1/2, n_k = (4, 3, 1),
    #          Ae = (12 + 6 + 0)/56 = 9/28 -> alpha = 5/19
    counts = counts_from_ratings(HAND, categories=["A", "B", "C"])
    ac1 = gwet_ac1(counts)
    kappa = fleiss_kappa(counts)
    alpha = krippendorff_alpha_nominal(counts)
    assert ac1.pa == pytest.approx(4 / 9, abs=1e-12)
    assert ac1.pe == pytest.approx(191 / 576, abs=1e-12)
    assert ac1.value == pytest.approx(13 / 77, abs=1e-9)
    assert kappa.pe == pytest.approx(97 / 288, abs=1e-12)
    assert kappa.value == pytest.approx(31 / 191, abs=1e-9)
    assert alpha.value == pytest.approx(5 / 19, abs=1e-9)

    # Variance (Gwet 2008, eq. as in irrCAC), with exact fractions per subject:
    n, n2, pe, value = 4, 3, F(191, 576), F(13, 77)
    pa_i = [F(1), F(0), F(1, 3), F(0)]
    rated_twice = [1, 1, 1, 0]
    # pe_i = sum_k (r_ik / r_i)(1 - pi_k) / (q - 1) with 1 - pi = (5/8, 17/24, 2/3)
    pe_i = [F(5, 16), F(1, 3), F(25, 72), F(1, 3)]
    terms = []
    for a, t, e in zip(pa_i, rated_twice, pe_i):
        v_i = F(n, n2) * (a - pe * t) / (1 - pe)
        terms.append(v_i - 2 * (1 - value) * (e - pe) / (1 - pe))
    variance = sum((x - value) ** 2 for x in terms) / (n * (n - 1))
    se = math.sqrt(variance)
    assert ac1.se == pytest.approx(se, abs=1e-9)
    t = 3.182446305284263  # Student t, 0.975 quantile, 3 degrees of freedom
    assert ac1.ci_low == pytest.approx(13 / 77 - t * se, abs=1e-9)
    assert ac1.ci_high == pytest.approx(min(1.0, 13 / 77 + t * se), abs=1e-9)


def test_unused_categories_count_in_q():
    # Given the same ratings with three more offered categories nobody chose,
    # AC1's chance agreement divides by q - 1 = 5 instead of 2: pe = (382/576)/5
    counts = counts_from_ratings(HAND, categories=["A", "B", "C", "D", "NONE", "MULTIPLE"])
    ac1 = gwet_ac1(counts)
    assert ac1.pe == pytest.approx(F(382, 576) / 5, abs=1e-12)
    assert ac1.value == pytest.approx((F(4, 9) - F(382, 2880)) / (1 - F(382, 2880)), abs=1e-9)
    # kappa and alpha do not depend on unused categories
    assert fleiss_kappa(counts).value == pytest.approx(31 / 191, abs=1e-9)
    assert krippendorff_alpha_nominal(counts).value == pytest.approx(5 / 19, abs=1e-9)


def _random_ratings(seed: int, subjects: int = 60, raters: int = 8, per_subject: int = 3, skew: float = 0.6):
    rng = random.Random(seed)
    rows = []
    for _ in range(subjects):
        row = [None] * raters
        k = rng.choice([1, per_subject, per_subject, per_subject + 1])
        truth = "A" if rng.random() < skew else rng.choice(CATEGORIES[:5])
        for r in rng.sample(range(raters), k):
            row[r] = truth if rng.random() < 0.75 else rng.choice(CATEGORIES[:5])
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_against_irrcac(seed):
    rows = _random_ratings(seed)
    frame = pd.DataFrame(rows).replace({None: np.nan})
    counts = counts_from_ratings(rows, categories=CATEGORIES)

    ref = CAC(frame, categories=CATEGORIES).gwet()["est"]
    ours = gwet_ac1(counts)
    assert ours.value == pytest.approx(ref["coefficient_value"], abs=6e-6)
    assert ours.se == pytest.approx(ref["se"], abs=6e-6)
    assert ours.pa == pytest.approx(ref["pa"], abs=6e-6)
    assert ours.pe == pytest.approx(ref["pe"], abs=6e-6)
    assert ours.ci_low == pytest.approx(ref["confidence_interval"][0], abs=6e-6)
    assert ours.ci_high == pytest.approx(ref["confidence_interval"][1], abs=6e-6)

    ref_k = CAC(frame, categories=CATEGORIES).fleiss()["est"]
    kappa = fleiss_kappa(counts)
    assert kappa.value == pytest.approx(ref_k["coefficient_value"], abs=6e-6)
    assert kappa.se == pytest.approx(ref_k["se"], abs=6e-6)
    assert kappa.ci_low == pytest.approx(ref_k["confidence_interval"][0], abs=6e-6)

    ref_a = CAC(frame, categories=CATEGORIES).krippendorff()["est"]
    assert krippendorff_alpha_nominal(counts).value == pytest.approx(ref_a["coefficient_value"], abs=6e-6)


def test_irrcac_documented_example():
    """irrCAC's own 4-raters example (numbers from its docstring)."""
    data = [
        [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
        [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, None, 3, None],
    ]
    counts = counts_from_ratings(data, categories=[1, 2, 3, 4, 5])
    ac1 = gwet_ac1(counts)
    assert round(ac1.value, 5) == 0.77544
    assert round(ac1.se, 5) == 0.14295
    assert (round(ac1.ci_low, 5), round(ac1.ci_high, 5)) == (0.46081, 1)
    assert round(fleiss_kappa(counts).value, 5) == 0.76117


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_alpha_against_krippendorff_package(seed):
    rows = _random_ratings(seed, subjects=80, raters=10)
    code = {c: i for i, c in enumerate(CATEGORIES)}
    reliability = np.array([[np.nan if v is None else code[v] for v in row] for row in rows], dtype=float).T
    ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    ours = krippendorff_alpha_nominal(counts_from_ratings(rows, categories=CATEGORIES))
    assert ours.value == pytest.approx(ref, abs=1e-9)


def test_kappa_paradox_is_visible():
    # Given 50 items where nearly everyone says A, raters agree 96% of the time...
    rows = [["A", "A", "A"]] * 46 + [["A", "A", "B"]] * 4
    summary = agreement_summary(counts_from_ratings(rows, categories=CATEGORIES))
    # ...AC1 stays high while kappa collapses below zero: the paradox.
    assert summary["pa"] > 0.94
    assert summary["ac1"] > 0.9
    assert summary["kappa"] < 0.1


def test_long_format_and_undefined_cases():
    keys, counts = counts_from_long(["i2", "i1", "i1", "i2"], ["A", "A", "B", "A"], categories=["A", "B"])
    assert keys == ["i1", "i2"]
    assert counts.tolist() == [[1, 1], [2, 0]]
    # nobody rated twice: everything undefined
    single = counts_from_ratings([["A", None], ["B", None]], categories=["A", "B"])
    assert gwet_ac1(single).value is None
    assert krippendorff_alpha_nominal(single).value is None
    # all the same label: kappa undefined (pe = 1), AC1 = 1
    same = counts_from_ratings([["A", "A"], ["A", "A"]], categories=["A", "B"])
    assert fleiss_kappa(same).value is None
    assert gwet_ac1(same).value == pytest.approx(1.0)
    assert agreement_summary(np.zeros((0, 6)))["ac1"] is None


@pytest.mark.parametrize("seed", range(12))
def test_the_summary_from_sums_is_the_summary_of_the_matrix(seed):
    """summary_from_sums (what the study report adds up in SQL) against agreement_summary, on
    random counts matrices cut in parts whose sums are added: 1–6 ratings a subject, some rated
    once, some never, skewed categories; and on the degenerate ones (one subject, one category)."""
    from aggregation.agreement import AgreementSums, summary_from_sums

    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 8))
    n = int(rng.integers(1, 60)) if seed % 4 else int(rng.integers(1, 3))
    weights = rng.dirichlet(np.ones(q) * (0.3 if seed % 3 else 3.0))
    counts = np.stack([rng.multinomial(int(rng.integers(0, 7)), weights) for _ in range(n)]).astype(float)
    if seed == 5:
        counts[:, 1:] = 0  # everybody chose the first category: pe = 1
    cut = int(rng.integers(0, n + 1))
    sums = AgreementSums.empty(q) + AgreementSums.from_counts(counts[:cut]) + AgreementSums.from_counts(counts[cut:])
    expected, got = agreement_summary(counts), summary_from_sums(sums)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, list):
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        elif value is None:
            assert got[key] is None, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
