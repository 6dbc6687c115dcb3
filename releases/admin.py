"""Releases, read-only: immutable once built (made from the dashboard, the API or `make_release`)."""
from django.contrib import admin

from dialtom_site.admin_base import ReadOnlyAdmin

from .models import Release, ReleaseItem


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
