from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def _project_admins_sync(sender, **kwargs):
    # After every migrate (and a test's flush), once the last app's permissions exist: the
    # group's permissions follow the models (a new model's view_* reaches staff).
    if sender is [config for config in apps.get_app_configs() if config.models_module is not None][-1]:
        from .admin_access import project_admins_group

        project_admins_group(sync=True)


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "People"

    def ready(self):
        from . import authentication  # noqa: F401 (its signals forget changed tokens and users)

        post_migrate.connect(_project_admins_sync, dispatch_uid="accounts.project_admins_sync")
