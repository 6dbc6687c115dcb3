"""Django admin for the benchmark's material, with the filters staff use to find things."""
from django.contrib import admin
from django.db.models import Count

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import Batch, Context, ContinuationReveal, Domain, ImportedFile, Item, ItemSummary, Session, Turn


class ItemCountAdmin(admin.ModelAdmin):
    """A sortable "items" column, counted in the list query (no query per row)."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(items_count=Count("items"))

    @admin.display(description="items", ordering="items_count")
    def n_items(self, obj):
        return obj.items_count


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "corpus", "initiator_role", "recipient_role", "n_sessions"]
    search_fields = ["code", "name", "corpus"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(sessions_count=Count("sessions"))

    @admin.display(description="sessions", ordering="sessions_count")
    def n_sessions(self, obj):
        return obj.sessions_count


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ["index", "speaker", "source_role", "text", "n_words"]
    readonly_fields = ["n_words"]
    extra = 0
    show_change_link = True


class ContextInline(admin.TabularInline):
    model = Context
    fields = ["context_id", "window_index", "first_turn", "last_turn", "n_words"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    fk_name = "session"


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["session_id", "domain", "source_id", "n_turns", "n_words", "created_at"]
    list_filter = ["domain"]
    search_fields = ["session_id", "source_id"]
    readonly_fields = ["created_at"]
    inlines = [TurnInline, ContextInline]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["__str__", "session", "index", "speaker", "source_role", "n_words"]
    list_filter = ["session__domain", "speaker"]
    search_fields = ["session__session_id", "text"]
    list_select_related = ["session"]
    raw_id_fields = ["session"]


class ItemInline(admin.TabularInline):
    model = Item
    fields = ["item_id", "task", "attribute", "variant", "answer", "batch", "is_gold"]
    readonly_fields = ["item_id", "task", "attribute", "variant", "answer", "batch"]
    extra = 0
    can_delete = False
    show_change_link = True
    fk_name = "context"


@admin.register(Context)
class ContextAdmin(ItemCountAdmin):
    list_display = ["context_id", "domain", "session_key", "window_index", "n_words", "n_items"]
    list_filter = ["domain", ("session", admin.EmptyFieldListFilter)]
    search_fields = ["context_id", "session_key"]
    raw_id_fields = ["session"]
    readonly_fields = ["created_at"]
    inlines = [ItemInline]


@admin.register(Batch)
class BatchAdmin(ItemCountAdmin):
    list_display = ["name", "status", "overlap", "lease_minutes", "gold_rate", "n_items", "created_at", "closed_at"]
    list_filter = ["status"]
    search_fields = ["name"]
    filter_horizontal = ["pools"]
    readonly_fields = ["created_at"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["item_id", "domain", "task", "attribute", "variant", "answer", "batch", "is_gold", "retained_by_authors"]
    list_filter = ["context__domain", "task", "attribute", "variant", "batch", "is_gold", "retained_by_authors"]
    search_fields = ["item_id", "context__context_id", "question"]
    list_select_related = ["context", "batch"]
    raw_id_fields = ["context", "parent"]
    readonly_fields = ["created_at"]
    list_per_page = 50

    @admin.display(description="domain", ordering="context__domain")
    def domain(self, obj):
        return obj.context.domain_id


@admin.register(ContinuationReveal)
class ContinuationRevealAdmin(ReadOnlyAdmin):
    """Which dialogue shows which window's true continuation (made at import: read-only)."""

    list_display = ["dialogue", "continuation_of"]
    list_select_related = ["dialogue", "continuation_of"]
    search_fields = ["dialogue__context_id", "continuation_of__context_id"]


# --- issue 23: what the imports and the item list keep (written by services, looked at here) ---


@admin.register(ImportedFile)
class ImportedFileAdmin(ReadOnlyAdmin):
    list_display = ["name", "importer", "options", "sha256", "size", "imported_at"]
    search_fields = ["name", "sha256"]


@admin.register(ItemSummary)
class ItemSummaryAdmin(ReadOnlyAdmin):
    list_display = ["item", "batch", "task", "judgments", "flags_open", "label", "posterior", "retained", "decision"]
    list_select_related = ["item", "batch"]
