"""The reference workflow moved from `annotation` to `references` without losing a row.

The database is taken back to the last migration before the move (annotation 0004),
filled there through the historical models with what a running studio holds (a set,
its contexts, drafts, submitted / accepted / sent-back / expired assignments, their
submissions and references, a similarity run and its scores, a group holding a
permission on one of the models), then migrated forward. Every row must be there
under the new app, with the same ids and contents, and the permission still held.
"""
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from references.models import (
    Reference,
    ReferenceAssignment,
    ReferenceDraft,
    ReferenceSeat,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSubmission,
    SimilarityRun,
    SimilarityScore,
)

BEFORE = [("annotation", "0004_draft_client_stamp")]
MOVED = [
    "referenceset", "referencesetcontext", "referenceassignment", "referencedraft",
    "referencesubmission", "reference", "similarityrun", "similarityscore",
]
ATTRS = ["belief", "desire", "intention", "emotion", "knowledge", "trust"]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def _fill(old):
    """What a studio in use holds, written through the models as they were at annotation 0004."""
    User = old.get_model("accounts", "User")
    Domain = old.get_model("annotation", "Domain")
    Context = old.get_model("annotation", "Context")
    RSet = old.get_model("annotation", "ReferenceSet")
    Member = old.get_model("annotation", "ReferenceSetContext")
    Assignment = old.get_model("annotation", "ReferenceAssignment")
    Draft = old.get_model("annotation", "ReferenceDraft")
    Submission = old.get_model("annotation", "ReferenceSubmission")
    Ref = old.get_model("annotation", "Reference")
    Run = old.get_model("annotation", "SimilarityRun")
    Score = old.get_model("annotation", "SimilarityScore")
    OldContentType = old.get_model("contenttypes", "ContentType")
    OldPermission = old.get_model("auth", "Permission")
    OldGroup = old.get_model("auth", "Group")

    mi, _ = Domain.objects.get_or_create(
        code="mi", defaults={"name": "MI", "corpus": "AnnoMI", "initiator_role": "counselor", "recipient_role": "client"}
    )
    staff = User.objects.create(username="mig-staff", role="staff", is_staff=True)
    workers = [User.objects.create(username=f"mig-crowd{i}", role="crowd_worker") for i in range(4)]
    contexts = [
        Context.objects.create(
            context_id=f"mi-s9{i:03d}-w00", domain=mi, session_key=f"mi-s9{i:03d}", window_index=0,
            turns=[{"speaker": "recipient", "text": f"turn {i}"}],
        )
        for i in range(2)
    ]
    rset = RSet.objects.create(name="before-the-move", per_context=3, seed=7, created_by=staff)
    members = [Member.objects.create(reference_set=rset, context=c, position=i) for i, c in enumerate(contexts)]
    now = timezone.now()
    texts = {a: f"the client's {a}, written before the move" for a in ATTRS}
    for slot, status in enumerate(["submitted", "accepted", "sent_back"]):
        worker = workers[slot]
        a = Assignment.objects.create(
            member=members[0], worker=worker, slot=slot, status=status, expires_at=now + timedelta(minutes=30),
            seconds_spent=40 + slot, review_reason="say more about trust" if status == "sent_back" else "",
        )
        Submission.objects.create(assignment=a, idempotency_key=uuid.uuid4(), texts=texts, seconds_spent=40 + slot)
        Ref.objects.bulk_create(Ref(assignment=a, attribute=attr, text=f"{worker.username}: {texts[attr]}") for attr in ATTRS)
    Assignment.objects.create(member=members[1], worker=workers[3], slot=0, status="active", expires_at=now + timedelta(minutes=30))
    Assignment.objects.create(member=members[1], worker=workers[0], slot=1, status="expired", expires_at=now)
    Draft.objects.create(member=members[1], worker=workers[3], texts={"belief": "half-typed draft"}, seconds_spent=12,
                         client_ts=1_700_000_000_000, client_id="tab-1")
    Draft.objects.create(member=members[0], worker=workers[0], texts=texts, seconds_spent=40)
    run = Run.objects.create(name="model-x", reference_set=rset, inferences=[{"context_id": "mi-s9000-w00",
                             "attribute": "belief", "text": "x"}], status="done", created_by=staff)
    Score.objects.create(run=run, attribute="all", bleu=12.5, rouge_l=0.25, n_contexts=1, n_references=2)
    # A group holding a permission on a moved model: content types exist once migrations ran.
    ct, _ = OldContentType.objects.get_or_create(app_label="annotation", model="reference")
    perm, _ = OldPermission.objects.get_or_create(content_type=ct, codename="view_reference",
                                                  defaults={"name": "Can view reference"})
    OldGroup.objects.create(name="reference-readers").permissions.add(perm)


