"""A small known world for the dashboard and release tests, with numbers checked by hand.

batch-a (k=3): 6 items — 4 retrospective (mi: trust, belief, emotion; esc: desire) and
  2 prospective (esc) — each judged by the 3 verifiers (18 judgments). Aggregated by two
  succeeded runs: run 1 retained 3, run 2 (current) retains 4: mi-trust, mi-belief,
  esc-desire, esc-prospective-1. AC1 0.91 [0.85, 0.97], kappa 0.52, alpha 0.55.
batch-b (k=3): 2 items; one judged once (in progress), one untouched (open). Not aggregated.
A failed run 3 on batch-a must change nothing.
Crowd references on mi-s0001-w00: crowd-1 accepted (6 texts), crowd-2 sent back once and
resubmitted (6 texts), crowd-3 no work.
Judgments done 19 of 24 needed.
"""
import uuid
from dataclasses import dataclass, field

from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus, WorkerResult
from annotation.models import Domain
from references.models import (
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSubmission,
)
from tests.factories import BatchFactory, CrowdWorkerFactory, ContextFactory, ItemFactory, JudgmentFactory, ProspectiveItemFactory, UserFactory
from annotation.services import domains_ensure as ensure_domains  # noqa: F401,E402 (re-exported)


@dataclass
class World:
    batch_a: object
    batch_b: object
    verifiers: list
    items: dict = field(default_factory=dict)
    run1: object = None
    run2: object = None


DOMAINS = (
    ("mi", "Motivational interviewing", "AnnoMI", "counselor", "client"),
    ("esc", "Emotional support", "ESConv", "supporter", "seeker"),
    ("pfg", "Persuasion", "PersuasionForGood", "persuader", "persuadee"),
)


