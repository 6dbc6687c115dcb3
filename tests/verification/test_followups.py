"""One queued batch_progress_check per batch at a time (verification/followups.py)."""
import uuid

import pytest
from django.core.cache import cache

from aggregation.tasks import batch_progress_check
from dialtom_site import jobs
from verification import followups, services

from .factories import open_batch, verifiers


@pytest.mark.django_db
def test_items_filled_while_a_check_waits_queue_no_other(monkeypatch):
    queued = []
    monkeypatch.setattr(jobs, "follow_up_on_commit", lambda task, **kw: queued.append((task, kw)))
    person = verifiers(1)[0]
    batch = open_batch(overlap=1, n_items=3, verifiers=[person])
    cache.delete(followups._key(batch.pk))

    def fill():
        claim = services.item_claim_next(verifier=person, batch=batch)
        services.judgment_submit(verifier=person, claim_id=claim.pk, choice="C", idempotency_key=uuid.uuid4())

    fill()
    fill()  # a check is waiting: this fill rides on it
    assert queued == [("aggregation.tasks.batch_progress_check", {"batch_id": batch.pk})]
    batch_progress_check(batch_id=batch.pk)  # the check starts: the next fill queues the next one
    fill()
    assert len(queued) == 2
    cache.delete(followups._key(batch.pk))
