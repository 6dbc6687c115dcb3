"""Aggregation runs and their results, read-only: a run is started from the dashboard, the API
or `manage.py aggregate`, and its results are what Dawid–Skene wrote."""
from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import (
    AgreementPattern, CurrentResultCell, CurrentWorkerTally, ResultCell, RunRetention, ShortResults, WorkerAccuracyTotal, WorkerAgreement,
    WorkerAgreementTotal,
)
from .models import AggregationRun, BatchResult, ItemResult, WorkerResult


@admin.register(AggregationRun)
class AggregationRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "status", "trigger", "started_by", "created_at", "finished_at", "batches_done", "batches_total"]
    list_filter = ["status", "trigger"]
    list_select_related = ["started_by"]


@admin.register(BatchResult)
class BatchResultAdmin(ReadOnlyAdmin):
    list_display = ["batch", "run", "items", "judgments", "retained", "ac1", "kappa", "alpha"]
    list_filter = ["batch"]
    list_select_related = ["batch", "run"]


@admin.register(ItemResult)
class ItemResultAdmin(ReadOnlyAdmin):
    list_display = ["item", "run", "batch", "label", "posterior", "n_judgments", "retained"]
    list_filter = ["retained", "item__task", "item__attribute", "item__context__domain"]
    list_select_related = ["item", "run", "batch"]
    search_fields = ["item__item_id"]


@admin.register(WorkerResult)
class WorkerResultAdmin(ReadOnlyAdmin):
    list_display = ["verifier", "run", "batch", "accuracy", "n_judgments", "gold_accuracy"]
    list_select_related = ["verifier", "run", "batch"]
    search_fields = ["verifier__username"]


# --- issue 23: summaries written by the aggregation job (rebuilt by `manage.py summaries_rebuild`) ---
for _summary in (ResultCell, CurrentResultCell, RunRetention, CurrentWorkerTally, ShortResults, AgreementPattern,
                 WorkerAgreement, WorkerAgreementTotal, WorkerAccuracyTotal):
    admin.site.register(_summary, ReadOnlyAdmin)
