"""Playwright in Debian's headless chromium against pytest-django's live server."""
import os
from pathlib import Path

import pytest

# Playwright's sync API keeps an event loop running in this thread for the rest of the
# session; the tests still use the database synchronously (fixtures, assertions, the
# flush of transactional tests), which is safe here. Child processes started by other
# tests drop it again (tests/reliability/helpers.py: subprocess_env).
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


DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture
def screenshot(tmp_path):
    """`screenshot(page, "audit-form")`: into docs/img/ for the README when
    DIALTOM_UPDATE_SCREENSHOTS=1 (`make screenshots`), else into the test's tmp folder,
    so a test run never changes tracked files."""

    def _take(page, name: str) -> Path:
        folder = DOCS_IMG if os.environ.get("DIALTOM_UPDATE_SCREENSHOTS") == "1" else tmp_path
        target = folder / f"{name}.png"
        page.screenshot(path=str(target), full_page=True)
        return target

    return _take
