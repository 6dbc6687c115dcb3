"""Blindness: the answer key, other verifiers' judgments and aggregates never reach a verifier.

Every verifier-facing page and endpoint is fetched; then the answer key is changed, items
are made gold, other verifiers' judgments and an aggregation run are added, and every GET
is fetched again: the responses must be byte-identical (up to CSRF tokens and the
per-render idempotency keys), and no marker of the hidden data may appear anywhere.
"""
import json
import re
import uuid

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from aggregation.models import AggregationRun, ItemResult, WorkerResult
from annotation.models import Item
from verification.models import Judgment
from verification.services import item_claim_next, judgment_submit

from .factories import open_batch, verifiers

pytestmark = pytest.mark.django_db

MARKERS = ["OTHER-VERIFIER-NOTE", "otherv00", "0.987654", "posterior", "retained", "gold", "is_gold",
           '"answer"', "answer_key", "intended", "data-answer", "mv_label", "ds_posterior"]


def normalise(text: str) -> str:
    text = re.sub(r'(csrfmiddlewaretoken" value=")[^"]+', r"\1", text)
    text = re.sub(r'("X-CSRFToken": ")[^"]+', r"\1", text)
    return re.sub(r'(name="idempotency_key" value=")[^"]+', r"\1", text)


def json_keys(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from json_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from json_keys(inner)


def assert_blind(name, text):
    lowered = text.lower()
    for marker in MARKERS:
        assert marker.lower() not in lowered, f"{name} leaks {marker!r}"
    try:
        body = json.loads(text)
    except ValueError:
        return
    assert "answer" not in set(json_keys(body)) and "label" not in set(json_keys(body)), name


def test_no_verifier_facing_page_or_endpoint_reveals_the_key_or_others_work(verifier):
    others = verifiers(2, prefix="otherv")
    batch = open_batch(n_items=3, n_prospective=1, verifiers=[verifier, *others])
    for other in others:  # two other verifiers have already answered, with comments
        for _ in range(2):
            claim = item_claim_next(verifier=other, batch=batch)
            judgment_submit(verifier=other, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4(),
                            comment="OTHER-VERIFIER-NOTE")
    client = Client()
    client.force_login(verifier)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=verifier).key}")

    # the verifier answers one item through each door, so that edit pages exist too
    first = api.get("/api/v1/next-item/", {"batch": batch.name})
    posted = api.post("/api/v1/judgments/", {"claim": first.json()["claim"], "choice": "B",
                                              "idempotency_key": str(uuid.uuid4())}, format="json")
    mine = Judgment.objects.get(verifier=verifier)
    page = client.get(f"/verify/{batch.name}/").content.decode()
    claim = re.search(r'name="claim" value="([^"]+)"', page).group(1)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
    htmx_post = client.post(f"/verify/{batch.name}/answer/", {"claim": claim, "idempotency_key": key, "action": "submit",
                                                            "choice": "A"}, HTTP_HX_REQUEST="true")
    changed = api.put(f"/api/v1/judgments/{mine.pk}/", {"choice": "C"}, format="json")
    writes = {"POST /api/v1/judgments/": posted, "POST answer (htmx)": htmx_post, "PUT judgment": changed,
              "GET next-item (first)": first}
    for name, response in writes.items():
        assert response.status_code in (200, 201), name
        assert_blind(name, response.content.decode())

    def fetch_gets():
        return {
            "home": client.get("/", follow=True),
            "batches": client.get("/verify/"),
            "audit": client.get(f"/verify/{batch.name}/"),
            "audit (htmx)": client.get(f"/verify/{batch.name}/", HTTP_HX_REQUEST="true"),
            "change page": client.get(f"/verify/judgments/{mine.pk}/"),
            "api next-item": api.get("/api/v1/next-item/", {"batch": batch.name}),
            "api progress": api.get("/api/v1/progress/"),
        }

    before = {name: normalise(r.content.decode()) for name, r in fetch_gets().items()}
    for name, text in before.items():
        assert_blind(name, text)

    # Change everything a verifier must not see ...
    for item in Item.objects.filter(batch=batch):
        item.answer = "D" if item.answer != "D" else "A"
        item.is_gold = True
        item.save(update_fields=["answer", "is_gold"])
    run = AggregationRun.objects.create(status="succeeded")
    for item in Item.objects.filter(batch=batch):
        ItemResult.objects.create(run=run, item=item, batch=batch, label="D", posterior=0.987654, n_judgments=3, retained=True)
    WorkerResult.objects.create(run=run, batch=batch, verifier=verifier, accuracy=0.987654, confusion={}, n_judgments=2)
    # ... and nothing the verifier can fetch changes.
    after = {name: normalise(r.content.decode()) for name, r in fetch_gets().items()}
    assert after == before
    # and the other verifiers' answers never appear on the recent-answers list
    assert "otherv" not in before["audit"]
