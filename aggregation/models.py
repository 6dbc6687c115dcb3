"""Aggregation runs (Dawid–Skene per batch, agreement, retention) and their results."""
from django.conf import settings as django_settings
from django.db import models

from dialtom_site.jobs import JobFields


class RunStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for the task queue"
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class AggregationRun(JobFields):
    """One aggregation of one or more batches: settings, versions, timings, status.

    A run writes its results in one transaction; until it succeeds, the results of the
    previous successful run stay the current ones.
    """

    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.WAITING, db_index=True)
    batches = models.ManyToManyField("annotation.Batch", related_name="aggregation_runs", blank=True)
    settings = models.JSONField(default=dict, blank=True)
    versions = models.JSONField(default=dict, blank=True)
    started_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    trigger = models.CharField(max_length=20, default="manual", help_text="manual, api, command, auto")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0)
    counts = models.JSONField(default=dict, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    batches_total = models.PositiveIntegerField(default=0)
    batches_done = models.PositiveIntegerField(default=0)
    input_fingerprint = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="hash of the judgments a run started from (dedupes auto runs)"
    )
    celery_id = models.CharField(max_length=255, blank=True, help_text="id of the chord's result, when queued")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"


class ItemResult(models.Model):
    """The aggregate for one item in one run."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="item_results")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="results")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="item_results")
    label = models.CharField(max_length=10)
    posterior = models.FloatField()
    mv_label = models.CharField(max_length=10, blank=True)
    n_judgments = models.PositiveIntegerField()
    n_agree = models.PositiveIntegerField(null=True, blank=True, help_text="of those judgments, how many agree with `label`")
    retained = models.BooleanField(db_index=True)

    class Meta:
        ordering = ["run", "item"]
        constraints = [models.UniqueConstraint(fields=["run", "item"], name="itemresult_unique")]


class WorkerResult(models.Model):
    """A verifier's estimated confusion matrix and accuracy in one batch of one run."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="worker_results")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="worker_results")
    verifier = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker_results")
    accuracy = models.FloatField()
    confusion = models.JSONField(default=dict)
    n_judgments = models.PositiveIntegerField()
    gold_judgments = models.PositiveIntegerField(default=0)
    gold_accuracy = models.FloatField(null=True, blank=True, help_text="share of gold items answered with the key")

    class Meta:
        ordering = ["run", "batch", "verifier"]
        constraints = [models.UniqueConstraint(fields=["run", "batch", "verifier"], name="workerresult_unique")]


class BatchResult(models.Model):
    """Per batch of a run: agreement (AC1 with SE and CI, kappa, alpha) and retention."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="batch_results")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="results")
    items = models.PositiveIntegerField()
    judgments = models.PositiveIntegerField()
    retained = models.PositiveIntegerField()
    ac1 = models.FloatField(null=True)
    ac1_se = models.FloatField(null=True)
    ac1_ci_low = models.FloatField(null=True)
    ac1_ci_high = models.FloatField(null=True)
    kappa = models.FloatField(null=True)
    alpha = models.FloatField(null=True)
    by_group = models.JSONField(default=dict, blank=True, help_text="agreement and retention per task × domain")
    gold_items = models.PositiveIntegerField(default=0)
    workers = models.PositiveIntegerField(default=0)
    details = models.JSONField(default=dict, blank=True, help_text="DS iterations, MV agreement, categories, ...")
    timings = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "batch"]
        constraints = [models.UniqueConstraint(fields=["run", "batch"], name="batchresult_unique")]

    @property
    def retention(self) -> float | None:
        return self.retained / self.items if self.items else None
