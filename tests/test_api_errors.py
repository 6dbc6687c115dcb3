"""Every answer under /api/ is JSON, outages are 503s with Retry-After (issue 20, break 5),
and no API answer may be cached (break 6). Pages keep their styled HTML error pages.

The database outage under a real server is in tests/reliability/test_db_faults.py (a
PostgreSQL that drops the app's connections) and test_api_outage.py (one that is down).
"""
import pytest
from django.test import Client, override_settings

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(verifier):
    from rest_framework.authtoken.models import Token

    return Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=verifier).key}")


def _is_json_error(response, status):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    assert response.json()["detail"]
    assert response["Cache-Control"] == "no-store"


def test_an_unknown_api_url_is_a_json_404_and_a_page_stays_html(api):
    _is_json_error(api.get("/api/v1/no-such-thing/"), 404)
    _is_json_error(api.get("/api/nothing/"), 404)
    page = api.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    assert b"There is no such page" in page.content


def test_a_wrong_method_is_a_json_405(api):
    response = api.delete("/api/v1/progress/")
    _is_json_error(response, 405)
    assert "GET" in response["Allow"]


def test_a_30_mb_body_is_a_json_413(api):
    body = b'{"comment": "' + b"x" * (30 * 1024 * 1024) + b'"}'
    _is_json_error(api.generic("POST", "/api/v1/judgments/", body, content_type="application/json"), 413)
    form = api.generic("POST", "/api/v1/judgments/", b"comment=" + b"x" * (30 * 1024 * 1024),
                       content_type="application/x-www-form-urlencoded")
    _is_json_error(form, 413)


def test_djangos_own_400_is_json_on_the_api(api):
    _is_json_error(api.get("/api/v1/progress/", HTTP_HOST="evil.example.com"), 400)


@override_settings(DEBUG=False)
def test_a_csrf_failure_on_the_api_is_json(verifier):
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(verifier)
    _is_json_error(client.post("/api/v1/judgments/", {"claim": 1}, content_type="application/json"), 403)


@pytest.mark.urls("tests.outage_urls")
def test_a_server_error_on_the_api_is_json(api):
    _is_json_error(api.get("/api/v1/crash/"), 500)


@pytest.mark.urls("tests.outage_urls")
def test_a_broker_outage_is_a_503_with_retry_after(api):
    response = api.get("/api/v1/broker-probe/")
    _is_json_error(response, 503)
    assert int(response["Retry-After"]) > 0 and "task queue" in response.json()["detail"]
    page = api.get("/broker-probe/")
    assert page.status_code == 503 and int(page["Retry-After"]) > 0
    assert b"unavailable for a moment" in page.content and page["Content-Type"].startswith("text/html")


def test_every_api_answer_says_no_store(api):
    assert api.get("/api/v1/progress/")["Cache-Control"] == "no-store"
    assert Client().get("/api/v1/progress/")["Cache-Control"] == "no-store"  # 401


def test_the_schema_and_docs_are_for_authenticated_clients_only(api):
    anonymous = Client(raise_request_exception=False)
    for path in ("/api/schema/", "/api/docs/", "/api/docs/?script"):
        assert anonymous.get(path).status_code in (401, 403), path
        assert anonymous.get(path)["Content-Type"] == "application/json"
    assert api.get("/api/schema/").status_code == 200
    reader = Client()
    reader.force_login(UserFactory(username="docs-reader"))
    assert reader.get("/api/docs/").status_code == 200
