"""The context rule under races: threads with their own PostgreSQL connections.

- 24 verifiers on contexts shaped like the authors' (6 retrospective + profile-bearing
  items) at k=3: every item ends at exactly k, no verifier breaks the context rule, and
  each verifier's retrospective items of a context were claimed in one go (in a row).
- One verifier in two tabs, each on another batch holding a profile-bearing item of the
  same context: the two claims race, and the verifier still gets only one of them.
"""
import uuid
from collections import Counter, defaultdict

import pytest

from annotation.models import Item, Task
from tests.factories import ContextFactory, ProspectiveItemFactory
from verification.models import Claim, ClaimStatus, Judgment, QueueSlot
from verification.services import item_claim_next, judgment_submit

from ..verification.factories import context_with_items, open_batch, verifiers
from .threads import run_threads

pytestmark = [pytest.mark.concurrency, pytest.mark.django_db(transaction=True)]


def test_racing_verifiers_keep_exactly_k_the_context_rule_and_the_rows():
    k, people = 3, verifiers(24)
    batch = open_batch(name="ctx-b01", overlap=k, n_items=0, verifiers=people)
    for n in range(4):  # 4 contexts × (6 retrospective + 3 profile-bearing): 3 + 3 × 3 = 12 verifiers each
        context_with_items(batch=batch, context_id=f"ctx-s{n:04d}-w00")
    def work(person):
        def run():
            while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
                judgment_submit(verifier=person, claim_id=claim.pk, choice="B", idempotency_key=uuid.uuid4())
        return run

    run_threads([work(p) for p in people])

    per_item = Counter(Judgment.objects.filter(batch=batch).values_list("item_id", flat=True))
    assert len(per_item) == 36 and set(per_item.values()) == {k}  # none lost, none past k
    assert set(QueueSlot.objects.filter(batch=batch).values_list("taken", flat=True)) == {k}
    assert not Judgment.objects.filter(exposed=True).exists()
    claims = list(Claim.objects.filter(batch=batch).select_related("item").order_by("verifier_id", "claimed_at"))
    assert all(c.status == ClaimStatus.ANSWERED for c in claims)
    tasks = defaultdict(list)
    for claim in claims:
        tasks[(claim.verifier_id, claim.item.context_id)].append(claim.item.task)
    for key, kinds in tasks.items():
        assert set(kinds) == {Task.RETROSPECTIVE} or kinds == [Task.PROSPECTIVE], (key, kinds)
    # in a row: between a verifier's first and last retrospective claim of a context, no other claim
    by_verifier = defaultdict(list)
    for claim in claims:
        by_verifier[claim.verifier_id].append((claim.item.context_id, claim.item.task))
    for sequence in by_verifier.values():
        retro_contexts = [ctx for ctx, task in sequence if task == Task.RETROSPECTIVE]
        runs = [ctx for n, ctx in enumerate(retro_contexts) if n == 0 or retro_contexts[n - 1] != ctx]
        assert len(runs) == len(set(runs)), sequence
    assert len({c.verifier_id for c in claims}) >= 12  # each context really went to 12 different people


def test_two_tabs_of_one_verifier_never_get_two_profile_bearing_items_of_a_context():
    person, *others = verifiers(4)
    batches = [open_batch(name=f"tab-b0{n}", n_items=0, overlap=1, verifiers=[person, *others]) for n in range(2)]
    for n in range(6):  # each batch holds one profile-bearing item of each of six contexts
        context = ContextFactory(context_id=f"tab-s{n:04d}-w00")
        ProspectiveItemFactory(batch=batches[0], context=context, variant="hard")
        ProspectiveItemFactory(batch=batches[1], context=context, variant="easy")
    served = []

    def tab(batch):
        def run():
            while (claim := item_claim_next(verifier=person, batch=batch)) is not None:
                served.append(claim.item_id)
                judgment_submit(verifier=person, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
        return run

    run_threads([tab(b) for b in batches])

    contexts = Counter(Item.objects.filter(pk__in=served).values_list("context_id", flat=True))
    assert len(served) == 6 and set(contexts.values()) == {1}  # one item of each of the six contexts
    assert not Judgment.objects.filter(exposed=True).exists()
