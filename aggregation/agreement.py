"""Chance-corrected agreement for many raters with missing ratings: pure functions.

Every coefficient here works from a *count matrix*: one row per subject (item), one
column per category, the cell holding how many raters put that subject in that category.
A subject rated by nobody is dropped; a subject rated once counts in the category shares
(and in n) but not in the observed agreement, exactly as in Gwet (2008) and irrCAC.

- `gwet_ac1`: Gwet's AC1 (Gwet 2008, "Computing inter-rater reliability and its variance
  in the presence of high agreement"), with the variance irrCAC's `CAC.gwet()` computes
  (linearisation over subjects, finite-population factor 1 - n/N) and a Student-t
  confidence interval on n - 1 degrees of freedom, its upper end capped at 1.
- `fleiss_kappa`: Fleiss' generalised kappa with the same missing-data handling and
  variance as irrCAC's `CAC.fleiss()`; beside AC1 it shows the kappa paradox (high
  observed agreement, low kappa, when one category dominates).
- `krippendorff_alpha_nominal`: Krippendorff's alpha for nominal data (pairable values
  only: subjects with at least two ratings), as the `krippendorff` package computes it.

The categories are those the form offers (A, B, C, D, NONE, MULTIPLE, and NOTA where
shown), like irrCAC's `categories=` argument: a category nobody chose still counts in q.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

__all__ = [
    "Agreement",
    "counts_from_ratings",
    "counts_from_long",
    "gwet_ac1",
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "agreement_summary",
    "AgreementSums",
    "summary_from_sums",
]


@dataclass(frozen=True)
class Agreement:
    """One coefficient with its parts; `None` where the data leave it undefined."""

    value: float | None
    se: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pa: float | None = None
    pe: float | None = None
    n_subjects: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def counts_from_ratings(ratings: Sequence[Sequence[object]] | np.ndarray, *, categories: Sequence[object]) -> np.ndarray:
    """Count matrix from a subjects × raters table; `None`/NaN/"" are missing ratings.

    Ratings outside `categories` are ignored, as irrCAC ignores them when `categories=` is given.
    """
    index = {c: k for k, c in enumerate(categories)}
    rows = []
    for subject in ratings:
        row = [0] * len(categories)
        for rating in subject:
            k = index.get(rating)
            if k is not None:
                row[k] += 1
        rows.append(row)
    return np.asarray(rows, dtype=float).reshape(len(rows), len(categories))


def counts_from_long(subjects: Iterable[object], labels: Iterable[object], *, categories: Sequence[object]) -> tuple[list, np.ndarray]:
    """Count matrix from (subject, label) pairs, one pair per rating; subjects in sorted order."""
    index = {c: k for k, c in enumerate(categories)}
    counts: dict[object, list[int]] = {}
    for subject, label in zip(subjects, labels):
        k = index.get(label)
        if k is None:
            continue
        counts.setdefault(subject, [0] * len(categories))[k] += 1
    keys = sorted(counts)
    matrix = np.asarray([counts[s] for s in keys], dtype=float).reshape(len(keys), len(categories))
    return keys, matrix


def _prepare(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2:
        raise ValueError("counts must be a subjects × categories matrix")
    ri = counts.sum(axis=1)
    keep = ri > 0  # subjects nobody rated are dropped (irrCAC: dropna(how="all"))
    return counts[keep], ri[keep]


def _t_interval(value: float, se: float, n: int, confidence_level: float) -> tuple[float, float]:
    half = stats.t.ppf(0.5 + confidence_level / 2, df=n - 1) * se
    return value - half, min(1.0, value + half)


def _chance_corrected(
    counts: np.ndarray,
    *,
    pe_of: str,
    confidence_level: float,
    population_size: float,
) -> Agreement:
    counts, ri = _prepare(counts)
    n, q = counts.shape
    if n == 0 or q < 2:
        return Agreement(value=None, n_subjects=int(n))
    two_plus = ri >= 2
    n2more = int(two_plus.sum())
    if n2more == 0:
        return Agreement(value=None, n_subjects=int(n))
    pair_agreement = (counts * (counts - 1)).sum(axis=1)
    pa_i = np.zeros(n)
    pa_i[two_plus] = pair_agreement[two_plus] / (ri[two_plus] * (ri[two_plus] - 1))
    pa = float(pa_i[two_plus].sum() / n2more)
    shares = counts / ri[:, None]
    pi = shares.mean(axis=0)
    if pe_of == "gwet":
        pe = float((pi * (1 - pi)).sum() / (q - 1))
        pe_i = shares @ (1 - pi) / (q - 1)
    else:  # fleiss
        pe = float((pi * pi).sum())
        pe_i = shares @ pi
    if math.isclose(pe, 1.0, rel_tol=0.0, abs_tol=1e-15):
        return Agreement(value=None, pa=pa, pe=pe, n_subjects=int(n))
    value = (pa - pe) / (1 - pe)
    if n < 2:
        return Agreement(value=value, pa=pa, pe=pe, n_subjects=int(n))
    value_i = (n / n2more) * (pa_i - pe * two_plus) / (1 - pe)
    value_i_x = value_i - 2 * (1 - value) * (pe_i - pe) / (1 - pe)
    f = n / population_size
    variance = (1 - f) / (n * (n - 1)) * float(((value_i_x - value) ** 2).sum())
    se = math.sqrt(max(variance, 0.0))
    low, high = _t_interval(value, se, n, confidence_level)
    return Agreement(value=value, se=se, ci_low=low, ci_high=high, pa=pa, pe=pe, n_subjects=int(n))


def gwet_ac1(counts: np.ndarray, *, confidence_level: float = 0.95, population_size: float = math.inf) -> Agreement:
    """Gwet's AC1 with its standard error and confidence interval (irrCAC's formulas).

    pa = mean over subjects rated 2+ times of Σ_k r_ik(r_ik − 1) / (r_i(r_i − 1));
    π_k = mean over all rated subjects of r_ik / r_i; pe = Σ_k π_k(1 − π_k) / (q − 1);
    AC1 = (pa − pe) / (1 − pe).
    """
    return _chance_corrected(counts, pe_of="gwet", confidence_level=confidence_level, population_size=population_size)


def fleiss_kappa(counts: np.ndarray, *, confidence_level: float = 0.95, population_size: float = math.inf) -> Agreement:
    """Fleiss' generalised kappa for missing ratings (irrCAC): pe = Σ_k π_k²."""
    return _chance_corrected(counts, pe_of="fleiss", confidence_level=confidence_level, population_size=population_size)


