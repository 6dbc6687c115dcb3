"""Playwright in Debian's headless chromium against pytest-django's live server."""
import os

import pytest

# Playwright's sync API runs an event loop in this thread; the test still talks to the
# database synchronously (fixtures, assertions, transactional_db's flush), which is safe
# here. It is set for the whole test process: the session-wide Playwright loop keeps
# running after the browser tests, so later in-process database tests need it too.
# Child processes on production settings drop it (tests/reliability/helpers.production_env).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


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
