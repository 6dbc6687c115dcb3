"""Each statistic against SciPy or a hand-computed value on a small fixture."""
import math

import pytest
from scipy import stats as sps

from scoring import stats
from scoring.stats import Outcome


def test_correctness_table_rates_and_random_baselines():
    outcomes = [
        Outcome("retrospective", "mi", "trust", "hard", True),
        Outcome("retrospective", "mi", "trust", "hard", False),
        Outcome("retrospective", "esc", "belief", "hard", True),
        Outcome("prospective", "mi", "", "hard", False),
        Outcome("prospective", "mi", "", "counterfactual", True, nota_shown=True),
    ]
    table = stats.correctness_table(outcomes)
    assert table["overall"] == {"n": 5, "correct": 3, "rate": 0.6, "baseline": pytest.approx((4 * 0.25 + 0.2) / 5)}
    assert table["task"]["retrospective"]["rate"] == pytest.approx(2 / 3)
    assert table["task"]["prospective"]["rate"] == 0.5
    assert table["domain"] == {
        "esc": {"n": 1, "correct": 1, "rate": 1.0, "baseline": 0.25},
        "mi": {"n": 4, "correct": 2, "rate": 0.5, "baseline": pytest.approx(0.95 / 4)},
    }
    assert set(table["attribute"]) == {"belief", "trust"}  # prospective items have none
    assert table["variant"]["counterfactual"] == {"n": 1, "correct": 1, "rate": 1.0, "baseline": 0.2}


def test_chi_square_gap_matches_scipy_and_hand_computed_cramers_v():
    # retrospective 30 right / 10 wrong, prospective 15 right / 25 wrong
    result = stats.chi_square_gap(a_correct=30, a_wrong=10, b_correct=15, b_wrong=25)
    chi2, p, dof, _ = sps.chi2_contingency([[30, 10], [15, 25]], correction=False)
    assert result["chi2"] == pytest.approx(chi2)
    assert result["p_value"] == pytest.approx(p)
    assert result["dof"] == dof == 1
    # By hand: N(ad − bc)² / (row and column totals) = 80·(750 − 150)² / (40·40·45·35) = 11.4286
    assert result["chi2"] == pytest.approx(80 * 600**2 / (40 * 40 * 45 * 35))
    # Cramér's V for 2×2 = |φ| = |ad − bc| / √(product of the margins) = 600 / √(40·40·45·35)
    assert result["cramers_v"] == pytest.approx(600 / math.sqrt(40 * 40 * 45 * 35))
    assert result["cramers_v"] == pytest.approx(
        sps.contingency.association([[30, 10], [15, 25]], method="cramer", correction=False)
    )


def test_chi_square_gap_undefined_without_both_groups():
    assert stats.chi_square_gap(a_correct=3, a_wrong=1, b_correct=0, b_wrong=0) is None
    assert stats.chi_square_gap(a_correct=3, a_wrong=0, b_correct=2, b_wrong=0) is None


def test_mann_whitney_easy_vs_hard_matches_scipy():
    easy = [1, 1, 1, 0, 1, 1, 1, 1]
    hard = [0, 1, 0, 0, 1, 0]
    result = stats.mann_whitney_easy_hard(easy=easy, hard=hard)
    expected = sps.mannwhitneyu(easy, hard, alternative="two-sided")
    assert result["u"] == pytest.approx(expected.statistic)
    assert result["p_value"] == pytest.approx(expected.pvalue)
    # By hand: U_easy = Σ over pairs [e > h] + ½[e = h] = 7·4 + ½(7·2 + 1·4) = 37
    assert result["u"] == 37
    assert (result["rate_easy"], result["rate_hard"]) == (7 / 8, 2 / 6)


def test_mann_whitney_all_tied_and_empty():
    assert stats.mann_whitney_easy_hard(easy=[1, 1], hard=[1, 1, 1])["p_value"] == 1.0
    assert stats.mann_whitney_easy_hard(easy=[], hard=[1]) is None


def test_mcnemar_exact_for_few_discordant_pairs():
    result = stats.mcnemar(both=20, only_a=7, only_b=1, neither=2)
    assert result["method"] == "exact"
    # By hand: 2 · P(X ≤ 1), X ~ Bin(8, ½) = 2 · (1 + 8) / 256
    assert result["p_value"] == pytest.approx(2 * 9 / 256)
    assert result["p_value"] == pytest.approx(sps.binomtest(1, 8, 0.5).pvalue)
    assert result["rate_a"] == pytest.approx(27 / 30) and result["rate_b"] == pytest.approx(21 / 30)


def test_mcnemar_chi_square_with_continuity_correction_for_many():
    result = stats.mcnemar(both=50, only_a=30, only_b=12, neither=8)
    assert result["method"] == "chi2"
    assert result["statistic"] == pytest.approx((abs(30 - 12) - 1) ** 2 / 42)
    assert result["p_value"] == pytest.approx(sps.chi2.sf(289 / 42, 1))


def test_mcnemar_no_discordant_pairs():
    assert stats.mcnemar(both=5, only_a=0, only_b=0, neither=5)["p_value"] == 1.0
