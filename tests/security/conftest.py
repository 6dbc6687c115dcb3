import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import (
    BatchFactory, ContextFactory, CrowdWorkerFactory, ItemFactory, JudgmentFactory, ProspectiveItemFactory,
    StaffFactory, UserFactory,
)

# A string only verifier B's judgment holds: it must never reach anyone but B and staff.
SECRET_COMMENT = "private-comment-of-verifier-b-7f3a"


@pytest.fixture
def world(db):
    """A small studio: a batch with items, claims and judgments of two verifiers, a run."""
    from aggregation.models import AggregationRun, BatchResult, ItemResult, WorkerResult
    from verification.models import Claim

    staff = StaffFactory(username="acl-staff")
    verifier_a = UserFactory(username="acl-verifier-a")
    verifier_b = UserFactory(username="acl-verifier-b")
    crowd = CrowdWorkerFactory(username="acl-crowd")
    batch = BatchFactory(name="acl-b01", overlap=2)
    context = ContextFactory(context_id="mi-s7001-w00")
    item = ItemFactory(context=context, batch=batch)
    prospective = ProspectiveItemFactory(context=context, batch=batch)
    claims, judgments = {}, {}
    for v, label in ((verifier_a, "A"), (verifier_b, "C")):
        claims[v.username] = Claim.objects.create(
            item=item, verifier=v, batch=batch, status="answered", display_order="ABCD",
            expires_at=timezone.now() + timedelta(minutes=20),
        )
        judgments[v.username] = JudgmentFactory(
            item=item, verifier=v, batch=batch, claim=claims[v.username], label=label,
            comment=SECRET_COMMENT if v is verifier_b else "", idempotency_key=uuid.uuid4(),
        )
    run = AggregationRun.objects.create(status="succeeded")
    run.batches.add(batch)
    ItemResult.objects.create(run=run, item=item, batch=batch, label="C", posterior=0.9, n_judgments=2, retained=True)
    WorkerResult.objects.create(run=run, batch=batch, verifier=verifier_b, accuracy=0.8, n_judgments=1)
    BatchResult.objects.create(run=run, batch=batch, items=2, judgments=2, retained=1)
    other_j = judgments["acl-verifier-b"]
    other_claim = claims["acl-verifier-b"]

    def pk_or_key(obj, key):
        return lambda conv: obj.pk if conv == "int" else getattr(obj, key)

    objects = {
        "user": verifier_b,
        # Parameters by name. Ids point at verifier B's things: verifier A must not get them.
        "by_name": {
            "judgment": pk_or_key(other_j, "pk"),
            "claim": other_claim.pk,
            "batch": pk_or_key(batch, "name"),
            "batch_name": batch.name,
            "name": batch.name,
            "item": pk_or_key(item, "item_id"),
            "context": pk_or_key(context, "context_id"),
            "run": run.pk,
            "user": verifier_b.pk,
            "verifier": pk_or_key(verifier_b, "username"),
            "username": verifier_b.username,
            "worker": pk_or_key(verifier_b, "username"),
            "version": "1",
            "token": "not-a-valid-token",
        },
        # `<pk>` after a path segment: /judgments/<pk>/, /batches/<pk>/, ...
        "by_segment": {
            "judgment": pk_or_key(other_j, "pk"),
            "claim": other_claim.pk,
            "batche": pk_or_key(batch, "name"),
            "batch": pk_or_key(batch, "name"),
            "item": pk_or_key(item, "item_id"),
            "context": pk_or_key(context, "context_id"),
            "run": run.pk,
            "aggregation": run.pk,
            "user": verifier_b.pk,
            "people": verifier_b.pk,
            "verifier": verifier_b.pk,
        },
    }
    return {
        "staff": staff, "verifier": verifier_a, "verifier_b": verifier_b, "crowd_worker": crowd, "batch": batch,
        "item": item, "prospective": prospective, "judgment_b": other_j, "claim_b": other_claim, "run": run,
        "objects": objects,
    }
