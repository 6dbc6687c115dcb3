"""Fixtures of the reference workflow tests: a small set, workers, ready-made texts, a race harness."""
import uuid

import pytest

from references import services
from annotation.models import Attribute
from tests.concurrency.threads import run_threads
from tests.factories import ContextFactory, CrowdWorkerFactory, domain
from annotation.services import domains_ensure as ensure_domains  # noqa: F401,E402 (re-exported)

GOOD_TEXTS = {
    "belief": "The client believes his drinking is under control and harmless.",
    "desire": "He wants his doctor to stop worrying so he can carry on as before.",
    "intention": "He plans to cut down only on weekdays to keep the doctor quiet.",
    "emotion": "He feels annoyed and a bit embarrassed about being sent here.",
    "knowledge": "He knows the doctor has found raised liver values in his tests.",
    "trust": "He does not trust the counselor yet and keeps his answers short.",
}


def make_contexts(n: int, code: str = "mi", prefix: str | None = None):
    ensure_domains()
    prefix = prefix or code
    return [
        ContextFactory(context_id=f"{prefix}-s{i:04d}-w00", domain=domain(code), session_key=f"{prefix}-s{i:04d}")
        for i in range(n)
    ]


def make_set(*, contexts, per_context=2, name="refs", **kwargs):
    return services.reference_set_create(
        name=name, per_context=per_context, context_ids=[c.context_id for c in contexts], **kwargs
    )


def submit(worker, assignment, texts=None, key=None):
    return services.reference_submit(
        worker=worker, assignment_id=assignment.pk, texts=texts or GOOD_TEXTS, idempotency_key=key or uuid.uuid4(),
        seconds_spent=42,
    )


def race_writers(reference_set, people, texts_for) -> None:
    """Every worker in a thread of its own (own connection), started together: claim and submit
    (`texts_for(worker, assignment)`) until nothing is left; fails with the threads' errors."""

    def writer(worker):
        def work():
            while True:
                a = services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)
                if a is None:
                    return
                submit(worker, a, texts=texts_for(worker, a))

        return work

    run_threads([writer(w) for w in people], timeout=180)


@pytest.fixture
def workers(db):
    return [CrowdWorkerFactory(username=f"crowd{i:02d}") for i in range(1, 5)]


@pytest.fixture
def small_set(db):
    return make_set(contexts=make_contexts(3), per_context=2)


__all__ = ["Attribute", "GOOD_TEXTS", "ensure_domains", "make_contexts", "make_set", "race_writers", "submit"]
