from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from references import services
from annotation.models import Attribute
from references.models import AssignmentStatus, ReferenceAssignment, ReferenceSeat, ReferenceSetStatus
from tests.factories import CrowdWorkerFactory

from .conftest import GOOD_TEXTS, make_contexts, make_set, race_writers, submit


def claim(worker, reference_set):
    return services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)


def test_claim_gives_contexts_in_queue_order_and_resumes_the_held_one(small_set, workers):
    first = claim(workers[0], small_set)
    assert first.member.position == 0 and first.status == AssignmentStatus.ACTIVE
    assert first.attributes == list(Attribute.values)  # the default set asks all six of one worker
    assert sorted(first.seats.values_list("attribute", "slot")) == sorted((a, 0) for a in Attribute.values)
    assert claim(workers[0], small_set).pk == first.pk  # asking again resumes, no second claim
    assert ReferenceAssignment.objects.filter(worker=workers[0]).count() == 1


def test_each_context_gets_at_most_per_context_workers_and_never_twice_the_same(small_set, workers):
    seen = {w.pk: set() for w in workers}
    for _round in range(3):
        for w in workers:
            a = claim(w, small_set)
            if a is None:
                continue
            assert a.member_id not in seen[w.pk]
            seen[w.pk].add(a.member_id)
            submit(w, a)
    per_member = {}
    for a in ReferenceAssignment.objects.all():
        per_member[a.member_id] = per_member.get(a.member_id, 0) + 1
    assert per_member == {m.pk: 2 for m in small_set.members.all()}  # 3 contexts × 2 writers
    assert all(claim(w, small_set) is None for w in workers)  # the set is done


def test_an_expired_lease_frees_the_slot_but_keeps_the_draft(small_set, workers):
    one = make_set(contexts=make_contexts(1, "esc"), per_context=1, name="one")
    a = claim(workers[0], one)
    services.reference_draft_save(worker=workers[0], assignment_id=a.pk, texts={"belief": "half-written"})
    assert claim(workers[1], one) is None
    ReferenceAssignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    b = claim(workers[1], one)

    assert b is not None and set(b.seats.values_list("slot", flat=True)) == {0}
    assert ReferenceAssignment.objects.get(pk=a.pk).status == AssignmentStatus.EXPIRED
    assert not ReferenceSeat.objects.filter(assignment=a).exists()  # the lapsed lease gave its seats back
    from references.models import ReferenceDraft

    assert ReferenceDraft.objects.get(worker=workers[0]).texts["belief"] == "half-written"


def test_a_stale_lease_of_the_same_worker_is_renewed_when_nobody_took_it(small_set, workers):
    a = claim(workers[0], small_set)
    ReferenceAssignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    again = claim(workers[0], small_set)
    assert again.pk == a.pk and again.expires_at > timezone.now()


def test_paused_set_and_non_workers_are_refused(small_set, workers, verifier):
    with pytest.raises(services.ReferenceWorkflowError, match="crowd workers"):
        claim(verifier, small_set)
    services.reference_set_status_set(reference_set_id=small_set.pk, status=ReferenceSetStatus.PAUSED)
    with pytest.raises(services.ReferenceWorkflowError, match="paused"):
        claim(workers[0], small_set)


def test_database_refuses_a_second_seat_on_a_slot_or_for_a_worker(small_set, workers):
    a = claim(workers[0], small_set)
    b = ReferenceAssignment.objects.create(member=a.member, worker=workers[1], attributes=["belief"], expires_at=a.expires_at)
    with pytest.raises(IntegrityError), transaction.atomic():  # slot 0 of (context, belief) is a's
        ReferenceSeat.objects.create(member=a.member, attribute="belief", slot=0, assignment=b, worker=workers[1])
    with pytest.raises(IntegrityError), transaction.atomic():  # a worker holds one place of a unit
        ReferenceSeat.objects.create(member=a.member, attribute="belief", slot=1, assignment=a, worker=workers[0])
    with pytest.raises(IntegrityError), transaction.atomic():  # one live assignment per worker and context
        ReferenceAssignment.objects.create(member=a.member, worker=workers[0], expires_at=a.expires_at)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReferenceAssignment.objects.create(member=a.member, worker=workers[2], attributes=["hope"], expires_at=a.expires_at)


