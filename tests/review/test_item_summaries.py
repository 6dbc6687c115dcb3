"""The item summaries (issue 23) are kept exact where their sources change: after a random
history of answers (the one-statement path and the step-by-step one), imported judgments,
aggregation runs, flags, decisions and item edits, the maintained rows equal a rebuild."""
import random
import uuid

import pytest
from django.core.management import call_command

from accounts.models import Pool
from aggregation import services as aggregation_services
from annotation.models import Item, ItemSummary
from review import services as review_services
from review.item_summaries import item_summaries_rebuild
from tests.factories import BatchFactory, ContextFactory, ItemFactory, StaffFactory, UserFactory
from verification import services as verification_services
from verification import statements
from verification.models import Claim, ClaimStatus

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in ItemSummary._meta.concrete_fields]


def _snapshot() -> list[tuple]:
    return list(ItemSummary.objects.order_by("item_id").values_list(*FIELDS))


def test_a_new_item_has_its_summary_row_whatever_the_path():
    batch = BatchFactory(name="mi-b01")
    item = ItemFactory(batch=batch, attribute="belief")
    Item.objects.bulk_create([Item(item_id="x-1", context=ContextFactory(), task="retrospective", attribute="trust",
                                   question="q", options=["a", "b", "c", "d"], answer="A", batch=batch)])
    rows = {s.item.item_id: s for s in ItemSummary.objects.select_related("item")}
    assert set(rows) == {item.item_id, "x-1"}
    assert (rows[item.item_id].batch_id, rows[item.item_id].domain, rows[item.item_id].attribute) == (batch.pk, "mi", "belief")
    assert (rows["x-1"].judgments, rows["x-1"].posterior, rows["x-1"].decision) == (0, -1.0, "")

    other = BatchFactory(name="mi-b02")
    Item.objects.filter(item_id="x-1").update(batch=other, variant="easy")
    assert ItemSummary.objects.filter(item__item_id="x-1", batch=other, variant="easy").exists()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_maintained_summaries_equal_a_rebuild_after_a_random_history(seed, monkeypatch, tmp_path):
    rng = random.Random(seed)
    staff = StaffFactory(username="admin01")
    pool = Pool.objects.create(name="p")
    verifiers = [UserFactory(username=f"v{n}") for n in range(5)]
    pool.members.add(*verifiers)
    batches = [BatchFactory(name=f"mi-b{n}", overlap=3) for n in range(2)]
    items = []
    for batch in batches:
        for n in range(8):
            items.append(ItemFactory(batch=batch, attribute=["belief", "trust"][n % 2], answer=rng.choice("ABCD"),
                                     variant=["hard", "easy"][n % 3 == 0]))
    for batch in batches:
        verification_services.batch_open(name=batch.name, pools=["p"])

    fast = statements.judgment_store

    def sometimes_slow(**kwargs):  # half the answers take the step-by-step path
        return fast(**kwargs) if rng.random() < 0.5 else None

    monkeypatch.setattr(statements, "judgment_store", sometimes_slow)

    for _ in range(120):
        action = rng.random()
        verifier = rng.choice(verifiers)
        if action < 0.55:
            claim = verification_services.item_claim_next(verifier=verifier, batch=rng.choice(batches))
            if claim is not None:
                verification_services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice=rng.choice("ABCD"),
                                                      idempotency_key=uuid.uuid4())
        elif action < 0.65:
            claim = Claim.objects.filter(verifier=verifier, status=ClaimStatus.ANSWERED).order_by("?").first()
            if claim is not None:
                review_services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="question_unclear")
        elif action < 0.72:
            flag = review_services.Flag.objects.filter(status="open").order_by("?").first()
            if flag is not None:
                review_services.flag_handle(flag_id=flag.pk, status=rng.choice(["resolved", "dismissed"]), staff=staff)
        elif action < 0.80:
            item = rng.choice(items)
            review_services.adjudication_record(item_id=item.item_id, decision=rng.choice(["keep", "drop"]), reason="r", staff=staff)
        elif action < 0.90:
            run = aggregation_services.aggregation_run_create(
                batch_ids=rng.sample([b.pk for b in batches], rng.choice([1, 2])), trigger="test", dispatch=False)
            aggregation_services.aggregation_run_execute(run_id=run.pk)
        elif action < 0.95:
            item = rng.choice(items)
            worker = f"imported{rng.randrange(3)}"
            path = tmp_path / f"j{rng.random()}.csv"
            path.write_text(f"item_id,worker,label\n{item.item_id},{worker},{rng.choice('ABCD')}\n", encoding="utf-8")
            try:
                aggregation_services.judgments_import(path=path)
            except aggregation_services.JudgmentImportError:
                pass  # the same worker judged it before with another label: refused, nothing stored
        else:
            item = rng.choice(items)
            Item.objects.filter(pk=item.pk).update(answer=rng.choice("ABCD"))

    maintained = _snapshot()
    assert any(row[FIELDS.index("judgments")] for row in maintained)
    assert any(row[FIELDS.index("posterior")] >= 0 for row in maintained)
    assert any(row[FIELDS.index("flags_total")] for row in maintained)
    assert any(row[FIELDS.index("decision")] for row in maintained)
    assert any(row[FIELDS.index("n_agree")] for row in maintained)
    item_summaries_rebuild()
    assert _snapshot() == maintained


def test_rebuild_command(capsys):
    ItemFactory()
    ItemSummary.objects.update(judgments=7)
    call_command("item_summaries_rebuild")
    assert ItemSummary.objects.get().judgments == 0
    assert "1 item summaries rebuilt" in capsys.readouterr().out
