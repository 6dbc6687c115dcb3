"""Issue 21 item 7: the README's "Django admin for all of it" holds: every model of the
studio is in the admin, and staff (the "Project admins" group) open every changelist."""
import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from accounts.admin_access import PROJECT_APPS
from accounts.services import person_create

pytestmark = pytest.mark.django_db

STUDIO_APPS = ("accounts", "annotation", "references", "verification", "aggregation", "releases", "scoring", "review")


@pytest.fixture
def staff_client(client):
    person = person_create(username="boss", email="b@example.org", role="staff")
    client.force_login(person)
    return client


def test_every_studio_model_is_registered():
    missing = [m._meta.label for m in apps.get_models() if m._meta.app_label in STUDIO_APPS and m not in admin.site._registry]
    assert missing == []
    assert set(STUDIO_APPS) <= set(PROJECT_APPS)


def test_staff_open_every_admin_changelist(staff_client):
    for model in admin.site._registry:
        if model._meta.app_label not in (*STUDIO_APPS, "authtoken"):
            continue  # auth's own models stay a superuser's
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert staff_client.get(url).status_code == 200, url
    assert staff_client.get(reverse("admin:auth_group_changelist")).status_code == 403


def test_staff_edit_a_guideline_in_the_admin_and_never_see_a_token_key(staff_client):
    from rest_framework.authtoken.models import Token

    from review.models import Guideline
    from tests.factories import BatchFactory, UserFactory

    batch = BatchFactory(name="mi-b01")
    guideline = Guideline.objects.create(batch=batch, text="Old")
    page = staff_client.get(reverse("admin:review_guideline_change", args=[guideline.pk]))
    assert page.status_code == 200 and 'name="text"' in page.content.decode()

    token = Token.objects.create(user=UserFactory(username="v1"))
    tokens = staff_client.get(reverse("admin:authtoken_tokenproxy_changelist")).content.decode()
    assert "v1" in tokens and token.key not in tokens