def krippendorff_alpha_nominal(counts: np.ndarray) -> Agreement:
    """Krippendorff's alpha, nominal metric, from pairable values (subjects rated 2+ times).

    With N pairable values and n_k of them in category k:
    Ao = (1/N) Σ_i Σ_k r_ik(r_ik − 1) / (r_i − 1),  Ae = Σ_k n_k(n_k − 1) / (N(N − 1)),
    alpha = (Ao − Ae) / (1 − Ae)  (= 1 − Do/De).
    """
    counts, ri = _prepare(counts)
    two_plus = ri >= 2
    counts, ri = counts[two_plus], ri[two_plus]
    total = float(ri.sum())
    if total < 2:
        return Agreement(value=None, n_subjects=int(counts.shape[0]))
    ao = float(((counts * (counts - 1)).sum(axis=1) / (ri - 1)).sum() / total)
    nk = counts.sum(axis=0)
    ae = float((nk * (nk - 1)).sum() / (total * (total - 1)))
    if math.isclose(ae, 1.0, rel_tol=0.0, abs_tol=1e-15):
        return Agreement(value=None, pa=ao, pe=ae, n_subjects=int(counts.shape[0]))
    return Agreement(value=(ao - ae) / (1 - ae), pa=ao, pe=ae, n_subjects=int(counts.shape[0]))