def _snapshot(table_prefix: str) -> dict[str, list[dict]]:
    """Every row of every moved table (column → value as text), ordered by primary key."""
    out = {}
    with connection.cursor() as cursor:
        for model in MOVED:
            cursor.execute(f'SELECT * FROM "{table_prefix}_{model}" ORDER BY 1')
            names = [c.name for c in cursor.description]
            out[model] = [dict(zip(names, map(str, row))) for row in cursor.fetchall()]
    return out


def _common(before: dict, after: dict) -> tuple[dict, dict]:
    """Both snapshots on the columns they share (0003 replaced the assignment's slot by seats and lists)."""
    keep = {m: set(before[m][0]) & set(after[m][0]) if before[m] and after[m] else set() for m in before}

    def cut(snap):
        return {m: [{k: v for k, v in row.items() if k in keep[m]} for row in rows] for m, rows in snap.items()}

    return cut(before), cut(after)


@pytest.mark.django_db(transaction=True)
def test_moving_the_reference_tables_keeps_every_row_and_permission():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        # Given a studio at the last state before the move, holding reference work
        old = _migrate(BEFORE)
        assert "annotation_referencedraft" in _tables() and "references_referencedraft" not in _tables()
        _fill(old)
        before = _snapshot("annotation")
        perm_id = Permission.objects.get(content_type__app_label="annotation", codename="view_reference").pk

        # When it migrates forward
        _migrate(latest)

        # Then the tables have the new app's names, with exactly the same rows
        tables = _tables()
        assert not {f"annotation_{m}" for m in MOVED} & tables
        assert {f"references_{m}" for m in MOVED} <= tables
        after = _snapshot("references")
        assert {m: len(rows) for m, rows in after.items()} == {m: len(rows) for m, rows in before.items()}
        old_rows, new_rows = _common(before, after)
        assert new_rows == old_rows
        assert "worker_id" in set(new_rows["referenceassignment"][0]) and "texts" in set(new_rows["referencedraft"][0])
        assert ReferenceSet.objects.get(name="before-the-move").members.count() == 2
        assert ReferenceAssignment.objects.count() == 5
        assert sorted(ReferenceAssignment.objects.values_list("status", flat=True)) == [
            "accepted", "active", "expired", "sent_back", "submitted"
        ]
        assert ReferenceSubmission.objects.count() == 3
        assert Reference.objects.count() == 18
        assert Reference.objects.filter(assignment__status="accepted", attribute="trust").get().text.startswith("mig-crowd1:")
        draft = ReferenceDraft.objects.get(worker__username="mig-crowd3")
        assert (draft.texts, draft.client_ts, draft.client_id) == ({"belief": "half-typed draft"}, 1_700_000_000_000, "tab-1")
        assert SimilarityScore.objects.get(run__name="model-x").bleu == 12.5
        assert SimilarityRun.objects.get().reference_set.name == "before-the-move"
        assert ReferenceSetContext.objects.filter(context__context_id="mi-s9001-w00").get().assignments.count() == 2

        # Work written before the units were (context, attribute) covered all six attributes:
        # each live assignment holds a seat per attribute, at its old slot.
        assert set(map(tuple, ReferenceSetContext.objects.values_list("attributes", flat=True))) == {tuple(ATTRS)}
        assert all(a == ATTRS for a in ReferenceAssignment.objects.values_list("attributes", flat=True))
        seats = {(s.assignment.worker.username, s.attribute): s.slot for s in ReferenceSeat.objects.select_related("assignment__worker")}
        assert len(seats) == 4 * 6  # submitted, accepted, sent back, active; not the expired one
        assert {seats[(f"mig-crowd{i}", "trust")] for i in range(3)} == {0, 1, 2}
        assert seats[("mig-crowd3", "belief")] == 0
        assert not ReferenceSeat.objects.filter(assignment__status="expired").exists()

        # The content types were relabelled, not recreated: the group still holds the same permission
        assert not ContentType.objects.filter(app_label="annotation", model__in=MOVED).exists()
        ct = ContentType.objects.get_for_model(Reference)
        assert ct.app_label == "references"
        perm = Permission.objects.get(pk=perm_id)
        assert (perm.content_type_id, perm.codename) == (ct.pk, "view_reference")
        assert list(Group.objects.get(name="reference-readers").permissions.all()) == [perm]

        # And the constraints still hold on the renamed tables (a second live assignment for a worker is refused)
        from django.db import IntegrityError, transaction

        held = ReferenceAssignment.objects.filter(status="submitted").get()
        with pytest.raises(IntegrityError), transaction.atomic():
            ReferenceAssignment.objects.create(
                member=held.member, worker=held.worker, expires_at=timezone.now() + timedelta(minutes=5)
            )
    finally:
        _migrate(latest)


@pytest.mark.django_db(transaction=True)
def test_the_move_migrates_backwards_too():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        _migrate(BEFORE)
        assert "annotation_reference" in _tables() and "references_reference" not in _tables()
        _migrate(latest)
        assert "references_reference" in _tables() and "annotation_reference" not in _tables()
    finally:
        _migrate(latest)
