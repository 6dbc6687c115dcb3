from django.contrib import admin, messages

from . import services
from .models import BatchDayTally, BatchTally, ItemAnswers, VerifierPairTally, VerifierPairTotal, VerifierSecondCount, VerifierSecondsTally, VerifierSecondsTotal, VerifierTally
from .models import AdaptiveOverlap, AuditItem, BatchQueue, Claim, Judgment, QueueSlot, QueueTurn


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only through the services (claims, judgments, queue slots): viewable, never edited here."""

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(BatchQueue)
class BatchQueueAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "overlap", "lease_minutes", "gold_rate", "pool_names"]
    list_filter = ["status"]
    filter_horizontal = ["pools"]
    actions = ["open_batches", "pause_batches", "close_batches"]

    @admin.display(description="pools")
    def pool_names(self, obj):
        return ", ".join(p.name for p in obj.pools.all())

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("pools")

    def _each(self, request, queryset, action, verb):
        for batch in queryset:
            try:
                action(batch)
            except services.VerificationError as exc:
                self.message_user(request, f"{batch.name}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{batch.name} {verb}")

    @admin.action(description="Open (or reopen) the selected batches")
    def open_batches(self, request, queryset):
        self._each(request, queryset, lambda b: services.batch_open(name=b.name), "opened")

    @admin.action(description="Pause the selected batches")
    def pause_batches(self, request, queryset):
        self._each(request, queryset, lambda b: services.batch_pause(name=b.name), "paused")

    @admin.action(description="Close the selected batches")
    def close_batches(self, request, queryset):
        self._each(request, queryset, lambda b: services.batch_close(name=b.name), "closed")


@admin.register(AuditItem)
class AuditItemAdmin(admin.ModelAdmin):
    list_display = ["item_id", "batch", "task", "attribute", "variant", "is_gold"]
    list_filter = ["is_gold", "task", "variant", "batch"]
    search_fields = ["item_id"]
    list_select_related = ["batch"]
    actions = ["mark_gold", "unmark_gold"]
    fields = ["item_id", "batch", "task", "attribute", "variant", "question", "options", "answer", "is_gold"]
    readonly_fields = fields

    @admin.action(description="Mark as gold (attention check)")
    def mark_gold(self, request, queryset):
        n = services.items_gold_set(item_ids=list(queryset.values_list("item_id", flat=True)), is_gold=True)
        self.message_user(request, f"{n} item(s) marked gold")

    @admin.action(description="Unmark gold")
    def unmark_gold(self, request, queryset):
        n = services.items_gold_set(item_ids=list(queryset.values_list("item_id", flat=True)), is_gold=False)
        self.message_user(request, f"{n} item(s) unmarked")

    def has_add_permission(self, request):
        return False


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ["id", "item", "verifier", "batch", "status", "is_gold", "claimed_at", "expires_at"]
    list_filter = ["status", "is_gold", "batch"]
    list_select_related = ["item", "verifier", "batch"]
    search_fields = ["item__item_id", "verifier__username"]


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["item", "verifier", "batch", "label", "displayed_label", "seconds_spent", "source", "created_at"]
    list_filter = ["batch", "label", "source"]
    list_select_related = ["item", "verifier", "batch"]
    search_fields = ["item__item_id", "verifier__username"]


@admin.register(QueueSlot)
class QueueSlotAdmin(ReadOnlyAdmin):
    list_display = ["item", "batch", "taken", "needed", "is_gold"]
    list_filter = ["batch", "is_gold"]
    list_select_related = ["item", "batch"]




@admin.register(QueueTurn)
class QueueTurnAdmin(ReadOnlyAdmin):
    list_display = ["verifier", "claims"]
    list_select_related = ["verifier"]


@admin.register(AdaptiveOverlap)
class AdaptiveOverlapAdmin(ReadOnlyAdmin):
    list_display = ["batch", "k_min", "k_max", "rounds", "undecided", "settled", "refreshed_at"]
    list_select_related = ["batch"]


# --- issue 23: summaries kept as answers come in (rebuilt by `manage.py summaries_rebuild`) ---
for _summary in (BatchTally, BatchDayTally, VerifierTally, VerifierSecondCount, ItemAnswers,
                 VerifierPairTally, VerifierPairTotal, VerifierSecondsTally, VerifierSecondsTotal):
    admin.site.register(_summary, ReadOnlyAdmin)
