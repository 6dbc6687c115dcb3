"""403, 404 and 500 are pages of the studio with a way back, not bare text."""
import pytest
from django.template.loader import render_to_string
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_the_500_page_renders_without_a_request_and_leads_home():
    page = render_to_string("500.html")  # Django's handler gives it no context at all
    assert "Something went wrong on our side" in page and 'href="/"' in page


@override_settings(DEBUG=False)
def test_403_and_404_pages_lead_home(client, verifier):
    client.force_login(verifier)
    refused = client.get("/dashboard/")
    assert refused.status_code == 403 and b"You are not allowed to open this page" in refused.content
    assert b'href="/"' in refused.content and b"/accounts/profile/" in refused.content
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404 and b"There is no such page" in missing.content


def test_the_admin_tells_a_verifier_it_is_for_staff(client, verifier):
    client.force_login(verifier)
    response = client.get("/admin/", follow=True)
    assert response.status_code == 403
    assert b"The admin is for project staff" in response.content
    assert b'name="password"' not in response.content
