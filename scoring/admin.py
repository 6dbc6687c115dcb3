from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import BaselineRun, ModelRun, Prediction, RunComparison


@admin.register(ModelRun)
class ModelRunAdmin(admin.ModelAdmin):
    list_display = ["name", "model_name", "release", "status", "published", "uploaded_by", "n_predictions", "created_at",
                    "scored_at"]
    list_filter = ["status", "published", "release"]
    list_select_related = ["release", "uploaded_by"]
    search_fields = ["name", "model_name"]
    readonly_fields = ["scores", "stats", "error", "n_predictions", "status", "scored_at"]


@admin.register(BaselineRun)
class BaselineRunAdmin(admin.ModelAdmin):
    list_display = ["pool", "status", "created_at", "scored_at"]
    readonly_fields = ["scores", "by_person", "error", "status", "scored_at"]


@admin.register(Prediction)
class PredictionAdmin(ReadOnlyAdmin):
    list_display = ["run", "item", "prediction", "correct"]
    list_filter = ["correct", "run"]
    list_select_related = ["run", "item"]
    search_fields = ["item__item_id", "run__name"]


@admin.register(RunComparison)
class RunComparisonAdmin(ReadOnlyAdmin):
    list_display = ["run_a", "run_b", "computed_at"]
    list_select_related = ["run_a", "run_b"]
