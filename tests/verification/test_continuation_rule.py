"""The context rule across windows (issue 20, parts 1 and 2).

In the authors' pool the true continuation of window w (the answer of every prospective item
of w) opens window w+1's dialogue. A verifier who has read (or will read) a dialogue never
gets a profile-bearing item whose true continuation it shows, in either order and whatever
the batches; exposed judgments do not count towards k when aggregation leaves them out.
"""
import json
import uuid
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.continuations import continuation_text, dialogue_text
from annotation.models import Context, ContinuationReveal, Item, Task
from annotation.authors import dialtom_import
from annotation.services import continuation_reveals_refresh
from dashboard.selectors import staffing_by_batch
from tests.factories import JudgmentFactory, api_for
from verification.models import Judgment, QueueSlot
from verification.queue import batch_staffing
from verification.services import batch_open, batch_queue_sync, item_claim_next

from .factories import ATTRIBUTES, context_with_items, open_batch, verifiers
from .test_context_rule import work_through

pytestmark = pytest.mark.django_db
POOL_SAMPLE = Path(__file__).resolve().parents[1] / "annotation" / "fixtures" / "dialtom-pool"


def session_windows(*, batch, n: int, session: str = "mi-s0001", profile_batch=None, **kwargs):
    """n windows of one session, each opening with the previous window's true continuation
    (as in the authors' pool); returns [(retrospective items, profile-bearing items)] by window."""
    windows = []
    for w in range(n):
        retro, bearing = context_with_items(batch=batch, context_id=f"{session}-w{w:02d}", profile_batch=profile_batch,
                                            window_index=w, **kwargs)
        context = retro[0].context
        if windows:
            before = windows[-1][1][0]
            continuation = before.options["ABCD".index(before.answer)]
            context.turns = [{"speaker": "initiator", "text": continuation}] + context.turns
        context.save()
        windows.append((retro, bearing))
    continuation_reveals_refresh(session_keys=[session])
    return windows


def test_the_sample_pool_reveals_each_windows_continuation_in_the_next_dialogue():
    # Given the authors' pool sample: session 0, windows 0-3, the last without continuations
    report = dialtom_import(directory=POOL_SAMPLE)
    # Then each window's dialogue shows the previous window's true continuation, and nothing else
    pairs = {(d.window_index, t.window_index) for d, t in
             ((r.dialogue, r.continuation_of) for r in ContinuationReveal.objects.select_related("dialogue", "continuation_of"))}
    assert pairs == {(1, 0), (2, 1), (3, 2)} and report["continuation_reveals"] == 3
    # (exact text, role labels and spacing aside)
    w0 = Item.objects.get(item_id="mi-s0000-w00-prospective-belief")
    assert continuation_text(w0.options["ABCD".index(w0.answer)]) in dialogue_text(Context.objects.get(window_index=1).turns)
    # and a second run finds the same
    assert continuation_reveals_refresh() == 3 and ContinuationReveal.objects.count() == 3


def test_a_verifier_who_read_the_next_dialogue_never_gets_the_windows_prospective_item():
    # Given two windows, w1 opening with w0's continuation, and enough verifiers (k=1: 1 + 3 + 1 = 5)
    people = verifiers(5)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    (retro0, bearing0), (retro1, bearing1) = session_windows(batch=batch, n=2)
    assert batch_staffing(batch_ids=[batch.pk])[batch.pk].as_dict() == {
        "verifiers_needed": 5, "verifiers_available": 5, "short": False}
    # When a verifier is handed w1's dialogue first ...
    a = people[0]
    batch_queue_sync(batch=batch)
    QueueSlot.objects.exclude(item__context=retro1[0].context, item__task=Task.RETROSPECTIVE).update(priority=-1)
    first = item_claim_next(verifier=a, batch=batch)
    assert first.item.context_id == retro1[0].context_id and first.item.task == Task.RETROSPECTIVE
    QueueSlot.objects.update(priority=0)
    served = [first] + work_through(a, batch)
    # ... then none of w0's profile-bearing items follows (its continuation stood in w1's dialogue)
    assert not any(c.item.context_id == retro0[0].context_id and c.item.task == Task.PROSPECTIVE for c in served)
    assert not any(c.exposed for c in served)


