"""What the studio's read-only admin pages share: rows written by services and jobs
(results, release items, predictions, queue turns) are looked at in the admin, never edited."""
from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False  # no second COUNT(*) over tables of millions of rows

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
