"""Playwright in Debian's headless chromium against pytest-django's live server."""
import pytest


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(autouse=True)
def _allow_sync_orm_beside_playwright(monkeypatch):
    """Playwright's sync API runs an event loop in this thread; the test still talks to the
    database synchronously (fixtures, assertions), which is safe here. Set for browser tests
    only, so it never leaks into the environment of other tests' subprocesses."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture
def login(live_server, page):
    """Log `user` in through the real login form; returns the page."""

    def _login(user, password="pw-for-tests-1"):
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        return page

    return _login
