"""The adaptive-overlap policy a batch is opened with, and keeps: k-min..k-max and the thresholds.

Plain data (no database): recorded on the batch (`AdaptiveOverlap.policy`) and in release
manifests, read by the refresh (`aggregation.adaptive`) and the replay (`aggregation.overlap`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class OverlapPolicy:
    """Everything that decides the allocation; recorded on the batch and in release manifests."""

    k_min: int
    k_max: int
    max_risk: float = 0.03
    retention_threshold: float = 0.5
    prior_strength: float = 4.0
    prior_accuracy: float = 0.7
    refresh_seconds: float = 10.0
    quality_per_task: bool = True
    n_iter: int = 50
    tol: float = 1e-6
    ds_n_iter: int = 100  # the release's crowd-kit fit (aggregation settings)
    ds_tol: float = 1e-5

    def __post_init__(self):
        if self.k_min < 1:
            raise ValueError("k_min must be at least 1")
        if self.k_max < self.k_min:
            raise ValueError("k_max must be at least k_min")
        if not 0 < self.max_risk < 0.5:
            raise ValueError("max_risk must be between 0 and 0.5")
        if not 0 < self.prior_accuracy < 1:
            raise ValueError("prior_accuracy must be between 0 and 1")
        if self.prior_strength < 0:
            raise ValueError("prior_strength must be non-negative")

    @property
    def adaptive(self) -> bool:
        return self.k_max > self.k_min

    def as_dict(self) -> dict:
        return {"method": "Dawid-Skene MAP, per batch; risk of the retention decision; value of one judgment", **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping) -> OverlapPolicy:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def policy_from_settings(*, k_min: int, k_max: int) -> OverlapPolicy:
    """The policy a batch opened now gets: the thresholds and refresh interval of the settings."""
    from django.conf import settings

    return OverlapPolicy(
        k_min=k_min,
        k_max=k_max,
        max_risk=settings.DIALTOM_OVERLAP_MAX_RISK,
        retention_threshold=settings.DIALTOM_RETENTION_THRESHOLD,
        prior_strength=settings.DIALTOM_OVERLAP_PRIOR_STRENGTH,
        prior_accuracy=settings.DIALTOM_OVERLAP_PRIOR_ACCURACY,
        refresh_seconds=settings.DIALTOM_OVERLAP_REFRESH_SECONDS,
        ds_n_iter=settings.DIALTOM_DS_N_ITER,
        ds_tol=settings.DIALTOM_DS_TOL,
    )
