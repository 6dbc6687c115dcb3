"""Arrival under concurrency: one platform id is one account per study, however many of its
requests arrive at once (two tabs, a double click, a retry); different ids get theirs."""
import pytest

from accounts.models import User
from studies import services
from studies.models import Entry, Participant
from tests.verification.factories import open_batch

from .threads import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_simultaneous_arrivals_of_one_id_make_one_account():
    batch = open_batch(name="race-b01", n_items=2, pool="race-unused")
    study = services.study_create(name="race", platform="prolific", batches=[batch.name], quota=1,
                                  completion_code="RACE0001", pay_per_item="0.10")
    pid = "5f1a2b3c4d5e6f7a8b9c0d1e"
    created = []

    def arrive():
        created.append(services.participant_arrive(study=study, participant_id=pid, ip="10.0.0.1").created)

    run_threads([arrive for _ in range(8)])
    assert Participant.objects.filter(study=study).count() == 1
    assert User.objects.filter(username__startswith="study~").count() == 1
    assert created.count(True) == 1
    assert Entry.objects.filter(study=study).count() == 8


def test_simultaneous_arrivals_of_different_ids_each_get_their_own():
    batch = open_batch(name="race-b02", n_items=2, pool="race-unused")
    study = services.study_create(name="race2", platform="mturk", batches=[batch.name], quota=1,
                                  completion_code="RACE0002", pay_per_item="0.10")
    ids = [f"A{n:013d}" for n in range(8)]
    run_threads([lambda i=i: services.participant_arrive(study=study, participant_id=i) for i in ids * 2])
    assert sorted(Participant.objects.filter(study=study).values_list("participant_id", flat=True)) == ids
    assert User.objects.filter(username__startswith="study~").count() == 8
