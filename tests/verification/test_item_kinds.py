"""Nothing distinguishes item kinds a verifier should not tell apart (issue 12, breaks 2–4).

- NOTA is offered on every prospective item, not only on counterfactual ones (whose answer it is);
- what a verifier is shown refers to an item by its claim only: no item id, variant or attribute;
- progress counts move the same whether the item in hand is gold or not;
- the option order and the queue order come from a secret, not from the public seed and ids.
"""
import re
import uuid

import pytest

from annotation.models import Task
from tests.factories import ContextFactory, ItemFactory, ProspectiveItemFactory, api_for
from verification.models import QueueSlot
from verification.queue import display_order_for, queue_position_for
from verification.services import batch_open, item_claim_next, items_gold_set, judgment_submit

from .factories import context_with_items, open_batch, verifiers

pytestmark = pytest.mark.django_db


def test_every_prospective_item_offers_the_same_choices_nota_included(verifier):
    batch = open_batch(n_items=0, overlap=1, verifiers=[verifier, *verifiers(3, prefix="o")])
    for n, variant in enumerate(("hard", "easy", "counterfactual")):
        ProspectiveItemFactory(batch=batch, context=ContextFactory(context_id=f"mi-s{n:04d}-w00"), variant=variant,
                               answer="NOTA" if variant == "counterfactual" else "A")
    api = api_for(verifier)
    shapes = set()
    for _ in range(3):
        body = api.get("/api/v1/next-item/", {"batch": batch.name}).json()
        shapes.add((tuple(body["choices"]), tuple(o["letter"] for o in body["options"]), tuple(sorted(body))))
        posted = api.post("/api/v1/judgments/", {"claim": body["claim"], "choice": "NOTA",
                                                 "idempotency_key": str(uuid.uuid4())}, format="json")
        assert posted.status_code == 201
    assert shapes == {(("A", "B", "C", "D", "NOTA", "NONE", "MULTIPLE"), ("A", "B", "C", "D", "NOTA"),
                       tuple(sorted(["claim", "batch", "task", "domain", "attribute", "question", "options",
                                     "choices", "expires_at", "profile"])))}


def test_what_a_verifier_is_shown_never_names_the_item_its_variant_or_its_attribute(client, verifier):
    batch = open_batch(n_items=0, overlap=1, verifiers=[verifier, *verifiers(3, prefix="o")])
    _, bearing = context_with_items(batch=batch, context_id="mi-s0001-w00")
    ids = [i.item_id for i in bearing]
    assert any("counterfactual" in i for i in ids) and any("easy" in i for i in ids)
    api = api_for(verifier)
    client.force_login(verifier)
    seen = []
    for _ in range(6):  # whatever the queue hands out first: a profile-bearing item or six retrospective ones
        body = api.get("/api/v1/next-item/", {"batch": batch.name})
        if body.status_code == 204:
            break
        page = client.get(f"/verify/{batch.name}/").content.decode()
        answer = api.post("/api/v1/judgments/", {"claim": body.json()["claim"], "choice": "A",
                                                 "idempotency_key": str(uuid.uuid4())}, format="json")
        seen += [body.content.decode(), page, answer.content.decode()]
        if body.json()["task"] == Task.PROSPECTIVE:
            assert body.json()["attribute"] == ""
    seen.append(client.get(f"/verify/{batch.name}/").content.decode())  # recent answers
    for text in seen:
        for marker in ["item_id", "counterfactual", "mi-s0001-w00", "variant", *ids]:
            assert marker not in text, marker


def progress(api, batch):
    return next(row for row in api.get("/api/v1/progress/").json() if row["batch"] == batch.name)


