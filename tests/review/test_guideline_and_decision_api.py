"""Issue 21 item 7: staff edit a batch's guideline in the app (Markdown, preview, an example
per attribute) and through the API (GET / PUT); an item's decisions have an API (POST a keep
or drop through the review service, GET its history); both are in the OpenAPI schema."""
import pytest
from django.urls import reverse

from review.models import Adjudication, Flag, Guideline
from tests.factories import BatchFactory, ItemFactory, api_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(db):
    return BatchFactory(name="mi-b01")


def test_staff_preview_then_save_a_guideline_in_the_app(batch, staff, client):
    client.force_login(staff)
    url = reverse("review:guideline-edit", args=["mi-b01"])
    assert client.get(url).status_code == 200

    form = {"text": "Pick **one** option.\n\n<script>alert(1)</script>", "example-trust": "Trust: *leans on*",
            "example-belief": "", "action": "preview"}
    preview = client.post(url, form)
    html = preview.content.decode()
    assert preview.status_code == 200 and "<strong>one</strong>" in html and "<em>leans on</em>" in html
    assert "<script>alert(1)</script>" not in html
    assert not Guideline.objects.exists()  # a preview saves nothing

    saved = client.post(url, {**form, "action": "save"})
    assert saved.status_code == 302
    guideline = Guideline.objects.get(batch=batch)
    assert guideline.updated_by == staff and guideline.text.startswith("Pick **one**")
    assert [(e.topic, e.text) for e in guideline.examples.all()] == [("trust", "Trust: *leans on*")]

    empty = client.post(url, {"text": "  ", "action": "save"})
    assert empty.status_code == 400 and "a guideline needs some text" in empty.content.decode()


def test_verifiers_cannot_open_the_editor(batch, verifier, client):
    client.force_login(verifier)
    assert client.get(reverse("review:guideline-edit", args=["mi-b01"])).status_code == 403


def test_guideline_api_get_and_put(batch, staff, verifier):
    api = api_for(staff)
    url = reverse("api-guideline", args=["mi-b01"])
    assert api.get(url).status_code == 404  # no guideline yet
    put = api.put(url, {"text": "Read the whole dialogue.", "examples": {"trust": "An example", "emotion": ""}}, format="json")
    assert put.status_code == 200, put.content
    assert put.json()["examples"] == {"trust": "An example"} and put.json()["updated_by"] == staff.username
    assert api.get(url).json()["text"] == "Read the whole dialogue."
    bad = api.put(url, {"text": "x", "examples": {"nonsense": "y"}}, format="json")
    assert bad.status_code == 400 and "examples" in bad.json()
    assert api_for(verifier).get(url).status_code == 403
    assert api.get(reverse("api-guideline", args=["nope"])).status_code == 404


def test_decision_api_records_through_the_review_service_and_lists_history(staff, verifier):
    item = ItemFactory(item_id="mi-s0001-w00-trust")
    Flag.objects.create(item=item, flagged_by=verifier, reason="options_overlap")
    api = api_for(staff)
    url = reverse("api-item-decisions", args=[item.item_id])
    first = api.post(url, {"decision": "drop", "reason": "B and C overlap"}, format="json")
    assert first.status_code == 201 and first.json()["decision"] == "drop"
    assert Flag.objects.get(item=item).status == "resolved"  # the service's rule, not the door's
    api.post(url, {"decision": "keep", "reason": "fixed upstream"}, format="json")
    history = api.get(url).json()
    assert [d["decision"] for d in history] == ["keep", "drop"] and history[0]["decided_by"] == staff.username

    assert api.post(url, {"decision": "maybe", "reason": "x"}, format="json").status_code == 400
    no_reason = api.post(url, {"decision": "keep", "reason": " "}, format="json")
    assert no_reason.status_code == 400
    gold = ItemFactory(item_id="gold-1", is_gold=True)
    refused = api.post(reverse("api-item-decisions", args=[gold.item_id]), {"decision": "keep", "reason": "r"}, format="json")
    assert refused.status_code == 400 and "gold" in str(refused.json())
    assert api.post(reverse("api-item-decisions", args=["nope"]), {"decision": "keep", "reason": "r"}, format="json").status_code == 404
    assert api_for(verifier).get(url).status_code == 403
    assert Adjudication.objects.count() == 2


def test_the_schema_lists_guidelines_and_decisions(client, staff):
    client.force_login(staff)  # the schema is for signed-in users
    schema = client.get("/api/schema/").content.decode()
    assert "/api/v1/batches/{name}/guideline/" in schema and "/api/v1/items/{item_id}/decisions/" in schema
    assert "/api/v1/models/{name}/publish/" in schema