def test_a_verifier_who_saw_a_windows_prospective_item_never_reads_the_next_dialogue():
    people = verifiers(5)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    (retro0, bearing0), (retro1, bearing1) = session_windows(batch=batch, n=2)
    a = people[0]
    batch_queue_sync(batch=batch)
    QueueSlot.objects.exclude(item=bearing0[0]).update(priority=-1)
    first = item_claim_next(verifier=a, batch=batch)
    assert first.item_id == bearing0[0].pk
    QueueSlot.objects.update(priority=0)
    served = [first] + work_through(a, batch)
    assert not any(c.item.context_id == retro1[0].context_id and c.item.task == Task.RETROSPECTIVE for c in served)
    assert not any(c.exposed for c in served)


def test_the_rule_across_windows_holds_across_batches():
    reader, *others = verifiers(3)
    retro_batch = open_batch(name="mi-b01", n_items=0, overlap=1, verifiers=[reader])
    profile_batch = open_batch(name="mi-b02", n_items=0, overlap=1, verifiers=[reader, *others])
    session_windows(batch=retro_batch, n=2, profile_batch=profile_batch, profile_variants=("hard",))
    # the reader audits both windows' dialogues in one batch ...
    assert len(work_through(reader, retro_batch)) == 12
    # ... and is given no window's prospective item in the other: w0's continuation opens w1,
    # and w1's own items are its dialogue's (the same-context rule)
    assert item_claim_next(verifier=reader, batch=profile_batch) is None
    assert len(work_through(others[0], profile_batch)) == 2  # someone who read neither gets both


def test_staffing_counts_the_readers_of_the_dialogue_that_shows_the_continuation():
    # The authors' shape at k=3: 3 + 6 × 3 = 21 for a session's last window, 21 + 3 for one the next window opens with
    batch = open_batch(n_items=0, overlap=3, verifiers=verifiers(23))
    session_windows(batch=batch, n=2, profile_states=ATTRIBUTES, profile_variants=("hard",))
    assert batch_staffing(batch_ids=[batch.pk])[batch.pk].as_dict() == {
        "verifiers_needed": 24, "verifiers_available": 23, "short": True}


def test_a_short_batch_falls_back_to_least_exposure_and_records_it():
    # Given two windows and one verifier: nothing but exposure once a window is read
    people = verifiers(1)
    batch = open_batch(n_items=0, overlap=1, verifiers=people)
    (retro0, bearing0), (retro1, _) = session_windows(batch=batch, n=2, profile_variants=("hard",))
    served = work_through(people[0], batch)
    assert len(served) == 14  # everything, since the batch is short
    # every prospective item of w0 served after w1's dialogue was read (or w1's dialogue after it) is exposed
    by_item = {c.item_id: c for c in served}
    order = [c.item_id for c in served]
    read_w1 = min(order.index(i.pk) for i in retro1)
    p0 = order.index(bearing0[0].pk)
    later = bearing0[0].pk if p0 > read_w1 else retro1[0].pk
    assert by_item[later].exposed


def test_exposed_judgments_do_not_fill_k_when_aggregation_leaves_them_out(settings):
    # Given one context at k=2 (2 + 2 = 4 verifiers needed) worked first by one verifier alone
    settings.DIALTOM_EXPOSED_JUDGMENTS = "exclude"
    a, *others = verifiers(5)
    batch = open_batch(n_items=0, overlap=2, verifiers=[a])
    retro, bearing = context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=("hard",))
    # a alone (short: 3 needed) takes everything; the prospective item or the dialogue comes exposed
    served = work_through(a, batch)
    exposed_items = {cl.item_id for cl in served if cl.exposed}
    assert exposed_items
    # Then the exposed judgments do not count towards k: those items still want 2 usable judgments ...
    for item_id in exposed_items:
        slot = QueueSlot.objects.get(pk=item_id)
        assert (slot.taken, slot.answered) == (0, 0)
    # ... and the queue serves them again to the others
    batch.pools.first().members.add(*others)
    for person in others:
        work_through(person, batch)
    for item_id in exposed_items:
        usable = Judgment.objects.filter(item_id=item_id, exposed=False).count()
        assert usable == 2, item_id
    # the dashboard showed them as waiting for a usable judgment while they did
    assert staffing_by_batch()[0]["waiting_for_usable"] == 0


