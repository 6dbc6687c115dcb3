"""Django admin for the reference workflow (read-mostly: the workflow's pages are the way to change things)."""
from django.contrib import admin

from .models import ReferenceAssignment, ReferenceSet, SimilarityRun, SimilarityScore


@admin.register(ReferenceSet)
class ReferenceSetAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "per_context", "source", "seed", "target_speaker", "created_at"]
    list_filter = ["status", "source"]


@admin.register(ReferenceAssignment)
class ReferenceAssignmentAdmin(admin.ModelAdmin):
    list_display = ["member", "worker", "attributes", "status", "claimed_at", "submitted_at", "seconds_spent"]
    list_filter = ["status", "member__reference_set"]
    list_select_related = ["member__context", "member__reference_set", "worker"]
    search_fields = ["member__context__context_id", "worker__username"]
    raw_id_fields = ["member", "worker", "reviewed_by"]


class SimilarityScoreInline(admin.TabularInline):
    model = SimilarityScore
    extra = 0
    can_delete = False
    readonly_fields = ["attribute", "bleu", "rouge_l", "n_contexts", "n_references", "n_skipped"]


@admin.register(SimilarityRun)
class SimilarityRunAdmin(admin.ModelAdmin):
    list_display = ["name", "reference_set", "status", "created_at", "finished_at"]
    exclude = ["inferences"]
    inlines = [SimilarityScoreInline]
