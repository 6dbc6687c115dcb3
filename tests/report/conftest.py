"""A small study, end to end through the real services, for the study report's tests.

36 synthetic contexts (3 domains) → 252 items in 3 batches of 84 (make_synthetic.py, 22
verifiers, k = 3), plus an Easy and a counterfactual variant of each prospective item (in the
original's batch), judged k = 3 too. Aggregated by one run (Dawid–Skene per batch), released
as v1, then scored: four model runs with accuracies that differ by domain and variant, a human
baseline of two participants, and one similarity run against accepted crowd references.
"""
import csv
import random
import uuid
from dataclasses import dataclass, field

import pytest

from tests.aggregation import synthetic

N_CONTEXTS, BATCH_SIZE = 36, 84
MODELS = {  # name -> accuracy per domain (hard items); easy +0.15, counterfactual NOTA rate
    "model-a": ({"mi": 0.80, "esc": 0.70, "pfg": 0.60}, 0.50),
    "model-b": ({"mi": 0.65, "esc": 0.60, "pfg": 0.50}, 0.30),
    "model-c": ({"mi": 0.55, "esc": 0.50, "pfg": 0.45}, 0.20),
    "model-d": ({"mi": 0.90, "esc": 0.75, "pfg": 0.70}, 0.60),
}


@dataclass
class Study:
    release: object
    batches: dict
    runs: dict = field(default_factory=dict)
    baseline: object = None
    similarity: object = None
    inferences: list = field(default_factory=list)


@pytest.fixture(scope="session")
def study_dir(tmp_path_factory):
    return synthetic.generate(tmp_path_factory.mktemp("report-study"), contexts=N_CONTEXTS, batch_size=BATCH_SIZE)


def _derived_items(rng) -> list:
    """An Easy and a counterfactual variant of every prospective item, in its batch."""
    from annotation.models import Item, Task, Variant

    created = []
    for original in Item.objects.filter(task=Task.PROSPECTIVE, variant=Variant.HARD).order_by("pk"):
        easy_answer = rng.choice("ABCD")
        created.append(Item(
            item_id=f"{original.item_id}-easy", context_id=original.context_id, task=Task.PROSPECTIVE,
            attribute=original.attribute, variant=Variant.EASY, question=original.question,
            options=[f"{original.item_id} easy {n}" for n in range(4)], answer=easy_answer,
            profile=original.profile, batch_id=original.batch_id, parent=original,
        ))
        created.append(Item(
            item_id=f"{original.item_id}-counterfactual", context_id=original.context_id, task=Task.PROSPECTIVE,
            attribute=original.attribute, variant=Variant.COUNTERFACTUAL, question=original.question,
            options=original.options, answer="NOTA", profile={"belief": "something else entirely"},
            batch_id=original.batch_id, parent=original,
        ))
    return Item.objects.bulk_create(created)


def _derived_judgments(path, items, rng) -> None:
    workers = [f"verifier{n:02d}" for n in range(1, 23)]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker", "label"])
        for item in items:
            for worker in rng.sample(workers, 3):
                right = rng.random() < (0.9 if item.variant == "easy" else 0.8)
                wrong = [c for c in ("A", "B", "C", "D") if c != item.answer]
                writer.writerow([item.item_id, worker, item.answer if right else rng.choice(wrong)])


def _predictions(release, rng, domain_rates: dict, nota_rate: float) -> list[str]:
    import json

    from releases.models import ReleaseItem

    lines = []
    entries = ReleaseItem.objects.filter(release=release).select_related("item__context").order_by("item__item_id")
    for entry in entries:
        item = entry.item
        if item.variant == "counterfactual":
            letter = "NOTA" if rng.random() < nota_rate else rng.choice("ABCD")
        else:
            rate = min(0.97, domain_rates[item.context.domain_id] + (0.15 if item.variant == "easy" else 0.0))
            key = entry.label if entry.label in "ABCD" and entry.label else item.answer
            letter = key if rng.random() < rate else rng.choice([c for c in "ABCD" if c != key])
        lines.append(json.dumps({"item_id": item.item_id, "prediction": letter}))
    return lines


