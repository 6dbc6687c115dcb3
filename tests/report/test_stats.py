"""The report's own statistics and number formats, against SciPy and by hand."""
import math

import pytest
from scipy import stats as sps

from report import stats, tables


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (57, 80), (412, 600), (1, 1000)])
def test_wilson_interval_equals_scipy(k, n):
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert stats.wilson_interval(correct=k, n=n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_wilson_interval_by_hand_and_without_items():
    # 8 of 10, z = 1.96: centre (0.8 + 0.1921) / 1.38416, half 1.96 / 1.38416 · √(0.016 + 0.00096)
    low, high = stats.wilson_interval(correct=8, n=10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert stats.wilson_interval(correct=0, n=0) is None


def test_chi_square_between_groups_equals_scipy():
    cells = {"mi": (70, 100), "esc": (55, 100), "pfg": (40, 90)}
    table = [[70, 30], [55, 45], [40, 50]]
    chi2, p, dof, _ = sps.chi2_contingency(table, correction=False)
    result = stats.chi_square_groups(cells)
    assert result["groups"] == ["esc", "mi", "pfg"]
    assert (result["chi2"], result["p_value"], result["dof"], result["n"]) == pytest.approx((chi2, p, dof, 290))
    assert result["cramers_v"] == pytest.approx(sps.contingency.association(table, method="cramer"))


def test_chi_square_is_none_where_undefined():
    assert stats.chi_square_groups({"mi": (5, 10)}) is None
    assert stats.chi_square_groups({"mi": (5, 10), "esc": (0, 0)}) is None
    assert stats.chi_square_groups({"mi": (10, 10), "esc": (4, 4)}) is None  # everything right


def test_correlation_equals_scipy_and_needs_three_varying_pairs():
    x, y = [0.61, 0.72, 0.55, 0.80, 0.66], [0.58, 0.70, 0.49, 0.77, 0.69]
    result = stats.correlation(x, y)
    assert (result["pearson_r"], result["pearson_p"]) == pytest.approx(tuple(sps.pearsonr(x, y)))
    assert (result["spearman_rho"], result["spearman_p"]) == pytest.approx(tuple(sps.spearmanr(x, y)))
    assert result["n"] == 5
    assert stats.correlation([0.1, 0.2], [0.3, 0.4]) is None
    assert stats.correlation([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) is None


def test_numbers_are_printed_as_in_the_paper():
    assert tables.percent(0.8421) == "84.2" and tables.two(0.9049) == "0.90" and tables.count(12345) == "12,345"
    assert tables.p_value(0.0004) == "<0.001" and tables.p_value(0.0312) == "0.031" and tables.p_value(None) == "–"
    assert tables.with_interval(0.91, [0.88, 0.93]) == "0.91 [0.88, 0.93]"
    assert tables.with_interval(0.5, [0.4, 0.6], fmt=tables.percent) == "50.0 [40.0, 60.0]"
    assert tables.interval(None, None) == "" and tables.with_interval(None, None) == "–"


def test_latex_escape():
    assert tables.latex_escape("gpt_4o & 50% #1 {x} ~ ^") == r"gpt\_4o \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{}"
    assert tables.latex_escape("χ²(2) = 4.01; ρ; mi – esc; <0.001") == r"$\chi^2$(2) = 4.01; $\rho$; mi -- esc; $<$0.001"
    assert tables.latex_escape("a\\b") == r"a\textbackslash{}b"
    assert tables.latex_escape("café 漢") == "café ?"


def test_bertscore_says_why_it_is_empty(settings, tmp_path):
    from report import bertscore

    settings.DIALTOM_BERTSCORE_MODEL_DIR = ""
    assert bertscore.availability() == (False, "no local model directory is set (DIALTOM_BERTSCORE_MODEL_DIR); nothing is downloaded")
    settings.DIALTOM_BERTSCORE_MODEL_DIR = str(tmp_path)
    available, reason = bertscore.availability()
    assert not available and "config.json is missing" in reason
    (tmp_path / "config.json").write_text("{}")
    available, reason = bertscore.availability()
    try:
        import torch  # noqa: F401
    except ImportError:
        assert not available and "torch" in reason
    else:
        assert available


def test_bertscore_greedy_matching_f1_by_hand():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: BERTScore's matching needs tensors")
    from report import bertscore

    candidate = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    reference = torch.tensor([[1.0, 0.0], [math.sqrt(0.5), math.sqrt(0.5)], [0.0, 1.0]])
    # precision: each candidate token's best match = 1, 1; recall: 1, √0.5, 1
    recall = (2 + math.sqrt(0.5)) / 3
    assert bertscore.f1(candidate, reference) == pytest.approx(2 * recall / (1 + recall))
