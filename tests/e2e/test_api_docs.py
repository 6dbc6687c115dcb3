"""The API docs (Swagger UI) work under `script-src 'self'`: the UI comes from this site's
static files (npm's swagger-ui-dist), its init script is a separate same-origin request,
and the browser reports no CSP violation (the autouse check in conftest.py). The docs and
the schema are for people who are logged in (issue 20, break 6)."""
from tests.factories import UserFactory


def test_swagger_ui_renders_the_operations(transactional_db, live_server, login, page, no_csp_violations):
    login(UserFactory(username="docs-reader"))
    response = page.goto(f"{live_server.url}/api/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/next-item/" in p for p in paths), paths[:5]
    assert not no_csp_violations
