"""Model runs (uploaded predictions and their scores) and human baseline runs.

A run's scores and statistics are computed by a Celery job and stored on the run
(`scores`, `stats`), so a leaderboard read never recomputes them.
"""
from django.conf import settings
from django.db import models
from django.db.models import Q

from dialtom_site.jobs import JobFields

PREDICTION_LETTERS = ("A", "B", "C", "D", "NOTA")


class ScoreStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for the task queue"
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class ModelRun(JobFields):
    """One upload of one model's predictions for a release, and its scores once computed."""

    name = models.SlugField(max_length=100, unique=True, help_text="e.g. gpt-4o-2024-08-cot")
    model_name = models.CharField(max_length=200, help_text="the model, as shown on the leaderboard")
    release = models.ForeignKey(
        "releases.Release", on_delete=models.PROTECT, null=True, blank=True, related_name="model_runs",
        help_text="the release the predictions are scored on: its audited items, against its labels",
    )
    description = models.TextField(blank=True)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    published = models.BooleanField(
        default=True,
        help_text="on the leaderboard of every reader; a release reader's own upload is not until staff publish it",
    )
    status = models.CharField(max_length=10, choices=ScoreStatus.choices, default=ScoreStatus.WAITING, db_index=True)
    n_predictions = models.PositiveIntegerField(default=0)
    scores = models.JSONField(default=dict, blank=True, help_text="correctness rate per task, domain, attribute, variant")
    stats = models.JSONField(default=dict, blank=True, help_text="chi-square / Cramér's V, Mann–Whitney U")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ScoreStatus.values), name="modelrun_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def overall_rate(self) -> float | None:
        return (self.scores.get("overall") or {}).get("rate")

    @property
    def scored_items(self) -> int | None:
        """How many of its predictions were scored: on items its release holds (None until scored)."""
        return (self.scores.get("overall") or {}).get("n")


class Prediction(models.Model):
    """A model's answer to one item; `correct` is set by the scoring job (None: the item was
    audited for the run's release but not retained, so it is not scored)."""

    run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="model_predictions")
    prediction = models.CharField(max_length=4)
    reasoning = models.TextField(blank=True)
    correct = models.BooleanField(null=True)

    class Meta:
        ordering = ["run", "item"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="prediction_one_per_run_item"),
            models.CheckConstraint(condition=Q(prediction__in=PREDICTION_LETTERS), name="prediction_letter_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} → {self.item_id}: {self.prediction}"


class RunComparison(models.Model):
    """McNemar's test between two scored runs on the items both answered (run_a.id < run_b.id)."""

    run_a = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="+")
    result = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run_a", "run_b"]
        constraints = [
            models.UniqueConstraint(fields=["run_a", "run_b"], name="runcomparison_unique_pair"),
            models.CheckConstraint(condition=Q(run_a__lt=models.F("run_b")), name="runcomparison_ordered_pair"),
        ]


class BaselineRun(JobFields):
    """A human baseline: one pool's judgments scored against the released labels."""

    pool = models.ForeignKey("accounts.Pool", on_delete=models.CASCADE, related_name="baseline_runs")
    release = models.ForeignKey(
        "releases.Release", on_delete=models.PROTECT, null=True, blank=True, related_name="baseline_runs",
        help_text="the release the pool's judgments are scored on",
    )
    status = models.CharField(max_length=10, choices=ScoreStatus.choices, default=ScoreStatus.WAITING, db_index=True)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    by_person = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"baseline {self.pool_id} ({self.status})"

    @property
    def overall_rate(self) -> float | None:
        return (self.scores.get("overall") or {}).get("rate")
