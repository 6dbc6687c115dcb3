"""Staff get the "Project admins" group: they see the studio's models in the admin, change
the few the admin is for, and never get rights over auth itself."""
import pytest
from django.contrib.auth.models import Group

from accounts.admin_access import PROJECT_ADMINS
from accounts.services import person_create

pytestmark = pytest.mark.django_db


def test_staff_created_by_the_services_are_project_admins():
    admin = person_create(username="boss", email="b@example.org", role="staff")
    verifier = person_create(username="v1", email="v@example.org", role="verifier")
    assert admin.is_staff and admin.groups.filter(name=PROJECT_ADMINS).exists()
    assert not verifier.groups.exists() and not verifier.is_staff
    admin = type(admin).objects.get(pk=admin.pk)  # fresh permission cache
    assert admin.has_perm("annotation.view_item") and admin.has_perm("verification.change_batchqueue")
    assert admin.has_perm("verification.view_judgment") and not admin.has_perm("verification.change_judgment")
    assert not admin.has_perm("verification.delete_judgment")
    assert not admin.has_perm("auth.change_group") and not admin.has_perm("auth.view_permission")


def test_the_migration_created_the_group():
    group = Group.objects.get(name=PROJECT_ADMINS)
    assert group.permissions.filter(codename="view_judgment").exists()


def test_staff_do_not_see_permission_fields_of_a_person(client):
    admin = person_create(username="boss", email="b@example.org", role="staff")
    admin.set_password("pw-for-tests-1")
    admin.save()
    client.force_login(admin)
    page = client.get(f"/admin/accounts/user/{admin.pk}/change/").content.decode()
    assert 'name="is_active"' in page
    assert 'name="is_superuser"' not in page and 'name="groups"' not in page and 'name="is_staff"' not in page


def test_the_group_follows_the_models_after_a_migrate():
    from django.core.management import call_command

    group = Group.objects.get(name=PROJECT_ADMINS)
    group.permissions.clear()
    call_command("migrate", verbosity=0)  # nothing to apply; post_migrate still runs
    assert group.permissions.filter(codename="view_judgment").exists()
    assert group.permissions.filter(codename="change_batchqueue").exists()