def test_progress_moves_the_same_for_gold_and_ordinary_items():
    (a,) = verifiers(1)
    batch = open_batch(n_items=8, overlap=1, verifiers=[a], gold_rate=0.25)
    golds = [ItemFactory(batch=batch, context=ContextFactory(context_id=f"gold-s{n}-w00"), answer="B") for n in range(2)]
    items_gold_set(item_ids=[g.item_id for g in golds], is_gold=True)
    batch_open(name=batch.name)  # as staff do: the batch's queue slots exist from the start
    api = api_for(a)
    moves = {True: set(), False: set()}
    before = progress(api, batch)
    while (body := api.get("/api/v1/next-item/", {"batch": batch.name})).status_code == 200:
        held = progress(api, batch)
        api.post("/api/v1/judgments/", {"claim": body.json()["claim"], "choice": "A",
                                        "idempotency_key": str(uuid.uuid4())}, format="json")
        after = progress(api, batch)
        gold = QueueSlot.objects.get(item__claims__pk=body.json()["claim"]).is_gold
        moves[gold].add((held["done"] - before["done"], held["assigned"] - before["assigned"],
                         after["done"] - held["done"], after["assigned"] - held["assigned"]))
        before = after
    # claiming moves nothing, answering moves "done" by one: for gold and ordinary items alike
    assert moves[True] == moves[False] == {(0, 0, 1, 0)}
    assert before["done"] == before["assigned"] == 10


def test_option_order_and_queue_order_come_from_the_secret_not_the_seed(settings, verifier):
    settings.DIALTOM_SHUFFLE_SECRET = "first-secret-for-the-option-order-0123"
    orders = [display_order_for(verifier_id=verifier.pk, item_pk=n) for n in range(1, 41)]
    positions = [queue_position_for(item_id=f"mi-s{n:04d}-w00-trust") for n in range(1, 41)]
    settings.DIALTOM_SEED = 12345  # the public seed changes nothing
    assert [display_order_for(verifier_id=verifier.pk, item_pk=n) for n in range(1, 41)] == orders
    assert len(set(orders)) > 5
    settings.DIALTOM_SHUFFLE_SECRET = "second-secret-for-the-option-order-4567"
    assert [display_order_for(verifier_id=verifier.pk, item_pk=n) for n in range(1, 41)] != orders
    assert [queue_position_for(item_id=f"mi-s{n:04d}-w00-trust") for n in range(1, 41)] != positions
    settings.DIALTOM_SHUFFLE_SECRET = ""  # unset outside production: derived from SECRET_KEY, still not the seed
    derived = [display_order_for(verifier_id=verifier.pk, item_pk=n) for n in range(1, 41)]
    settings.SECRET_KEY = "another-secret-key-" + "x" * 40
    assert [display_order_for(verifier_id=verifier.pk, item_pk=n) for n in range(1, 41)] != derived


def test_gold_counterfactual_and_easy_items_arrive_in_the_one_queue_order():
    people = verifiers(4)
    batch = open_batch(n_items=6, overlap=1, verifiers=people, gold_rate=0.2)
    for n, variant in enumerate(("easy", "counterfactual")):
        ProspectiveItemFactory(batch=batch, context=ContextFactory(context_id=f"mi-p{n:04d}-w00"), variant=variant,
                               answer="NOTA" if variant == "counterfactual" else "A")
    gold = ItemFactory(batch=batch, context=ContextFactory(context_id="gold-s0-w00"), answer="B")
    items_gold_set(item_ids=[gold.item_id], is_gold=True)
    served = []
    while (claim := item_claim_next(verifier=people[0], batch=batch)) is not None:
        judgment_submit(verifier=people[0], claim_id=claim.pk, choice="A", idempotency_key=uuid.uuid4())
        served.append(claim)
    positions = dict(QueueSlot.objects.filter(batch=batch).values_list("item_id", "position"))
    item_ids = dict(QueueSlot.objects.filter(batch=batch).values_list("item_id", "item__item_id"))
    ordinary = [positions[c.item_id] for c in served if not c.is_gold]
    assert ordinary == sorted(ordinary) and len(served) == 9  # 8 regular (hard, easy, counterfactual), 1 gold
    assert [c.item.item_id for c in served] != sorted(c.item.item_id for c in served)  # not the ids' order
    assert all(positions[pk] == queue_position_for(item_id=item_ids[pk]) for pk in positions)


def test_production_refuses_to_start_without_a_shuffle_secret():
    from tests.security.test_deploy import _check_deploy

    done = _check_deploy(DIALTOM_SHUFFLE_SECRET="")
    assert done.returncode != 0 and "DIALTOM_SHUFFLE_SECRET" in done.stderr
    assert re.search(r"32\+ characters", done.stderr)
