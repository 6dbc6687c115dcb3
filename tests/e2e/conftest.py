"""Playwright in Debian's headless chromium against pytest-django's live server."""
import os
import threading
import time
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


class _InFlight:
    """Wraps the live server's WSGI app: counts the requests it is working on, and can shut
    its door (503 at once, no database) while a test's data is being flushed."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.running = 0
        self.last_seen = time.monotonic()
        self.closed = False

    def __call__(self, environ, start_response):
        with self.lock:
            if self.closed:
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                return [b"between tests"]
            self.running += 1
            self.last_seen = time.monotonic()
        try:
            return self.app(environ, start_response)
        finally:
            with self.lock:
                self.running -= 1
                self.last_seen = time.monotonic()

    def _wait(self, done, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if done():
                    return
            time.sleep(0.05)

    def wait_until_quiet(self, quiet=0.5, timeout=15.0):
        """Return once no request has run for `quiet` seconds (or after `timeout`)."""
        self._wait(lambda: self.running == 0 and time.monotonic() - self.last_seen >= quiet, timeout)

    def shut(self, timeout=15.0):
        """Turn away new requests, and return once the running ones are done."""
        with self.lock:
            self.closed = True
        self._wait(lambda: self.running == 0, timeout)

    def open(self):
        with self.lock:
            self.closed = False


@pytest.fixture(scope="session")
def live_server_requests(live_server):
    httpd = live_server.thread.httpd
    counter = _InFlight(httpd.get_app())
    httpd.set_app(counter)
    return counter


@pytest.fixture
def login(live_server, live_server_requests, page):
    """Log `user` in through the real login form; returns the page.

    At teardown, before the transactional test flushes the database, the page is left
    (which fires any `pagehide` beacon, like the reference form's last-chance autosave),
    the live server is given time to finish what it was asked, and then turns away
    whatever still comes (a beacon slowed down on a busy machine): a request writing while
    the flush truncates the tables deadlocks in PostgreSQL."""
    live_server_requests.open()

    def _login(user, password="pw-for-tests-1"):
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        return page

    yield _login
    if not page.is_closed():
        page.goto("about:blank")
    live_server_requests.wait_until_quiet()
    live_server_requests.shut()


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


@pytest.fixture(autouse=True)
def no_csp_violations(request):
    """Every browser test also checks that the page broke no rule of the CSP (which every
    environment sends, `script-src 'self'` included): Chromium reports each blocked inline
    script, eval or foreign script on the console (issue 12, break 12)."""
    if "page" not in request.fixturenames:
        yield
        return
    page = request.getfixturevalue("page")
    violations = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None)
    yield violations
    assert not violations, "\n".join(violations[:5])
