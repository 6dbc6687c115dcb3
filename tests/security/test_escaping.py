"""HTML in any text field is shown escaped, everywhere; every form carries its CSRF token.

Every text a person or an import can put in the database — dialogue turns, questions,
options, profiles, comments, names — is set to markup, then every page the resolver
knows is fetched as each role (the same walk as the access matrix, so new pages are
covered when merged). No HTML response may contain the markup raw; the escaped form
must show up (proof the text was rendered at all, so the check is not vacuous).

The same crawl checks that every <form method=post> (or hx-post) on every page has the
CSRF token in it, or gets it from <body hx-headers> (htmx).
"""
import re

import pytest
from django.test import Client

from .urlwalk import all_urls

PAYLOADS = ['<script>alert("xss-1")</script>', '"><img src=x onerror=alert("xss-2")>', "<b onmouseover=alert('xss-3')>b</b>"]
ESCAPED = "&lt;script&gt;alert(&quot;xss-1&quot;)&lt;/script&gt;"


def poison(world):
    """Markup into every free-text field of the fixture."""
    a, b, c = PAYLOADS
    item, prospective = world["item"], world["prospective"]
    context = item.context
    context.turns = [{"speaker": "initiator", "text": f"Hello {a}"}, {"speaker": "recipient", "text": f"Hi {b}"}]
    context.save(update_fields=["turns"])
    for it in (item, prospective):
        it.question = f"Question {a}"
        it.options = [f"{p} option {n}" for n, p in enumerate((a, b, c, a + "!"))]
        it.profile = {k: f"{k} {a}" for k in ("belief", "desire", "intention", "emotion", "knowledge", "trust")} if it.task == "prospective" else {}
        it.metadata = {"note": a}
        it.save()
    for j in world["judgment_b"].item.judgments.all():
        j.comment = f"Comment {a} {b}"
        j.save(update_fields=["comment"])
    for key in ("verifier", "verifier_b", "crowd_worker", "staff"):  # names shown in headers and lists
        world[key].first_name, world[key].last_name = a, c
        world[key].save(update_fields=["first_name", "last_name"])
    return world


@pytest.mark.parametrize("role", ["staff", "verifier", "crowd_worker", "anonymous"])
def test_markup_in_text_fields_is_escaped_on_every_page(role, world):
    poison(world)
    if role == "verifier":  # open the batch to verifier A, so the audit form shows a poisoned item
        from accounts.models import Pool
        from verification.services import batch_open

        Pool.objects.get_or_create(name="acl-pool")[0].members.add(world["verifier"])
        batch_open(name=world["batch"].name, overlap=None, pools=["acl-pool"], lease_minutes=None, gold_rate=None)
    if role == "staff":  # and with every admin permission, so the admin pages render the data too
        world["staff"].is_superuser = True
        world["staff"].save(update_fields=["is_superuser"])
    found, skipped = all_urls(world["objects"])
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(world[role])
    raw_hits, escaped_pages, tokenless_forms, html_pages = [], [], [], 0
    for url in found:
        if "logout" in url.path:
            continue
        response = client.get(url.path)
        if response.status_code != 200 or getattr(response, "streaming", False):
            continue
        content_type = response.get("Content-Type", "")
        body = response.content.decode("utf-8", "replace")
        if "html" in content_type:
            html_pages += 1
            for payload in PAYLOADS:
                if payload in body:
                    raw_hits.append(f"{url.path}: {payload}")
            if ESCAPED in body:
                escaped_pages.append(url.path)
            for form in re.findall(r"<form\b[^>]*>.*?</form>", body, flags=re.S | re.I):
                head = form[: form.index(">")]
                htmx = re.search(r"hx-(post|put|patch|delete)", form, re.I)
                plain = re.search(r"method=[\"']?post", head, re.I) and not htmx
                if (plain and "csrfmiddlewaretoken" not in form) or (
                    htmx and "csrfmiddlewaretoken" not in form and "X-CSRFToken" not in body
                ):
                    tokenless_forms.append(f"{url.path}: {head[:80]}")
        else:
            # JSON may carry the text raw, but must be labelled as JSON (browsers then never run it).
            assert not body.lstrip().startswith("<") or "html" in content_type, url.path
    print(f"\n{role}: {html_pages} HTML pages, escaped text on {len(escaped_pages)}: {escaped_pages[:8]}")
    assert not raw_hits, "unescaped markup:\n" + "\n".join(raw_hits)
    assert not tokenless_forms, "POST forms without a CSRF token:\n" + "\n".join(tokenless_forms)
    if role in ("staff", "verifier"):
        assert escaped_pages, "the markup was never rendered: the check would prove nothing"
