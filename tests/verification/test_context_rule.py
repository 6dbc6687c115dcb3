"""The context-aware queue (issue 12, break 1): items of one context must not give each other away.

A prospective item's profile is its context's correct retrospective options, and all the
profile-bearing items of a context share one true continuation. So per context a verifier
gets either its retrospective items, in a row, or ONE profile-bearing item: never both,
never two. When a batch needs more verifiers than its pools hold, the queue says so and
falls back to least exposure, recording it on the judgment.
"""
import uuid
from collections import Counter, defaultdict

import pytest
from django.core.management import call_command
from django.db.models import F

from annotation.models import Task
from tests.factories import StaffFactory, api_for
from verification.models import Claim, Judgment, QueueSlot
from verification.queue import batch_staffing
from verification.services import batch_open, item_claim_next, judgment_submit

from .factories import ATTRIBUTES, context_with_items, open_batch, verifiers

pytestmark = pytest.mark.django_db


def work_through(verifier, batch):
    """Answer everything the queue hands this verifier; returns the claims in the order served."""
    served = []
    while (claim := item_claim_next(verifier=verifier, batch=batch)) is not None:
        judgment_submit(verifier=verifier, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
        served.append(claim)
    return served


def assert_context_rule(claims):
    """Per (verifier, context): retrospective items only, or exactly one profile-bearing item."""
    seen = defaultdict(list)
    for claim in claims:
        seen[(claim.verifier_id, claim.item.context_id)].append(claim.item.task)
    for key, tasks in seen.items():
        assert set(tasks) == {Task.RETROSPECTIVE} or tasks == [Task.PROSPECTIVE], (key, tasks)


def test_per_context_a_verifier_gets_its_retrospective_items_or_one_profile_bearing_item():
    # Given three contexts of 6 retrospective + 3 profile-bearing items at k=1: 1 + 3 = 4 verifiers each
    people = verifiers(4)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    for n in range(3):
        context_with_items(batch=batch, context_id=f"mi-s{n:04d}-w00")
    assert batch_staffing(batch_ids=[batch.pk])[batch.pk].as_dict() == {
        "verifiers_needed": 4, "verifiers_available": 4, "short": False}
    # When every verifier works the queue dry
    claims = [claim for person in people for claim in work_through(person, batch)]
    # Then no verifier saw two items of a context that give each other away ...
    assert_context_rule(claims)
    # ... and still every item got its judgment, none of them exposed
    assert Judgment.objects.filter(batch=batch).count() == 27 == len(claims)
    assert not Judgment.objects.filter(exposed=True).exists()


def test_the_rule_holds_across_batches():
    person, *helpers = verifiers(3)
    retro_batch = open_batch(name="mi-b01", n_items=0, overlap=1, verifiers=[person])
    profile_batch = open_batch(name="mi-b02", n_items=0, overlap=1, verifiers=[person, *helpers])
    context_with_items(batch=retro_batch, context_id="mi-s0001-w00", profile_batch=profile_batch)
    assert not batch_staffing(batch_ids=[profile_batch.pk])[profile_batch.pk].short  # 3 needed, 3 in the pool
    # the verifier audits the context's retrospective items in one batch ...
    assert len(work_through(person, retro_batch)) == 6
    # ... and is not shown its profile (the six answers) in another
    assert item_claim_next(verifier=person, batch=profile_batch) is None
    assert len(work_through(helpers[0], profile_batch)) == 1


def test_a_contexts_retrospective_items_come_in_a_row_reserved_by_the_first_claim():
    people = verifiers(4)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    contexts = [context_with_items(batch=batch, context_id=f"mi-s{n:04d}-w00", profile_variants=("hard",)) for n in range(3)]
    retro_pks = {item.pk for retrospective, _ in contexts for item in retrospective}
    a = people[0]
    first = item_claim_next(verifier=a, batch=batch)
    while first.item.task != Task.RETROSPECTIVE:  # a took a profile-bearing item first: answer it
        judgment_submit(verifier=a, claim_id=first.pk, choice="A", idempotency_key=uuid.uuid4())
        first = item_claim_next(verifier=a, batch=batch)
    group = [i.pk for i in first.item.context.items.filter(task=Task.RETROSPECTIVE)]
    # the first claim reserved all six for a: nobody else can take them meanwhile (k=1)
    assert Claim.objects.filter(verifier=a, status="active", item_id__in=group).count() == 6
    assert set(QueueSlot.objects.filter(pk__in=group).values_list("taken", flat=True)) == {1}
    for other in people[1:]:
        while (claim := item_claim_next(verifier=other, batch=batch)) is not None:
            assert claim.item_id not in group
            judgment_submit(verifier=other, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    # and a answers them one after the other, each with its own lease, before anything else
    row = [first]
    judgment_submit(verifier=a, claim_id=first.pk, choice="A", idempotency_key=uuid.uuid4())
    for _ in range(5):
        claim = item_claim_next(verifier=a, batch=batch)
        row.append(claim)
        judgment_submit(verifier=a, claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
    assert sorted(c.item_id for c in row) == sorted(group)
    assert len({c.expires_at for c in row}) == 6
    assert {c.item_id for c in row} <= retro_pks


def test_time_on_a_rows_later_question_counts_from_the_answer_before_it_not_from_the_claim():
    """The row is claimed at once; the 2nd question's seconds must not include the 1st's."""
    from datetime import timedelta

    from django.utils import timezone

    a = verifiers(1)[0]
    batch = open_batch(n_items=0, overlap=1, verifiers=[a])
    context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=())
    first = item_claim_next(verifier=a, batch=batch)
    assert first.item.task == Task.RETROSPECTIVE
    # given: the row was claimed 100 s ago, and the first answer took 90 s of it
    back = timedelta(seconds=100)
    Claim.objects.filter(verifier=a).update(claimed_at=F("claimed_at") - back, expires_at=F("expires_at") - back)
    one = judgment_submit(verifier=a, claim_id=first.pk, choice="A", idempotency_key=uuid.uuid4()).judgment
    Judgment.objects.filter(pk=one.pk).update(created_at=timezone.now() - timedelta(seconds=10))
    # when: the second question is answered now
    second = item_claim_next(verifier=a, batch=batch)
    two = judgment_submit(verifier=a, claim_id=second.pk, choice="A", idempotency_key=uuid.uuid4()).judgment
    # then: the first counts from the claim, the second from the first answer
    assert 99 <= one.seconds_spent < 130
    assert 9 <= two.seconds_spent < 40


def test_a_short_batch_says_how_many_it_needs_then_falls_back_to_least_exposure(settings):
    # Given the authors' shape at k=3 (here 6 retrospective + 3 profile-bearing: 3 + 3 × 3 = 12)
    people = verifiers(2)
    batch = open_batch(n_items=0, overlap=3, verifiers=people)
    retrospective, bearing = context_with_items(batch=batch, context_id="mi-s0001-w00")
    other_retro, _ = context_with_items(batch=batch, context_id="mi-s0002-w00", profile_variants=())
    # When staff open it, the API (and the CLI, below) says it is short
    staffing = batch_staffing(batch_ids=[batch.pk])[batch.pk]
    assert (staffing.needed, staffing.available, staffing.short) == (12, 2, True)
    body = api_for(StaffFactory()).post(f"/api/v1/batches/{batch.name}/status/", {"status": "open"}, format="json").json()
    assert body["verifiers_needed"] == 12 and body["verifiers_available"] == 2 and body["short"] is True
    # Then a verifier first gets what the rule allows, then the least exposed of the rest
    a = people[0]
    served = work_through(a, batch)
    flags = [(c.item.context_id, c.item.task, c.exposed) for c in served]
    assert len(served) == 6 + 3 + 6  # everything a has not judged, since the pools are short
    unexposed = [f for f in flags if not f[2]]
    assert {f[0] for f in unexposed} == {retrospective[0].context_id, other_retro[0].context_id}
    # the one context a saw under the rule first, the other (exposed) items after
    assert [f[2] for f in flags] == sorted(f[2] for f in flags)
    judgments = Judgment.objects.filter(verifier=a)
    assert judgments.filter(exposed=True).count() == len(served) - len(unexposed) > 0
    assert set(judgments.filter(exposed=True).values_list("item__context_id", flat=True)) == {retrospective[0].context_id}


def test_exposed_judgments_are_left_out_of_aggregation_when_the_setting_says_so(settings):
    from aggregation.selectors import batch_judgments_frame

    people = verifiers(1)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    context_with_items(batch=batch, context_id="mi-s0001-w00")
    served = work_through(people[0], batch)
    exposed = {c.item_id for c in served if c.exposed}
    # a short batch (4 needed, 1 in the pool): after one context's share under the rule, the rest is exposed
    assert len(served) == 9 and len(exposed) in (3, 8)
    settings.DIALTOM_EXPOSED_JUDGMENTS = "exclude"
    assert set(batch_judgments_frame(batch_id=batch.pk)["task"]) == {c.item_id for c in served} - exposed
    settings.DIALTOM_EXPOSED_JUDGMENTS = "include"
    assert set(batch_judgments_frame(batch_id=batch.pk)["task"]) == {c.item_id for c in served}


def test_the_authors_shape_at_k3_needs_21_verifiers_and_the_team_of_22_is_enough():
    team = verifiers(22)
    batch = open_batch(n_items=0, overlap=3, verifiers=team)
    # six retrospective items and six prospective ones (one per state) a context
    context_with_items(batch=batch, context_id="mi-s0001-w00", profile_states=ATTRIBUTES, profile_variants=("hard",))
    assert batch_staffing(batch_ids=[batch.pk])[batch.pk].as_dict() == {
        "verifiers_needed": 21, "verifiers_available": 22, "short": False}
    claims = [claim for person in team for claim in work_through(person, batch)]
    assert_context_rule(claims)
    assert sorted(Counter(c.item_id for c in claims).values()) == [3] * 12
    assert len({c.verifier_id for c in claims}) == 21 and not any(c.exposed for c in claims)
    batch.pools.first().members.remove(team[0], team[1])
    assert batch_staffing(batch_ids=[batch.pk])[batch.pk].short  # 20 people for 21 places


def test_batch_open_command_reports_what_the_batch_needs(capsys):
    people = verifiers(2)
    batch = open_batch(n_items=0, overlap=3, verifiers=people)
    context_with_items(batch=batch, context_id="mi-s0001-w00")
    call_command("batch_open", batch.name)
    out = capsys.readouterr().out
    assert "needs 12 verifiers" in out and "its pools hold 2" in out
    batch_open(name=batch.name, overlap=1)
    call_command("batch_open", batch.name)
    assert "needs 4 verifiers" in capsys.readouterr().out