def test_exposed_judgments_fill_k_when_aggregation_keeps_them(settings):
    settings.DIALTOM_EXPOSED_JUDGMENTS = "include"
    a = verifiers(1)[0]
    batch = open_batch(n_items=0, overlap=1, verifiers=[a])
    context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=("hard",))
    served = work_through(a, batch)
    assert any(c.exposed for c in served)
    assert all(s.taken == s.answered == 1 for s in QueueSlot.objects.filter(batch=batch))


def test_dashboard_counts_items_waiting_for_a_usable_judgment(settings):
    settings.DIALTOM_EXPOSED_JUDGMENTS = "exclude"
    a = verifiers(1)[0]
    batch = open_batch(n_items=0, overlap=1, verifiers=[a])
    context_with_items(batch=batch, context_id="mi-s0001-w00", profile_variants=("hard",))
    served = work_through(a, batch)
    row = next(r for r in staffing_by_batch() if r["batch"] == batch.name)
    assert row["waiting_for_usable"] == sum(c.exposed for c in served) > 0


def test_the_command_marks_stored_judgments_that_broke_the_rule(settings):
    settings.DIALTOM_EXPOSED_JUDGMENTS = "exclude"
    # Given judgments stored before the rule: one verifier answered w1's dialogue and w0's prospective item
    batch = open_batch(n_items=0, overlap=1, verifiers=[])
    (retro0, bearing0), (retro1, _) = session_windows(batch=batch, n=2, profile_variants=("hard",))
    reader, clean = verifiers(2)
    broke = JudgmentFactory(item=bearing0[0], verifier=reader, batch=batch, label="A")
    JudgmentFactory(item=retro1[0], verifier=reader, batch=batch, label="C")
    JudgmentFactory(item=retro0[0], verifier=clean, batch=batch, label="C")  # same verifier, other window: fine
    batch_queue_sync(batch=batch)
    for judgment in Judgment.objects.all():
        QueueSlot.objects.filter(pk=judgment.item_id).update(taken=1, answered=1)
    # When the command runs
    out = StringIO()
    call_command("judgments_mark_exposed", "--json", stdout=out)
    assert json.loads(out.getvalue().splitlines()[-1]) == {"judgments": 1, "items": 1, "batches": 1, "dry_run": False}
    # Then that judgment is exposed and its item is back in the queue; nothing else changed
    assert list(Judgment.objects.filter(exposed=True)) == [broke]
    slot = QueueSlot.objects.get(pk=bearing0[0].pk)
    assert (slot.taken, slot.answered) == (0, 0)
    # and a second run finds nothing
    out = StringIO()
    call_command("judgments_mark_exposed", "--json", stdout=out)
    assert json.loads(out.getvalue().splitlines()[-1])["judgments"] == 0


def test_the_sample_pool_drained_through_the_api_shows_no_verifier_a_continuation_they_read():
    # Given the authors' pool sample (4 windows of a session), k=3, 30 verifiers
    dialtom_import(directory=POOL_SAMPLE)
    people = verifiers(30)
    batch_name = "dialtom-mi-data-0-50"
    from accounts.models import Pool
    pool, _ = Pool.objects.get_or_create(name="verifiers")
    pool.members.add(*people)
    batch_open(name=batch_name, overlap=3, pools=["verifiers"])
    assert not batch_staffing(batch_ids=[Item.objects.first().batch_id]).popitem()[1].short
    # When every verifier drains the queue through the API
    dialogues_read, options_shown = {}, {}
    for person in people:
        client = api_for(person)
        read, shown = [], []
        while (response := client.get(f"/api/v1/next-item/?batch={batch_name}")).status_code == 200:
            body = response.json()
            if body["task"] == Task.RETROSPECTIVE:
                read.append(dialogue_text(body["context"]))
            else:
                shown.extend(o["text"] for o in body["options"])
            client.post("/api/v1/judgments/", {"claim": body["claim"], "choice": "A", "idempotency_key": str(uuid.uuid4())},
                        format="json")
        dialogues_read[person.pk], options_shown[person.pk] = read, shown
    # Then no verifier was shown, as an option, a continuation they had read in a dialogue
    for pk, shown in options_shown.items():
        for option in shown:
            assert not any(continuation_text(option) in text for text in dialogues_read[pk]), option
    # and every item reached k with usable judgments
    counts = Counter(Judgment.objects.filter(exposed=False).values_list("item_id", flat=True))
    assert sorted(counts.values()) == [3] * Item.objects.filter(is_gold=False).count()
