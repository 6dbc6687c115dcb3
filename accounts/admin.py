from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from rest_framework.authtoken.admin import TokenAdmin as BaseTokenAdmin
from rest_framework.authtoken.models import TokenProxy

from .models import Pool, User
from .services import verifier_exclusion_set


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ["username", "email", "role", "is_staff", "excluded_from_aggregation", "is_active"]
    list_filter = ["role", "is_staff", "excluded_from_aggregation", "is_active"]
    fieldsets = BaseUserAdmin.fieldsets + (("DialToM", {"fields": ["role", "excluded_from_aggregation", "exclusion_reason"]}),)
    actions = ["exclude_from_aggregation", "include_in_aggregation"]

    def get_fieldsets(self, request, obj=None):
        # Only a superuser hands out rights: staff see a person's `is_active`, not the
        # fields that would let them make anyone (themselves included) staff or superuser.
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser or obj is None:
            return fieldsets
        return [(name, {**opts, "fields": ["is_active"]}) if "is_superuser" in opts.get("fields", ()) else (name, opts)
                for name, opts in fieldsets]

    @admin.action(description="Exclude from aggregation (judgments kept, not used)")
    def exclude_from_aggregation(self, request, queryset):
        for user in queryset:
            verifier_exclusion_set(user=user, excluded=True, reason=f"excluded by {request.user.username}")
        self.message_user(request, f"{queryset.count()} excluded from aggregation")

    @admin.action(description="Include in aggregation again")
    def include_in_aggregation(self, request, queryset):
        for user in queryset:
            verifier_exclusion_set(user=user, excluded=False)
        self.message_user(request, f"{queryset.count()} included in aggregation")


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
    filter_horizontal = ["members"]


admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class TokenAdmin(BaseTokenAdmin):
    """Who holds an API token and since when. A key is a password: only a superuser sees it
    (staff view the list; tokens are handed out by `create_people --tokens`)."""

    list_select_related = ["user"]

    def get_list_display(self, request):
        return ("key", "user", "created") if request.user.is_superuser else ("user", "created")