def _clean(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return float(x)


def agreement_summary(counts: np.ndarray, *, confidence_level: float = 0.95) -> Mapping[str, object]:
    """AC1 (with SE and CI), Fleiss' kappa and Krippendorff's alpha side by side, JSON-ready."""
    ac1 = gwet_ac1(counts, confidence_level=confidence_level)
    kappa = fleiss_kappa(counts, confidence_level=confidence_level)
    return _summary(ac1, kappa, krippendorff_alpha_nominal(counts).value)


def _summary(ac1: Agreement, kappa: Agreement, alpha: float | None) -> Mapping[str, object]:
    return {
        "subjects": ac1.n_subjects,
        "ac1": _clean(ac1.value),
        "ac1_se": _clean(ac1.se),
        "ac1_ci": [_clean(ac1.ci_low), _clean(ac1.ci_high)] if ac1.ci_low is not None else None,
        "pa": _clean(ac1.pa),
        "ac1_pe": _clean(ac1.pe),
        "kappa": _clean(kappa.value),
        "kappa_pe": _clean(kappa.pe),
        "alpha": _clean(alpha),
    }


# --- the same coefficients from sums over subjects --------------------------------------------
#
# Everything above is a sum over subjects once the category shares are known: AC1 and kappa
# (with AC1's variance, a sum of squares of terms linear in each subject's pa_i, its share of
# each category r_ik / r_i and whether it was rated twice) and alpha. So a database can add
# up per-subject terms (`AgreementSums`, the fields below) for the smallest groups, the groups'
# sums add up to any larger group, and `summary_from_sums` gives what `agreement_summary` gives
# for the counts matrix of the whole group, without that matrix (the study report at 4M items).


@dataclass
class AgreementSums:
    """Sums over the rated subjects (r_i ≥ 1) of a counts matrix with q categories.

    n: subjects; n2: those rated 2+ times; pa, pa2: Σ pa_i and Σ pa_i² (pa_i = 0 when r_i < 2);
    ratings2, ao: Σ r_i and Σ Σ_k r_ik(r_ik − 1)/(r_i − 1) over subjects rated 2+ times (alpha);
    per category k: shares Σ r_ik/r_i, pa_shares Σ pa_i r_ik/r_i, shares2 Σ_{r_i ≥ 2} r_ik/r_i,
    counts2 Σ_{r_i ≥ 2} r_ik; cross: the q × q matrix Σ (r_ik/r_i)(r_il/r_i).
    """

    n: float = 0.0
    n2: float = 0.0
    pa: float = 0.0
    pa2: float = 0.0
    ratings2: float = 0.0
    ao: float = 0.0
    shares: np.ndarray | None = None
    pa_shares: np.ndarray | None = None
    shares2: np.ndarray | None = None
    counts2: np.ndarray | None = None
    cross: np.ndarray | None = None

    VECTORS = ("shares", "pa_shares", "shares2", "counts2")

    @classmethod
    def empty(cls, q: int) -> AgreementSums:
        return cls(**{name: np.zeros(q) for name in cls.VECTORS}, cross=np.zeros((q, q)))

    @classmethod
    def from_counts(cls, counts: np.ndarray) -> AgreementSums:
        """The sums of a counts matrix (what a database adds up, computed here: for tests)."""
        counts, ri = _prepare(counts)
        two = ri >= 2
        pair = (counts * (counts - 1)).sum(axis=1)
        pa_i = np.where(two, pair / np.where(two, ri * (ri - 1), 1), 0.0)
        shares = counts / ri[:, None] if len(ri) else counts
        return cls(n=float(len(ri)), n2=float(two.sum()), pa=float(pa_i.sum()), pa2=float((pa_i ** 2).sum()),
                   ratings2=float(ri[two].sum()), ao=float((pair[two] / (ri[two] - 1)).sum()),
                   shares=shares.sum(axis=0), pa_shares=(pa_i[:, None] * shares).sum(axis=0),
                   shares2=shares[two].sum(axis=0), counts2=counts[two].sum(axis=0), cross=shares.T @ shares)

    def __add__(self, other: AgreementSums) -> AgreementSums:
        return AgreementSums(**{name: getattr(self, name) + getattr(other, name)
                                for name in ("n", "n2", "pa", "pa2", "ratings2", "ao", *self.VECTORS, "cross")})


def _chance_corrected_from_sums(sums: AgreementSums, *, pe_of: str, confidence_level: float) -> Agreement:
    """`_chance_corrected` (infinite population) from sums: Σ(x_i − value)² expanded, x_i − value
    being a·pa_i + b·[r_i ≥ 2] + c·pe_i + d with pe_i = Σ_k w_k r_ik/r_i."""
    n, n2, q = sums.n, sums.n2, len(sums.shares)
    if n == 0 or q < 2 or n2 == 0:
        return Agreement(value=None, n_subjects=int(n))
    pa = sums.pa / n2
    pi = sums.shares / n
    if pe_of == "gwet":
        pe, w = float((pi * (1 - pi)).sum() / (q - 1)), (1 - pi) / (q - 1)
    else:
        pe, w = float((pi * pi).sum()), pi
    if math.isclose(pe, 1.0, rel_tol=0.0, abs_tol=1e-15):
        return Agreement(value=None, pa=pa, pe=pe, n_subjects=int(n))
    value = (pa - pe) / (1 - pe)
    if n < 2:
        return Agreement(value=value, pa=pa, pe=pe, n_subjects=int(n))
    a, b = n / (n2 * (1 - pe)), -n * pe / (n2 * (1 - pe))
    c, d = -2 * (1 - value) / (1 - pe), 2 * (1 - value) * pe / (1 - pe) - value
    pe_sum, pe_sq = float(w @ sums.shares), float(w @ sums.cross @ w)
    pa_pe, two_pe = float(w @ sums.pa_shares), float(w @ sums.shares2)
    square = (a * a * sums.pa2 + b * b * n2 + c * c * pe_sq + d * d * n + 2 * a * b * sums.pa + 2 * a * c * pa_pe
              + 2 * a * d * sums.pa + 2 * b * c * two_pe + 2 * b * d * n2 + 2 * c * d * pe_sum)
    se = math.sqrt(max(square / (n * (n - 1)), 0.0))
    low, high = _t_interval(value, se, int(n), confidence_level)
    return Agreement(value=value, se=se, ci_low=low, ci_high=high, pa=pa, pe=pe, n_subjects=int(n))


def summary_from_sums(sums: AgreementSums, *, confidence_level: float = 0.95) -> Mapping[str, object]:
    """`agreement_summary` of the counts matrix whose sums these are (equal up to rounding)."""
    ac1 = _chance_corrected_from_sums(sums, pe_of="gwet", confidence_level=confidence_level)
    kappa = _chance_corrected_from_sums(sums, pe_of="fleiss", confidence_level=confidence_level)
    total = sums.ratings2
    alpha = None
    if total >= 2:
        ae = float((sums.counts2 * (sums.counts2 - 1)).sum() / (total * (total - 1)))
        if not math.isclose(ae, 1.0, rel_tol=0.0, abs_tol=1e-15):
            alpha = (sums.ao / total - ae) / (1 - ae)
    return _summary(ac1, kappa, alpha)
