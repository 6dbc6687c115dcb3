"""The "Project admins" group (accounts.admin_access), given to every existing staff member."""
from django.contrib.auth.management import create_permissions
from django.db import migrations

from accounts.admin_access import project_admins_group


def forward(apps, schema_editor):
    # Permissions are normally created after all migrations ran; this one needs them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    group = project_admins_group(group_model=apps.get_model("auth", "Group"), permission_model=apps.get_model("auth", "Permission"))
    for user in apps.get_model("accounts", "User").objects.filter(role="staff"):
        user.groups.add(group)


def backward(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="Project admins").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("aggregation", "0002_run_progress_and_details"),
        ("annotation", "0006_prospective_item_attribute"),
        ("references", "0002_own_tables"),
        ("releases", "0001_release_model"),
        ("scoring", "0001_model_runs_predictions_baselines"),
        ("verification", "0003_admin_proxies_batch_queue_audit_item"),
    ]
    operations = [migrations.RunPython(forward, backward)]
