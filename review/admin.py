"""Staff edit guidelines here (or with `manage.py guideline_set`); flags and adjudications are
listed for search, and written through the review pages (the services keep their rules)."""
from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .item_summaries import item_summaries_flags_refresh
from .models import DecisionInForce, FlagTally
from .models import Adjudication, Flag, Guideline, GuidelineExample


class GuidelineExampleInline(admin.StackedInline):
    model = GuidelineExample
    extra = 1


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin):
    list_display = ["batch", "updated_by", "updated_at"]
    search_fields = ["batch__name", "text"]
    readonly_fields = ["updated_by", "updated_at"]
    inlines = [GuidelineExampleInline]

    def save_model(self, request, obj, form, change):
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(GuidelineExample)
class GuidelineExampleAdmin(admin.ModelAdmin):
    list_display = ["guideline", "topic"]
    list_filter = ["topic"]
    list_select_related = ["guideline__batch"]


@admin.register(Flag)
class FlagAdmin(admin.ModelAdmin):
    list_display = ["item", "reason", "flagged_by", "status", "created_at", "handled_by"]
    list_filter = ["status", "reason"]
    search_fields = ["item__item_id", "comment"]
    list_select_related = ["item", "flagged_by", "handled_by"]
    readonly_fields = ["item", "flagged_by", "reason", "comment", "created_at", "handled_by", "handled_at"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        item_summaries_flags_refresh(item_ids=[obj.item_id])  # the item list's counts (issue 23)


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Read-only: a decision is recorded on the item's review page and never edited."""

    list_display = ["item", "decision", "decided_by", "decided_at"]
    list_filter = ["decision"]
    search_fields = ["item__item_id", "reason"]
    list_select_related = ["item", "decided_by"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- issue 23: flags per status, kept by the review services ---
admin.site.register(FlagTally, ReadOnlyAdmin)
admin.site.register(DecisionInForce, ReadOnlyAdmin)
