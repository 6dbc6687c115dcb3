"""Issue 23, part 5: a claim whose every round is contended answers "busy" (503, Retry-After),
never "nothing left" — the first round and the second one alike (after the lapsed leases
went back to the pool), the one that used to fall through to None.

Real contention: another PostgreSQL connection holds the queue slots locked (claims in
flight on other web processes), so the claim statement's SKIP LOCKED passes them over and
its `waiting` check sees them open.
"""
import uuid
from contextlib import contextmanager
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from tests.factories import api_for
from verification import services
from verification.errors import VerificationError
from verification.models import Claim, QueueSlot

from .factories import open_batch, verifiers

pytestmark = [pytest.mark.concurrency, pytest.mark.django_db(transaction=True)]


@contextmanager
def slots_locked_elsewhere(*item_ids):
    """Another connection's open transaction holding these slots (a claim in flight)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as other:
        locked = other.execute(
            "SELECT item_id FROM verification_queueslot WHERE item_id = ANY(%s) FOR NO KEY UPDATE", [list(item_ids)]
        ).fetchall()
        assert len(locked) == len(item_ids)
        try:
            yield
        finally:
            other.rollback()


def test_the_contended_second_round_is_busy_not_nothing_left(monkeypatch):
    first, second = verifiers(2, prefix="busy")
    batch = open_batch(name="busy-b01", overlap=1, n_items=1, verifiers=[first, second])
    lapsed = services.item_claim_next(verifier=first, batch=batch)
    Claim.objects.filter(pk=lapsed.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    item_id = lapsed.item_id
    real_expire = services.claims_expire
    held = []

    def expire_then_someone_claims(**kwargs):
        # the lapsed lease goes back to the pool and, this instant, another process is claiming it
        returned = real_expire(**kwargs)
        held.append(slots_locked_elsewhere(item_id))
        held[-1].__enter__()
        return returned

    monkeypatch.setattr(services, "claims_expire", expire_then_someone_claims)
    try:
        # the first round saw the queue empty (the slot taken by the lapsed claim), the second contended
        with pytest.raises(VerificationError) as busy:
            services.item_claim_next(verifier=second, batch=batch)
    finally:
        for lock in held:
            lock.__exit__(None, None, None)
    assert held, "the first round should have found nothing and returned the lapsed lease"
    assert (busy.value.code, busy.value.status) == ("busy", 503)
    monkeypatch.setattr(services, "claims_expire", real_expire)
    claim = services.item_claim_next(verifier=second, batch=batch)  # the other claim went away: the item is there
    assert claim is not None and claim.item_id == item_id
    assert QueueSlot.objects.get(item_id=item_id).taken == 1


def test_the_api_says_busy_with_retry_after_and_submit_and_next_leaves_next_item_out():
    (person,) = verifiers(1, prefix="busyapi")
    batch = open_batch(name="busy-b02", overlap=1, n_items=2, verifiers=[person])
    api = api_for(person)
    first = api.get("/api/v1/next-item/", {"batch": batch.name}).json()
    in_hand = Claim.objects.get(pk=first["claim"]).item_id
    (other,) = QueueSlot.objects.filter(batch=batch).exclude(item_id=in_hand).values_list("item_id", flat=True)
    with slots_locked_elsewhere(other):
        answer = api.post("/api/v1/judgments/?next=1",
                          {"claim": first["claim"], "choice": "A", "idempotency_key": str(uuid.uuid4())}, format="json")
        assert answer.status_code == 201
        assert "next_item" not in answer.json()  # not null: null would say "none left"
        busy = api.get("/api/v1/next-item/", {"batch": batch.name})
        assert busy.status_code == 503 and busy.json()["code"] == "busy"
        assert int(busy["Retry-After"]) >= 1
    after = api.get("/api/v1/next-item/", {"batch": batch.name})
    assert after.status_code == 200 and Claim.objects.get(pk=after.json()["claim"]).item_id == other