def test_units_are_context_and_attribute_with_k_writers_each(workers):
    """One context asking two attributes, k = 3, one attribute per claim: six workers, each on one unit."""
    people = [CrowdWorkerFactory(username=f"unit{i:02d}") for i in range(7)]
    one = make_set(contexts=make_contexts(1, "mi", prefix="unit"), per_context=3, name="units",
                   attributes=["trust", "belief"], attributes_per_worker=1)
    assert one.members.get().attributes == ["belief", "trust"]  # Attribute order, whatever the input order

    got = [claim(w, one) for w in people]

    assert got[6] is None  # 2 units × 3 writers are taken
    assert [a.attributes for a in got[:6]] == [["belief"], ["trust"], ["belief"], ["trust"], ["belief"], ["trust"]]
    seats = sorted(ReferenceSeat.objects.values_list("attribute", "slot"))
    assert seats == [("belief", 0), ("belief", 1), ("belief", 2), ("trust", 0), ("trust", 1), ("trust", 2)]
    # A writer submits their one attribute; the other five attributes are not theirs
    texts = {"belief": "The client believes his drinking is under control."}
    submit(people[0], got[0], texts=texts)
    assert list(got[0].references.values_list("attribute", flat=True)) == ["belief"]
    with pytest.raises(services.ReferenceValidationError) as refused:
        submit(people[1], got[1], texts={"trust": "He trusts the counselor a little more now.", "belief": "Not mine to write."})
    assert set(refused.value.errors) == {"belief"} and "not assigned" in refused.value.errors["belief"]


def test_a_claim_takes_the_attributes_with_the_fewest_writers(workers):
    people = [CrowdWorkerFactory(username=f"few{i:02d}") for i in range(4)]
    one = make_set(contexts=make_contexts(1, "esc", prefix="few"), per_context=2, name="few", attributes_per_worker=4)
    first, second, third, fourth = (claim(w, one) for w in people)
    assert first.attributes == ["belief", "desire", "intention", "emotion"]
    assert second.attributes == ["belief", "desire", "knowledge", "trust"]  # knowledge, trust had no writer yet
    assert third.attributes == ["intention", "emotion", "knowledge", "trust"]  # the last free seats
    assert fourth is None
    counts = {a: ReferenceSeat.objects.filter(attribute=a).count() for a in Attribute.values}
    assert counts == {a: 2 for a in Attribute.values}  # 6 units × k = 2


@pytest.mark.concurrency
@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_fill_every_context_exactly():
    """12 workers in threads, each with its own connection, race on 4 contexts × 3 slots."""
    reference_set = make_set(contexts=make_contexts(4, "pfg"), per_context=3, name="race")
    people = [CrowdWorkerFactory(username=f"racer{i:02d}") for i in range(12)]

    race_writers(reference_set, people, lambda worker, a: GOOD_TEXTS)

    rows = list(ReferenceAssignment.objects.values_list("member_id", "worker_id", "status"))
    assert len(rows) == 12
    assert {s for *_, s in rows} == {AssignmentStatus.SUBMITTED}
    assert len({(m, w) for m, w, _ in rows}) == 12
    counts = {}
    for m, _, _ in rows:
        counts[m] = counts.get(m, 0) + 1
    assert sorted(counts.values()) == [3, 3, 3, 3]


def test_queue_page_lists_sets_and_progress(client, small_set, workers, django_assert_max_num_queries):
    a = claim(workers[0], small_set)
    submit(workers[0], a)
    client.force_login(workers[0])
    with django_assert_max_num_queries(6):
        page = client.get("/annotate/").content.decode()
    assert "refs" in page and "1 submitted of 1 taken" in page and "Next context" in page

    response = client.post(f"/annotate/sets/{small_set.name}/next/")
    assert response.status_code == 302 and response["Location"].startswith("/annotate/work/")


def test_coming_back_after_the_lease_ran_out(small_set, workers):
    """The draft is always stored; the context comes back if a place is free, else the worker is told."""
    from references.models import ReferenceDraft

    one = make_set(contexts=make_contexts(1, "pfg", prefix="late"), per_context=1, name="late")
    a = claim(workers[0], one)
    ReferenceAssignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    ReferenceAssignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.EXPIRED)

    # Nobody took it: saving revives the assignment
    saved = services.reference_draft_save(worker=workers[0], assignment_id=a.pk, texts={"belief": "back again"})
    assert saved.warning == "" and ReferenceAssignment.objects.get(pk=a.pk).status == AssignmentStatus.ACTIVE

    # Someone took it meanwhile: the draft is still stored, with a warning; submitting is refused
    ReferenceAssignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.EXPIRED)
    other = claim(workers[1], one)
    assert other is not None
    saved = services.reference_draft_save(worker=workers[0], assignment_id=a.pk, texts={"belief": "still typing"})
    assert "others have taken every place" in saved.warning
    assert ReferenceDraft.objects.get(worker=workers[0]).texts["belief"] == "still typing"
    with pytest.raises(services.ReferenceWorkflowError, match="others have taken"):
        submit(workers[0], a)
