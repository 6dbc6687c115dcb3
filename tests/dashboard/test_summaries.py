"""The summaries the staff pages read are exact: after a randomized history through the services
(answers by the one-statement path and step by step, changed answers, gold marks, a batch
reopened with another k, aggregation runs), the summaries kept as the work happened equal the
ones `summaries_rebuild` recounts from scratch."""
import random
import uuid

import pytest
from django.core.management import call_command

from aggregation import services as aggregation_services
from aggregation.models import BatchResult, CurrentResultCell, CurrentWorkerTally, ResultCell, RunRetention, ShortResults
from annotation.models import Item
from dashboard.summaries import REBUILDERS, summaries_rebuild
from tests.verification.factories import open_batch, verifiers
from verification import services
from verification.errors import VerificationError
from verification.models import BatchDayTally, BatchTally, Judgment, QueueSlot, VerifierSecondCount, VerifierTally

pytestmark = pytest.mark.django_db

SUMMARIES = {
    BatchTally: ("batch_id", "task", "is_gold", "items", "judged_items", "complete_items", "done", "judgments", "exposed",
                 "agg_items", "agg_judged", "agg_complete"),
    BatchDayTally: ("batch_id", "day", "judgments", "first_at"),
    VerifierTally: ("verifier_id", "judgments", "n_none", "n_multiple", "gold_n", "gold_ok", "l_a", "l_b", "l_c", "l_d"),
    VerifierSecondCount: ("verifier_id", "second", "n"),
    QueueSlot: ("item_id", "judged", "aggregated"),
    ResultCell: ("run_id", "batch_id", "task", "domain", "attribute", "total", "retained"),
    CurrentResultCell: ("task", "domain", "attribute", "total", "retained"),
    RunRetention: ("run_id", "total", "retained", "retro_total", "retro_retained", "prosp_total", "prosp_retained",
                   "change", "change_batches"),
    CurrentWorkerTally: ("verifier_id", "weighted", "n"),
    ShortResults: ("run_id", "batch_id", "n_judgments", "items"),
    BatchResult: ("run_id", "batch_id", "is_current"),
}


def snapshot() -> dict:
    out = {}
    for model, fields in SUMMARIES.items():
        rows = []
        for row in model.objects.values_list(*fields):
            rows.append(tuple(round(v, 9) if isinstance(v, float) else v for v in row))
        out[model.__name__] = sorted(rows, key=repr)
    return out


def _answer(rng, people, batches, *, checked: bool):
    verifier, batch = rng.choice(people), rng.choice(batches)
    try:
        claim = services.item_claim_next(verifier=verifier, batch_name=batch.name)
    except VerificationError:
        return
    if claim is None:
        return
    choice = rng.choice(["A", "B", "C", "D", "A", "C", "NONE", "MULTIPLE"])
    if checked:  # step by step, as SQLite and the slow path do it
        services._judgment_submit_checked(verifier=verifier, claim_id=claim.pk, choice=choice, key=uuid.uuid4(),
                                          marks=[], comment="", source="form")
    else:
        services.judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=uuid.uuid4())


def _history(seed: int):
    rng = random.Random(seed)
    people = verifiers(5)
    batches = [
        open_batch(name="sum-a", overlap=2, n_items=6, n_prospective=2, verifiers=people),
        open_batch(name="sum-b", overlap=3, n_items=5, n_prospective=1, verifiers=people),
    ]
    for batch in batches:
        services.batch_open(name=batch.name)
    runs = 0
    for step in range(100):
        # the last 40 steps only answer and change answers: the rarer events recount what they
        # touch, which would hide a drift of the kept counts
        roll = rng.random() * (0.8 if step >= 60 else 1.0)
        if roll < 0.7:
            _answer(rng, people, batches, checked=rng.random() < 0.4)
        elif roll < 0.8:
            mine = list(Judgment.objects.order_by("pk").values_list("pk", "verifier_id"))
            if mine:
                pk, verifier_id = rng.choice(mine)
                verifier = next(p for p in people if p.pk == verifier_id)
                services.judgment_change(verifier=verifier, judgment_id=pk, choice=rng.choice(["A", "B", "C", "D", "NONE"]))
        elif roll < 0.87:
            items = list(Item.objects.order_by("pk").values_list("item_id", "is_gold"))
            item_id, gold = rng.choice(items)
            services.items_gold_set(item_ids=[item_id], is_gold=not gold)
        elif roll < 0.9:
            batch = rng.choice(batches)
            services.batch_open(name=batch.name, overlap=rng.choice([2, 3, 4]))
        elif runs < 2:
            audited = [b.pk for b in batches if Judgment.objects.filter(batch=b).exists()]
            if audited:
                runs += 1
                run = aggregation_services.aggregation_run_create(batch_ids=audited, trigger="test", dispatch=False)
                aggregation_services.aggregation_run_execute(run_id=run.pk)


@pytest.mark.parametrize("seed", [23, 2023])
def test_the_kept_summaries_equal_the_rebuilt_ones_after_a_random_history(seed):
    _history(seed)
    assert Judgment.objects.count() > 20 and RunRetention.objects.exists()
    kept = snapshot()
    summaries_rebuild()
    rebuilt = snapshot()
    for name in kept:
        assert kept[name] == rebuilt[name], name


def test_each_summary_rebuilds_alone_and_the_command_runs(capsys):
    _history(7)
    kept = snapshot()
    for name in REBUILDERS:
        summaries_rebuild(only=name)
        assert snapshot() == kept, name
    call_command("summaries_rebuild")
    assert "rebuilt: " in capsys.readouterr().out
    assert snapshot() == kept
