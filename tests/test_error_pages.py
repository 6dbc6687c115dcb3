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


@override_settings(DEBUG=False)
def test_a_400_is_the_sites_page():
    from django.test import Client

    # an unknown Host header is Django's classic 400 (DisallowedHost → SuspiciousOperation)
    response = Client().get("/", HTTP_HOST="not-our-host.example")
    assert response.status_code == 400
    page = response.content.decode()
    assert "The studio could not read this request" in page and 'href="/"' in page and "studio.css" in page


def test_a_refused_form_gets_the_sites_csrf_page(verifier):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(verifier)
    response = client.post("/accounts/profile/", {"theme": "dark"})
    assert response.status_code == 403
    page = response.content.decode()
    assert "This form could not be accepted" in page and "Nothing was saved" in page
    assert "studio.css" in page and 'href="/"' in page
    assert "CSRF verification failed" not in page  # not Django's bare page


@override_settings(DEBUG=False)
def test_a_verifier_refused_the_review_pages_is_told_they_are_for_staff(client, verifier):
    client.force_login(verifier)
    for path in ("/review/flags/", "/review/items/", "/review/verifiers/"):
        response = client.get(path)
        assert response.status_code == 403
        assert b"The review pages are for project staff." in response.content
        assert b"The dashboard is for project staff" not in response.content
    assert b"The dashboard is for project staff." in client.get("/dashboard/").content
