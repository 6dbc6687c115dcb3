import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.utils import timezone

from references import services
from references.models import AssignmentStatus, ReferenceAssignment, ReferenceSetStatus
from tests.factories import CrowdWorkerFactory

from .conftest import make_contexts, make_set, submit


def claim(worker, reference_set):
    return services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)


def test_claim_gives_contexts_in_queue_order_and_resumes_the_held_one(small_set, workers):
    first = claim(workers[0], small_set)
    assert first.member.position == 0 and first.slot == 0 and first.status == AssignmentStatus.ACTIVE
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

    assert b is not None and b.slot == 0
    assert ReferenceAssignment.objects.get(pk=a.pk).status == AssignmentStatus.EXPIRED
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


def test_database_refuses_a_second_live_slot_or_worker(small_set, workers):
    a = claim(workers[0], small_set)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReferenceAssignment.objects.create(member=a.member, worker=workers[1], slot=a.slot, expires_at=a.expires_at)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReferenceAssignment.objects.create(member=a.member, worker=workers[0], slot=1, expires_at=a.expires_at)


@pytest.mark.concurrency
@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_fill_every_context_exactly():
    """12 workers in threads, each with its own connection, race on 4 contexts × 3 slots."""
    reference_set = make_set(contexts=make_contexts(4, "pfg"), per_context=3, name="race")
    people = [CrowdWorkerFactory(username=f"racer{i:02d}") for i in range(12)]
    barrier = threading.Barrier(len(people))
    errors = []

    def work(worker):
        try:
            barrier.wait(timeout=60)
            while True:
                a = claim(worker, reference_set)
                if a is None:
                    return
                submit(worker, a)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    close_old_connections()

    assert errors == [], errors
    assert not any(t.is_alive() for t in threads)
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
