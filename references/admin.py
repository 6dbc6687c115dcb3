"""Django admin for the reference workflow (read-mostly: the workflow's pages are the way to change things)."""
from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import (
    Reference,
    ReferenceAssignment,
    ReferenceDraft,
    ReferenceSeat,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSubmission,
    SimilarityRun,
    SimilarityScore,
)


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


# Rows the workflow writes (issue 21: every model in the admin), read-only here.
@admin.register(ReferenceSetContext)
class ReferenceSetContextAdmin(ReadOnlyAdmin):
    list_display = ["reference_set", "context", "position", "attributes"]
    list_filter = ["reference_set"]
    list_select_related = ["reference_set", "context"]
    search_fields = ["context__context_id"]


@admin.register(ReferenceSeat)
class ReferenceSeatAdmin(ReadOnlyAdmin):
    list_display = ["member_id", "attribute", "slot", "assignment_id", "worker"]
    list_select_related = ["worker"]


@admin.register(ReferenceDraft)
class ReferenceDraftAdmin(ReadOnlyAdmin):
    list_display = ["member_id", "worker", "seconds_spent", "updated_at"]
    list_select_related = ["worker"]


@admin.register(ReferenceSubmission)
class ReferenceSubmissionAdmin(ReadOnlyAdmin):
    list_display = ["assignment_id", "idempotency_key", "seconds_spent", "created_at"]


@admin.register(Reference)
class ReferenceAdmin(ReadOnlyAdmin):
    list_display = ["assignment_id", "attribute", "text"]
    list_filter = ["attribute"]
    search_fields = ["text"]


@admin.register(SimilarityScore)
class SimilarityScoreAdmin(ReadOnlyAdmin):
    list_display = ["run", "attribute", "bleu", "rouge_l", "n_contexts"]
    list_select_related = ["run"]
