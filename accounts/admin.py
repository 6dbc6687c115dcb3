from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from .models import Pool, User


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ["username", "email", "role", "is_staff", "excluded_from_aggregation", "is_active"]
    list_filter = ["role", "is_staff", "excluded_from_aggregation", "is_active"]
    fieldsets = BaseUserAdmin.fieldsets + (("DialToM", {"fields": ["role", "excluded_from_aggregation", "exclusion_reason"]}),)


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
    filter_horizontal = ["members"]
