"""Who may do what in Django's admin: the one place for the "Project admins" group.

Staff (role `staff`) get `is_staff` (the admin's door) and this group (what they may see
and change there). Least privilege: they view every model of the studio and change the
few things the admin is used for (people and pools, batches and their queue, gold items,
model runs, guidelines and their examples); they never get auth's own models or delete rights (judgments are evidence),
and only a superuser sees the permission fields of a person (accounts.admin.UserAdmin).
"""
from __future__ import annotations

from django.db.models import Q

PROJECT_ADMINS = "Project admins"
PROJECT_APPS = (
    "accounts", "annotation", "references", "verification", "aggregation", "releases", "scoring", "review",
    "authtoken",  # who holds an API token and since when (accounts.admin.TokenAdmin never shows a key)
)
# beyond viewing every model of PROJECT_APPS
CHANGE = {
    "accounts": ("user", "pool"),
    "annotation": ("batch", "domain"),
    "verification": ("batchqueue", "audititem"),
    "scoring": ("modelrun", "baselinerun"),
    "review": ("guideline", "guidelineexample"),
}
ADD = {"accounts": ("pool",), "scoring": ("modelrun",), "review": ("guideline", "guidelineexample")}


def project_admin_permissions(*, permission_model):
    """The group's permissions; takes the model so the data migration can pass its historical one."""
    wanted = Q(content_type__app_label__in=PROJECT_APPS, codename__startswith="view_")
    for verb, table in (("change", CHANGE), ("add", ADD)):
        for app_label, models in table.items():
            wanted |= Q(content_type__app_label=app_label, codename__in=[f"{verb}_{m}" for m in models])
    return permission_model.objects.filter(wanted)


def project_admins_group(*, group_model=None, permission_model=None, sync: bool = False):
    """The group, created with its permissions if missing (a flushed test database has none);
    `sync` sets them again (after every migrate: accounts.apps)."""
    if group_model is None:
        from django.contrib.auth.models import Group as group_model, Permission as permission_model
    group, created = group_model.objects.get_or_create(name=PROJECT_ADMINS)
    if sync or created or not group.permissions.exists():
        group.permissions.set(project_admin_permissions(permission_model=permission_model))
    return group
