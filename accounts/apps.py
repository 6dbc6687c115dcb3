from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _project_admins_sync(sender, **kwargs):
    # after every migrate: the group's permissions follow the models (a new model's view_*)
    if sender.label == "accounts":
        from .admin_access import project_admins_group

        project_admins_group(sync=True)


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "People"

    def ready(self):
        post_migrate.connect(_project_admins_sync, sender=self)