def make_world() -> World:
    ensure_domains()
    batch_a = BatchFactory(name="batch-a", overlap=3)
    batch_b = BatchFactory(name="batch-b", overlap=3)
    verifiers = [UserFactory(username=f"verifier-{n}") for n in (1, 2, 3)]
    esc = Domain.objects.get(code="esc")
    w = World(batch_a=batch_a, batch_b=batch_b, verifiers=verifiers)

    mi1 = ContextFactory(context_id="mi-s0001-w00")
    esc1 = ContextFactory(context_id="esc-s0001-w00", domain=esc, turns=[
        {"speaker": "initiator", "text": "How are you feeling today?"},
        {"speaker": "recipient", "text": "A bit lost since I moved."},
    ])
    esc2 = ContextFactory(context_id="esc-s0002-w00", domain=esc)
    specs = [
        ("mi-trust", dict(context=mi1, attribute="trust", answer="C")),
        ("mi-belief", dict(context=mi1, attribute="belief", answer="A")),
        ("mi-emotion", dict(context=mi1, attribute="emotion", answer="B")),
        ("esc-desire", dict(context=esc1, attribute="desire", answer="D", variant="easy")),
    ]
    for key, kwargs in specs:
        w.items[key] = ItemFactory(item_id=key, batch=batch_a, **kwargs)
    w.items["esc-prospective-1"] = ProspectiveItemFactory(item_id="esc-prospective-1", context=esc1, batch=batch_a, answer="A")
    w.items["esc-prospective-2"] = ProspectiveItemFactory(item_id="esc-prospective-2", context=esc2, batch=batch_a, answer="B")
    w.items["b-1"] = ItemFactory(item_id="b-1", context=ContextFactory(context_id="mi-s0003-w00"), batch=batch_b)
    w.items["b-2"] = ItemFactory(item_id="b-2", context=ContextFactory(context_id="mi-s0004-w00"), batch=batch_b)

    # Judgments: verifier-3 always says A (one-letter bias needs >= 20, so not flagged here).
    for key in ("mi-trust", "mi-belief", "mi-emotion", "esc-desire", "esc-prospective-1", "esc-prospective-2"):
        item = w.items[key]
        for n, verifier in enumerate(verifiers):
            label = item.answer if n < 2 else "A"
            if key == "esc-prospective-2" and n == 0:
                label = "NONE"
            JudgmentFactory(item=item, verifier=verifier, label=label, displayed_label=label if label in "ABCD" else "",
                            seconds_spent=10.0 * (n + 1))
    JudgmentFactory(item=w.items["b-1"], verifier=verifiers[0], label="C", seconds_spent=12.0)

    retained_run1 = {"mi-trust", "mi-belief", "esc-desire"}
    retained_run2 = {"mi-trust", "mi-belief", "esc-desire", "esc-prospective-1"}
    for n, retained in ((1, retained_run1), (2, retained_run2)):
        run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED, settings={"threshold": 0.5, "method": "ds"},
                                            versions={"crowd-kit": "1.4.2"}, progress=1.0)
        run.batches.add(batch_a)
        for key in ("mi-trust", "mi-belief", "mi-emotion", "esc-desire", "esc-prospective-1", "esc-prospective-2"):
            item = w.items[key]
            ItemResult.objects.create(run=run, item=item, batch=batch_a, label=item.answer if key in retained else "NONE",
                                      posterior=0.95 if key in retained else 0.4, mv_label=item.answer, n_judgments=3,
                                      retained=key in retained)
        BatchResult.objects.create(
            run=run, batch=batch_a, items=6, judgments=18, retained=len(retained),
            ac1=0.91 if n == 2 else 0.8, ac1_se=0.03, ac1_ci_low=0.85, ac1_ci_high=0.97, kappa=0.52, alpha=0.55,
            by_group={"retrospective:mi": {"items": 3, "retained": 2, "ac1": 0.95, "ac1_ci_low": 0.9, "ac1_ci_high": 1.0,
                                           "kappa": 0.6, "alpha": 0.61},
                      "prospective:esc": {"items": 2, "retained": 1, "ac1": 0.41, "ac1_ci_low": 0.2, "ac1_ci_high": 0.62,
                                          "kappa": 0.3, "alpha": 0.31}},
        )
        for verifier, accuracy in zip(verifiers, (0.9, 0.8, 0.3)):
            WorkerResult.objects.create(run=run, batch=batch_a, verifier=verifier, accuracy=accuracy, n_judgments=6)
        setattr(w, f"run{n}", run)
    make_references(context=mi1)
    failed = AggregationRun.objects.create(status=RunStatus.FAILED, error="boom")
    BatchResult.objects.create(run=failed, batch=batch_a, items=6, judgments=18, retained=0, ac1=0.1)
    from dashboard.summaries import summaries_rebuild  # the factories go around the services that keep them

    summaries_rebuild()
    return w


ATTRIBUTES = ("belief", "desire", "intention", "emotion", "knowledge", "trust")


def make_references(*, context) -> None:
    from django.utils import timezone

    workers = [CrowdWorkerFactory(username=f"crowd-{n}") for n in (1, 2, 3)]
    member = ReferenceSetContext.objects.create(
        reference_set=ReferenceSet.objects.create(name="refs-1"), context=context, position=0
    )
    now = timezone.now()
    for worker, status, reason, submissions in [
        (workers[0], AssignmentStatus.ACCEPTED, "", 1), (workers[1], AssignmentStatus.SUBMITTED, "too short, please expand", 2)
    ]:
        assignment = ReferenceAssignment.objects.create(
            member=member, worker=worker, status=status, expires_at=now, submitted_at=now, review_reason=reason
        )
        for _ in range(submissions):
            ReferenceSubmission.objects.create(assignment=assignment, idempotency_key=uuid.uuid4(), texts={})
        Reference.objects.bulk_create(
            [Reference(assignment=assignment, attribute=a, text=f"{worker.username} thinks the client's {a} is mixed")
             for a in ATTRIBUTES]
        )
