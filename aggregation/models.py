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
        indexes = [models.Index(fields=["-created_at", "-id"], name="aggregationrun_latest")]  # the latest run, at any count

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
    # the batch's current results (those of its latest succeeded run): set in the transaction that
    # makes the run SUCCEEDED (summaries.current_results_adopt), recounted by summaries.rebuild
    is_current = models.BooleanField(default=False, editable=False)

    class Meta:
        ordering = ["run", "batch"]
        constraints = [
            models.UniqueConstraint(fields=["run", "batch"], name="batchresult_unique"),
            # covering: the current (batch, run) pairs are read from the index alone (the rows are wide)
            models.UniqueConstraint(fields=["batch"], condition=models.Q(is_current=True), include=["run"],
                                    name="batchresult_one_current"),
        ]
        # the release's low-agreement warning: the current results under the threshold, not a pass over all
        indexes = [models.Index(fields=["ac1"], condition=models.Q(is_current=True), name="batchresult_current_ac1")]

    @property
    def retention(self) -> float | None:
        return self.retained / self.items if self.items else None


# --- Agreement with the consensus per verifier (kept by worker_agreement.py, issue 23) ----------


class WorkerAgreement(models.Model):
    """Per run × batch × verifier × task × week (of the judgment): the verifier's judgments of
    (not gold) items the run labelled, and how many equal the run's label. Written with the run's results."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    verifier = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=20)
    week = models.DateField(help_text="the Monday of the week the judgment was made")
    judged = models.PositiveIntegerField(default=0)
    agreed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "batch", "verifier", "task", "week"], name="worker_agreement_key"),
        ]


class WorkerAgreementTotal(models.Model):
    """`WorkerAgreement` summed over each batch's current run (per verifier × task × week)."""

    verifier = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=20)
    week = models.DateField()
    judged = models.IntegerField(default=0)
    agreed = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verifier", "task", "week"], name="worker_agreement_total_key")]


class WorkerAccuracyTotal(models.Model):
    """Dawid–Skene accuracy of a verifier over each batch's current run: Σ accuracy × judgments and Σ judgments."""

    verifier = models.OneToOneField(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+")
    weighted = models.FloatField(default=0.0)
    judgments = models.IntegerField(default=0)
# --- issue 23: retention summaries written by the aggregation job (aggregation/summaries.py) ----------


class ResultCell(models.Model):
    """A succeeded run's audited results (gold excluded, n_judgments > 0) of one batch per task ×
    domain × attribute: retained / total. Every retention table is a sum of these cells."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=15)
    domain = models.CharField(max_length=20)
    attribute = models.CharField(max_length=20)
    total = models.PositiveIntegerField(default=0)
    retained = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["run", "batch"])]


class CurrentResultCell(models.Model):
    """The `ResultCell`s of the current run of every batch, summed per task × domain × attribute
    (a few dozen rows whatever the number of batches)."""

    task = models.CharField(max_length=15)
    domain = models.CharField(max_length=20)
    attribute = models.CharField(max_length=20)
    total = models.PositiveIntegerField(default=0)
    retained = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "domain", "attribute"], name="current_result_cell_one")]


class RunRetention(models.Model):
    """One succeeded run's retention, and its change against the latest earlier results of the same batches."""

    run = models.OneToOneField(AggregationRun, on_delete=models.CASCADE, primary_key=True, related_name="+")
    total = models.PositiveIntegerField(default=0)
    retained = models.PositiveIntegerField(default=0)
    retro_total = models.PositiveIntegerField(default=0)
    retro_retained = models.PositiveIntegerField(default=0)
    prosp_total = models.PositiveIntegerField(default=0)
    prosp_retained = models.PositiveIntegerField(default=0)
    change = models.FloatField(null=True)
    change_batches = models.PositiveIntegerField(default=0)


class CurrentWorkerTally(models.Model):
    """Per verifier, over the current run of every batch: Σ accuracy × judgments and Σ judgments
    (the Dawid–Skene accuracy weighted by judgments)."""

    verifier = models.OneToOneField(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+")
    weighted = models.FloatField(default=0.0)
    n = models.PositiveBigIntegerField(default=0)


class AgreementPattern(models.Model):
    """A succeeded run's benchmark (non-gold) items of one batch and cell (task × domain ×
    attribute × variant) that hold the same usable judgments per choice, `c0`…`c6` in the order of
    `selectors.AGREEMENT_CHOICES` (A, B, C, D, NOTA, NONE, MULTIPLE): how many items, and their
    judgments. Counted from the judgments when the run becomes current (`summaries.agreement_patterns_write`),
    so they are the ones it fitted. The study report's agreement (AC1, kappa, alpha per group and per
    batch: `report.selectors.agreement_by_group`) is summed from these, never from the judgments:
    three judgments over seven choices make a few patterns a cell, at most one an item."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=15)
    domain = models.CharField(max_length=20)
    attribute = models.CharField(max_length=20)
    variant = models.CharField(max_length=15)
    c0 = models.PositiveIntegerField(default=0)
    c1 = models.PositiveIntegerField(default=0)
    c2 = models.PositiveIntegerField(default=0)
    c3 = models.PositiveIntegerField(default=0)
    c4 = models.PositiveIntegerField(default=0)
    c5 = models.PositiveIntegerField(default=0)
    c6 = models.PositiveIntegerField(default=0)
    items = models.PositiveIntegerField()
    judgments = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["run", "batch"])]


class ShortResults(models.Model):
    """A succeeded run's results of one batch (gold excluded) per number of judgments: the
    release's `under_overlap` warning sums those under the batch's overlap (as it is now)."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    n_judgments = models.PositiveIntegerField()
    items = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "batch", "n_judgments"], name="short_results_one")]
        # the warning reads only the rows under the largest overlap: rare, found without a pass over every batch
        indexes = [models.Index(fields=["n_judgments"], name="short_results_n_judgments")]
