"""(context, attribute) units: what a worker assigned one or several attributes sees and may write,
on the pages, over the API and in the review; k writers per unit under a race; scores per unit."""
import uuid

import pytest

from references import selectors, services, similarity
from references.models import AssignmentStatus, Reference, ReferenceAssignment, ReferenceDraft, ReferenceSeat
from tests.factories import CrowdWorkerFactory, api_for

from .conftest import GOOD_TEXTS, make_contexts, make_set, race_writers

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_units(db):
    """One context asking belief and trust, 3 writers each, one attribute per claim."""
    return make_set(contexts=make_contexts(1, "mi", prefix="two"), per_context=3, name="two",
                    attributes=["belief", "trust"], attributes_per_worker=1)


def claim(worker, reference_set):
    return services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)


def test_the_form_shows_only_the_assigned_attribute_and_submits_it(client, two_units, workers):
    a = claim(workers[0], two_units)
    assert a.attributes == ["belief"]
    client.force_login(workers[0])

    page = client.get(f"/annotate/work/{a.pk}/").content.decode()

    assert 'name="belief"' in page and 'name="trust"' not in page and 'name="desire"' not in page
    assert "0 of 1 inferences written" in page
    assert "One inference about the client's belief" in page
    # A field posted for an attribute that is not hers is not stored anywhere
    posted = {"belief": GOOD_TEXTS["belief"], "trust": GOOD_TEXTS["trust"], "idempotency_key": str(uuid.uuid4()),
              "then": "queue"}
    assert client.post(f"/annotate/work/{a.pk}/", posted).status_code == 302
    assert list(Reference.objects.filter(assignment=a).values_list("attribute", "text")) == [("belief", GOOD_TEXTS["belief"])]
    assert ReferenceDraft.objects.get(worker=workers[0]).texts == {"belief": GOOD_TEXTS["belief"]}


def test_autosave_keeps_only_the_assigned_attributes(client, two_units, workers):
    a = claim(workers[0], two_units)
    client.force_login(workers[0])
    response = client.post(f"/annotate/work/{a.pk}/autosave/", {"belief": "typed so far", "trust": "not mine"})
    assert response.status_code == 200 and "0 of 1 inferences written" in response.content.decode()
    assert ReferenceDraft.objects.get(worker=workers[0]).texts == {"belief": "typed so far"}


def test_the_api_shows_the_assigned_attributes_and_refuses_others(two_units, workers):
    api = api_for(workers[1])
    api_for(workers[0]).post("/api/v1/reference-sets/two/next/")  # belief goes first
    body = api.post("/api/v1/reference-sets/two/next/").json()

    assert [f["name"] for f in body["attributes"]] == ["trust"]
    assert body["texts"] == {"trust": ""} and body["progress"] == {"filled": 0, "total": 1, "percent": 0}
    refused = api.post(f"/api/v1/reference-assignments/{body['id']}/submit/", {
        "texts": {"trust": GOOD_TEXTS["trust"], "belief": GOOD_TEXTS["belief"]}, "idempotency_key": str(uuid.uuid4()),
    }, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"texts": {"belief": "Belief: not assigned to you for this context."}}
    assert not Reference.objects.exists()
    done = api.post(f"/api/v1/reference-assignments/{body['id']}/submit/", {
        "texts": {"trust": GOOD_TEXTS["trust"]}, "idempotency_key": str(uuid.uuid4()),
    }, format="json")
    assert done.status_code == 201, done.content
    assert list(Reference.objects.values_list("attribute", flat=True)) == ["trust"]


def test_review_puts_each_unit_on_its_row_and_marks_what_was_not_assigned(client, staff, two_units, workers):
    for worker, attribute in zip(workers[:2], ["belief", "trust"]):
        a = claim(worker, two_units)
        services.reference_submit(worker=worker, assignment_id=a.pk, texts={attribute: GOOD_TEXTS[attribute]},
                                  idempotency_key=uuid.uuid4())
    member = two_units.members.get()
    review = selectors.reference_review_for(member=member)
    assert [r["name"] for r in review["rows"]] == ["belief", "trust"]
    assert [r["texts"] for r in review["rows"]] == [[GOOD_TEXTS["belief"], None], [None, GOOD_TEXTS["trust"]]]
    client.force_login(staff)
    page = client.get(f"/annotate/references/two/review/{member.pk}/").content.decode()
    assert page.count("not assigned") == 2 and "Desire" not in page


def test_similarity_is_against_the_references_of_each_context_and_attribute(two_units, workers, staff):
    written = [("belief", "he believes the drinking is fine"), ("trust", "he trusts the counselor"),
               ("belief", "he thinks the drinking is harmless")]
    for worker, (attribute, text) in zip(workers, written):
        a = claim(worker, two_units)
        assert a.attributes == [attribute]  # claims alternate: the unit with fewer writers first
        services.reference_submit(worker=worker, assignment_id=a.pk, texts={attribute: text}, idempotency_key=uuid.uuid4())
        services.reference_accept(reviewer=staff, assignment_id=a.pk)
    context_id = two_units.members.get().context.context_id
    by_unit = selectors.accepted_references_by_context(reference_set_id=two_units.pk)
    assert sorted(by_unit) == [(context_id, "belief"), (context_id, "trust")]
    assert sum(len(v) for v in by_unit.values()) == 3
    rows = {r["attribute"]: r for r in similarity.similarity_scores(
        inferences=[{"context_id": context_id, "attribute": "trust", "text": by_unit[(context_id, "trust")][0]},
                    {"context_id": context_id, "attribute": "emotion", "text": "no unit asked for this"}],
        references=by_unit,
    )}
    assert rows["trust"]["bleu"] == pytest.approx(100.0) and rows["trust"]["rouge_l"] == pytest.approx(1.0)
    assert rows["trust"]["n_references"] == len(by_unit[(context_id, "trust")])
    assert rows["emotion"]["n_skipped"] == 1 and rows["emotion"]["n_contexts"] == 0


@pytest.mark.concurrency
@pytest.mark.django_db(transaction=True)
def test_racing_workers_fill_every_unit_with_exactly_k_writers():
    """14 workers race on 2 contexts × 6 attributes, k = 3, two attributes a claim: 36 seats, no unit over 3."""
    reference_set = make_set(contexts=make_contexts(2, "esc", prefix="race"), per_context=3, name="unit-race",
                             attributes_per_worker=2)
    people = [CrowdWorkerFactory(username=f"unitracer{i:02d}") for i in range(14)]

    race_writers(reference_set, people,
                 lambda worker, a: {attr: f"{GOOD_TEXTS[attr]} ({worker.username})" for attr in a.attributes})

    per_unit: dict[tuple[int, str], int] = {}
    for member_id, attribute in Reference.objects.values_list("assignment__member_id", "attribute"):
        per_unit[(member_id, attribute)] = per_unit.get((member_id, attribute), 0) + 1
    assert len(per_unit) == 12 and set(per_unit.values()) == {3}
    assert ReferenceSeat.objects.count() == 36
    assert set(ReferenceAssignment.objects.values_list("status", flat=True)) == {AssignmentStatus.SUBMITTED}