def _references(study_contexts, rng):
    from references.models import (
        AssignmentStatus,
        Reference,
        ReferenceAssignment,
        ReferenceSet,
        ReferenceSetContext,
    )
    from tests.factories import CrowdWorkerFactory
    from django.utils import timezone

    words = "the client feels worried about money and wants help with the future plan".split()
    reference_set = ReferenceSet.objects.create(name="refs-study")
    workers = [CrowdWorkerFactory(username=f"crowd-study-{n}") for n in range(3)]
    for position, context in enumerate(study_contexts):
        member = ReferenceSetContext.objects.create(reference_set=reference_set, context=context, position=position)
        for worker in workers:
            assignment = ReferenceAssignment.objects.create(
                member=member, worker=worker, status=AssignmentStatus.ACCEPTED, expires_at=timezone.now(),
                attributes=["belief", "desire", "emotion"],
            )
            Reference.objects.bulk_create(
                Reference(assignment=assignment, attribute=a, text=" ".join(rng.sample(words, 8)))
                for a in ("belief", "desire", "emotion")
            )
    inferences = [
        {"context_id": context.context_id, "attribute": a, "text": " ".join(rng.sample(words, 7))}
        for context in study_contexts for a in ("belief", "desire", "emotion", "trust")
    ]
    return reference_set, inferences


def build_study(tmp_dir, study_dir) -> Study:
    from accounts.models import Pool
    from aggregation.services import aggregation_run_create, aggregation_run_execute, judgments_import
    from annotation.models import Context, Item
    from references.similarity import similarity_run_compute, similarity_run_create
    from releases.services import release_build, release_create
    from scoring.services import (
        baseline_pool_create,
        baseline_run_create,
        baseline_run_score,
        model_run_create,
        model_run_score,
    )
    from tests.factories import UserFactory
    from verification.models import Judgment

    rng = random.Random(11)
    batches = synthetic.load_items(study_dir)
    judgments_import(path=study_dir / "judgments.csv")
    derived = _derived_items(rng)
    _derived_judgments(tmp_dir / "derived.csv", derived, rng)
    judgments_import(path=tmp_dir / "derived.csv")

    run = aggregation_run_create(batch_ids=list(batches.values()), trigger="command", dispatch=False)
    aggregation_run_execute(run_id=run.pk)
    release = release_create(version="v1", build=False, acknowledge_warnings=True)
    release = release_build(release_id=release.pk)
    study = Study(release=release, batches=batches)

    for name, (rates, nota) in MODELS.items():
        created = model_run_create(name=name, model_name=name.upper(), lines=_predictions(release, rng, rates, nota),
                                   source=f"{name}.jsonl", release="v1")
        study.runs[name] = model_run_score(run_id=created.pk)

    participants = [UserFactory(username=f"lay-{n}") for n in range(2)]
    pool = baseline_pool_create(name="lay", usernames=[u.username for u in participants])
    assert Pool.objects.filter(pk=pool.pk).exists()
    audited = list(Item.objects.filter(release_entries__release=release, variant="hard").order_by("item_id")[:90])
    Judgment.objects.bulk_create(
        Judgment(item=item, verifier=user, batch_id=item.batch_id, label=item.answer if rng.random() < 0.7 else "NONE",
                 idempotency_key=uuid.uuid4())
        for item in audited for user in participants
    )
    study.baseline = baseline_run_score(run_id=baseline_run_create(pool=pool, release="v1").pk)

    contexts = list(Context.objects.order_by("context_id")[:6])
    reference_set, study.inferences = _references(contexts, rng)
    similarity = similarity_run_create(name="model-a inferences", records=study.inferences,
                                       reference_set_id=reference_set.pk)
    study.similarity = similarity_run_compute(run_id=similarity.pk)
    return study
