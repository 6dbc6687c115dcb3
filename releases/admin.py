"""Releases, read-only: immutable once built (made from the dashboard, the API or `make_release`)."""
from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import ContextRecord, ItemRecord, ManifestRow, RecordsChange, RecordsWhole, Release, ReleaseItem


@admin.register(Release)
class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ["version", "status", "n_items", "created_by", "trigger", "created_at", "finished_at"]
    list_filter = ["status", "trigger"]
    list_select_related = ["created_by"]
    search_fields = ["version"]


@admin.register(ReleaseItem)
class ReleaseItemAdmin(ReadOnlyAdmin):
    list_display = ["item", "release", "label", "posterior", "n_judgments", "retained"]
    list_filter = ["release", "retained", "item__task", "item__attribute", "item__context__domain"]
    list_select_related = ["item", "release"]
    search_fields = ["item__item_id"]


@admin.register(ManifestRow)
class ManifestRowAdmin(ReadOnlyAdmin):
    """A release's per-batch agreement and staff decisions, a row each, as its manifest lists them."""

    list_display = ["release", "kind", "position"]
    list_filter = ["release", "kind"]
    list_select_related = ["release"]


@admin.register(ContextRecord)
class ContextRecordAdmin(ReadOnlyAdmin):
    """A context's dialogue as releases hold it: remade by the next build when its context changes."""

    list_display = ["context", "versions"]
    list_select_related = ["context"]
    search_fields = ["context__context_id"]


@admin.register(ItemRecord)
class ItemRecordAdmin(ReadOnlyAdmin):
    """An item's options (and profile, continuations) as releases hold them: remade as ContextRecord."""

    list_display = ["item", "versions"]
    list_select_related = ["item"]
    search_fields = ["item__item_id"]


@admin.register(RecordsChange)
class RecordsChangeAdmin(ReadOnlyAdmin):
    """Statements that changed what the records are made of since they were last all made: while
    one is listed, a build checks every record's versions."""

    list_display = ["at", "source"]
    list_filter = ["source"]


@admin.register(RecordsWhole)
class RecordsWholeAdmin(ReadOnlyAdmin):
    """There when every record was made and nothing but a maker wrote them since."""

    list_display = ["made_at", "files"]
