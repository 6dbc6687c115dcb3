from django.contrib import admin

from .models import BaselineRun, ModelRun


@admin.register(ModelRun)
class ModelRunAdmin(admin.ModelAdmin):
    list_display = ["name", "model_name", "release", "status", "n_predictions", "created_at", "scored_at"]
    list_filter = ["status", "release"]
    search_fields = ["name", "model_name"]
    readonly_fields = ["scores", "stats", "error", "n_predictions", "status", "scored_at"]


@admin.register(BaselineRun)
class BaselineRunAdmin(admin.ModelAdmin):
    list_display = ["pool", "status", "created_at", "scored_at"]
    readonly_fields = ["scores", "by_person", "error", "status", "scored_at"]
