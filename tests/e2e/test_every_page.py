"""Every page of each role on the demo data, at 390 px and on the desktop: no horizontal
page overflow, and axe-core (npm, injected from node_modules) finds no serious or critical
violation, in the light theme and (at the desktop size) in the dark one.

A page added for a role goes into that role's list in `pages_for` (a path, or a function
of the page that finds one by clicking, as a person would).
"""
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import User
from references.models import ReferenceSet
from verification.models import Judgment

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def _audit_page(page):
    """The first batch on /verify/ with an item to judge."""
    page.goto("/verify/")
    for href in [a.get_attribute("href") for a in page.locator("a.button[href^='/verify/']").all()]:
        page.goto(href)
        if page.locator("form[data-audit-form]").count():
            return href
    raise AssertionError("the demo leaves no item for verifier")


def _change_page(page):
    # answer the item in hand, then open "Change" on it
    page.goto(_audit_page(page))
    if page.locator("dialog#guidelines[open]").count():  # the guidelines come before the first item
        page.keyboard.press("Escape")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector(".recent a:has-text('Change')")
    judgment = Judgment.objects.filter(verifier__username="verifier").latest("created_at")
    return f"/verify/judgments/{judgment.pk}/"


def _crowd_work_page(page):
    page.goto("/annotate/")
    page.locator("form[action*='/next/'] button").first.click()
    page.wait_for_url("**/annotate/work/**")
    return page.url


def _login_link_page(_page):
    from accounts.services import login_link_path

    return login_link_path(user=User.objects.get(username="crowd"))


def _reference_set_page(_page):
    return f"/annotate/references/{ReferenceSet.objects.order_by('name').first().name}/"


def _linked(listing, selector):
    """The first page `listing` links to with `selector`, if the demo has one (else skipped)."""
    def find(page):
        page.goto(listing)
        link = page.locator(selector).first
        return link.get_attribute("href") if link.count() else None

    find.__name__ = f"{listing} → {selector}"
    return find


def _item_page(_page):
    from review.models import Adjudication

    return f"/review/items/{Adjudication.objects.first().item.item_id}/"


def pages_for(role):
    common_errors = ["/no-such-page/"]
    return {
        "anonymous": ["/accounts/login/", _login_link_page, "/accounts/link/not-a-token/"] + common_errors,
        "verifier": ["/verify/", _audit_page, _change_page, "/verify/dialtom-mi-retrospective/guidelines/",
                     "/accounts/profile/", "/dashboard/", "/admin/"] + common_errors,
        "crowd": ["/annotate/", _crowd_work_page, "/accounts/profile/", "/verify/"],
        "admin": ["/dashboard/", "/annotate/references/", _reference_set_page, "/annotate/similarity/",
                  _linked(_reference_set_page(None), "a[href*='/review/']"),
                  _linked("/annotate/similarity/", "a[href^='/annotate/similarity/'][href$='/']"),
                  "/leaderboard/", "/leaderboard/compare/", _linked("/leaderboard/", "#leaderboard a[href^='/leaderboard/']"),
                  "/accounts/profile/", "/admin/",
                  "/admin/annotation/batch/", "/api/docs/", "/review/flags/", "/review/items/", _item_page,
                  "/review/verifiers/", "/leaderboard/upload/", "/releases/", "/releases/v1/", "/report/", "/studies/",
                  _linked("/dashboard/", "a.guideline-link")],
        "reader": ["/", "/releases/v1/", "/leaderboard/", _linked("/leaderboard/", "#leaderboard a[href^='/leaderboard/']"),
                   "/leaderboard/upload/", "/accounts/profile/"],
    }[role]


# Swagger UI (npm swagger-ui-dist, not ours) puts the copy button of an operation inside
# its expand button; nothing in drf-spectacular's settings changes that markup.
AXE_RULES_OFF = {"/api/docs/": ["nested-interactive"]}


def _axe_serious(page, path):
    # Evaluated through DevTools, not added as a <script>: the site's CSP (script-src 'self')
    # rightly refuses an inline script tag, and a refusal fails the test (conftest.py).
    page.evaluate(AXE.read_text())
    rules = {rule: {"enabled": False} for rule in AXE_RULES_OFF.get(path, [])}
    result = page.evaluate("""async (rules) => {
        const r = await axe.run(document, {resultTypes: ["violations"], rules: rules});
        return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(" | "));
    }""", rules)
    return result


@pytest.mark.parametrize("role", ["anonymous", "verifier", "crowd", "admin", "reader"])
def test_every_page_fits_a_phone_and_passes_axe(role, transactional_db, live_server, page, login):
    call_command("load_demo", "--json", stdout=open("/dev/null", "w"))
    page.set_default_timeout(15_000)
    if role != "anonymous":
        user = User.objects.get(username=role)
        user.set_password("pw-for-tests-1")
        user.save(update_fields=["password"])
        login(user)
    base = live_server.url
    page.context.set_default_navigation_timeout(20_000)
    problems = []
    for entry in pages_for(role):
        page.set_viewport_size(DESKTOP)
        if callable(entry):
            page.goto(base + "/")  # relative goto from a helper needs a base
            path = entry(_Relative(page, base))
            if path is None:
                continue
        else:
            path = entry
        url = path if path.startswith("http") else base + path
        for size in (PHONE, DESKTOP):
            page.set_viewport_size(size)
            page.goto(url)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            if size is PHONE and width > 390:
                problems.append(f"{path} at 390 px: page is {width} px wide")
            for violation in _axe_serious(page, path):
                problems.append(f"{path} at {size['width']} px: {violation}")
        # and once more in dark mode (the "auto" theme follows the system's preference; so do
        # Django's admin and Swagger UI, in their own CSS)
        page.emulate_media(color_scheme="dark")
        page.goto(url)
        page.wait_for_load_state("networkidle")
        for violation in _axe_serious(page, path):
            problems.append(f"{path} in dark mode: {violation}")
        page.emulate_media(color_scheme="light")
    assert not problems, "\n".join(problems)


class _Relative:
    """The page, with goto taking paths relative to the live server."""

    def __init__(self, page, base):
        self._page, self._base = page, base

    def goto(self, path):
        return self._page.goto(path if path.startswith("http") else self._base + path)

    def __getattr__(self, name):
        return getattr(self._page, name)
