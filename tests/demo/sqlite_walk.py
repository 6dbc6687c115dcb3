"""Walk the demo as its users would, on whatever database the settings name (run by
tests/demo/test_demo_on_sqlite.py on the demo's SQLite, after `load_demo`):

- staff open every page and section they have: the dashboard and each of its fragments and
  CSV tables, the item list in every sort (both directions, a next page, a combined filter),
  an item, the verifiers and their pairs, the flags, the releases, the study report, the API;
- a verifier answers through the form and through the API (submit-and-next);
- the summaries kept as that happened equal the ones `summaries_rebuild` recounts.

Prints one JSON line: {"failures": [...], "steps": n, "answered": n}. Exits 1 when anything failed.
"""
import json
import re
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import django  # noqa: E402

django.setup()

from django.test.utils import setup_test_environment  # noqa: E402

setup_test_environment()  # the test client's host (testserver) is allowed

from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from accounts.models import User  # noqa: E402
from accounts.services import api_token_for  # noqa: E402
from annotation.models import Item  # noqa: E402
from dashboard.summaries import summaries_rebuild  # noqa: E402
from dashboard.views import LAZY_SECTIONS, SECTIONS, csv_tables  # noqa: E402
from releases.models import Release  # noqa: E402
from review.forms import ITEM_SORTS  # noqa: E402
from tests.dashboard.test_summaries import snapshot  # noqa: E402
from verification.models import Claim  # noqa: E402

failures: list[str] = []
steps = 0
answered = 0


def get(client: Client, url: str, **headers) -> str:
    global steps
    steps += 1
    try:
        response = client.get(url, **headers)
    except Exception as exc:  # noqa: BLE001 - the walk reports every failure, not the first
        failures.append(f"GET {url}: {type(exc).__name__}: {exc}")
        return ""
    if response.status_code != 200:
        failures.append(f"GET {url}: HTTP {response.status_code}")
        return ""
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def post(client: Client, url: str, data, **kwargs):
    global steps
    steps += 1
    try:
        response = client.post(url, data, **kwargs)
    except Exception as exc:  # noqa: BLE001
        failures.append(f"POST {url}: {type(exc).__name__}: {exc}")
        return None
    if response.status_code not in (200, 201, 302):
        failures.append(f"POST {url}: HTTP {response.status_code}: {response.content[:300]!r}")
        return None
    return response


def staff_pages() -> None:
    staff = Client()
    staff.force_login(User.objects.get(username="admin"))
    get(staff, reverse("dashboard:index"))
    for name in SECTIONS + LAZY_SECTIONS:
        get(staff, reverse("dashboard:fragment", args=[name]))
        get(staff, reverse("dashboard:fragment", args=[name]) + "?page=2")
    for name in csv_tables():
        get(staff, reverse("dashboard:csv", args=[name]))

    items = reverse("review:items")
    for sort in ITEM_SORTS:
        for direction in ("asc", "desc"):
            page = get(staff, f"{items}?sort={sort}&dir={direction}&size=5")
            after = re.search(r'href="\?([^"]*after=[^"]*)"', page)
            if after:
                get(staff, items + "?" + after.group(1).replace("&amp;", "&"))
    get(staff, f"{items}?domain=mi&task=retrospective&retained=yes&posterior_min=0.2&disagrees=no&flagged=no")
    get(staff, f"{items}?q=knowledge")
    get(staff, reverse("review:item", args=[Item.objects.filter(is_gold=False).order_by("item_id")[0].item_id]))
    get(staff, reverse("review:verifiers"))
    get(staff, reverse("review:verifier-pairs-csv"))
    get(staff, reverse("review:flags"))
    get(staff, "/releases/")
    for release in Release.objects.all():
        get(staff, f"/releases/{release.version}/")
        get(staff, f"/api/v1/releases/{release.version}/items")
    get(staff, "/report/")
    for url in ("/api/v1/items/?sort=posterior", "/api/v1/verifier-pairs/",
                "/api/v1/gold-accuracy/", "/api/v1/aggregation-runs/", "/api/v1/study-report/"):
        get(staff, url)


def verifier_answers() -> None:
    person = User.objects.get(username="verifier")
    global answered
    browser = Client()
    browser.force_login(person)
    api = Client(HTTP_AUTHORIZATION=f"Token {api_token_for(user=person)}")
    batches = get(browser, reverse("verification:batches"))
    names = re.findall(r'href="/verify/([a-z0-9-]+)/"', batches)
    for name in names:
        page = get(browser, reverse("verification:audit", args=[name]))
        claim = Claim.objects.filter(verifier=person, batch__name=name, status="active").first()
        if claim is None or 'name="choice"' not in page:
            continue
        key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
        if post(browser, reverse("verification:answer", args=[name]),
                {"claim": claim.pk, "idempotency_key": key, "action": "submit", "choice": "A"}):
            answered += 1
        item = api.get("/api/v1/next-item/", {"batch": name})
        if item.status_code == 200:
            body = {"claim": item.json()["claim"], "choice": "B", "idempotency_key": str(uuid.uuid4())}
            if post(api, "/api/v1/judgments/?next=1", body, content_type="application/json"):
                answered += 1
        if answered >= 4:
            break
    get(api, "/api/v1/progress/")
    if answered < 2:
        failures.append(f"the verifier answered {answered} items (form and API), expected at least 2")


def summaries_equal() -> None:
    kept = snapshot()
    summaries_rebuild()
    rebuilt = snapshot()
    for name in kept:
        if kept[name] != rebuilt[name]:
            failures.append(f"summary {name}: kept {len(kept[name])} rows differ from the rebuilt {len(rebuilt[name])}")


if __name__ == "__main__":
    staff_pages()
    verifier_answers()
    summaries_equal()
    print(json.dumps({"failures": failures, "steps": steps, "answered": answered}))
    sys.exit(1 if failures else 0)
