"""The rehearsal, scaled down, end to end: the authors' pool shape through the HTTP API against
gunicorn + PostgreSQL + a Celery worker, a release, a baseline, the study report, a budget.

transaction=True: the servers are other processes and must see the rows.
"""
import json
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connection

from bench.dialtom_pool import SAMPLE, make_pool
from report.rehearsal import StatisticsKeeper, VerifierModel

pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason=f"the authors' sample {SAMPLE} is not here")


def test_verifier_model_defaults_are_documented_and_give_mean_times():
    model = VerifierModel.load()
    assert model.verifiers == 36 and model.accuracy["retrospective"][0] > 0.9
    # log-normal mean = median · exp(σ²/2), times the mean speed factor
    assert model.mean_seconds("retrospective") == pytest.approx(40 * 2.718281828 ** (0.45 ** 2 / 2) * 1.05, rel=1e-6)
    assert VerifierModel.load(verifiers=5).verifiers == 5


@pytest.mark.timeout(900)  # minutes on 2 shared cores: servers start, several adaptive rounds, a release
@pytest.mark.django_db(transaction=True)
def test_a_scaled_rehearsal_finishes_with_its_budget(tmp_path, capsys):
    make_pool(tmp_path / "pool", SAMPLE, 0.005)
    out = tmp_path / "rehearsal.json"
    call_command("rehearse", str(tmp_path / "pool"), "--verifiers", "36", "--pay-per-item", "0.2",
                 "--dashboard-every", "2", "--timeout", "600", "--out", str(out))
    result = json.loads(out.read_text())
    invariants = result["invariants"]
    assert invariants["violations"] == [] and invariants["errors"] == 0 and invariants["over_k"] == 0
    assert invariants["acknowledged"] == invariants["stored"] > 0
    budget = result["budget"]
    adaptive, k3, k5 = budget["adaptive_k2_5"], budget["k3"], budget["k5"]
    assert adaptive["judgments"] == invariants["stored"] and not adaptive["projected"] and k3["projected"]
    assert k5["judgments"] == 5 * result["items"] and k3["judgments"] == 3 * result["items"]
    assert adaptive["cost"] == pytest.approx(0.2 * adaptive["judgments"]) and adaptive["verifier_hours"] > 0
    assert sum(b["adaptive_k2_5"]["judgments"] for b in result["per_batch"]) == adaptive["judgments"]
    assert len(result["per_batch"]) == result["batches"] and all(b["ac1"] is not None for b in result["per_batch"])
    assert result["dashboard"]["n"] >= 1 and set(result["dashboard"]["statuses"]) == {"200"}
    assert result["baseline"]["overall"]["n"] > 0
    assert {row["task"] for row in result["report"]["by_task"]} == {"retrospective", "prospective"}
    printed = capsys.readouterr().out
    assert "k5 (projected)" in printed and "errors / over k / acked / stored | 0 / 0 /" in printed
    # items nobody may take under the context rule are settled by the sweep, and counted, never waited on
    assert result["settled_short"] >= 0 and "items settled short (nobody may take them)" in printed


@pytest.mark.django_db(transaction=True)
def test_without_autovacuum_the_rehearsal_analyzes_the_tables_it_grows():
    """This machine's PostgreSQL runs with autovacuum off: unanalyzed, the planner's guesses for
    tables grown from empty made one overlap refresh of the full rehearsal take 12 s a verifier."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        autovacuum = cursor.fetchone()[0]
        cursor.execute("SELECT coalesce(max(analyze_count), 0) FROM pg_stat_user_tables WHERE relname = 'verification_claim'")
        before = cursor.fetchone()[0]
    done = threading.Event()
    keeper = StatisticsKeeper(every=0.1, done=done)
    keeper.start()
    deadline = time.monotonic() + 30  # an ANALYZE of the whole database takes seconds on a busy machine
    time.sleep(0.5)
    while keeper.autovacuum != "on" and keeper.runs < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    done.set()
    keeper.join(timeout=30)
    summary = keeper.summary()
    assert summary["autovacuum"] == autovacuum
    if autovacuum == "on":
        assert summary["analyze_runs"] == 0 and summary["analyze_every_seconds"] is None
        return
    assert summary["analyze_runs"] >= 1 and summary["analyze_every_seconds"] == 0.1
    for _ in range(50):  # the statistics collector reports a little later
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(max(analyze_count), 0) FROM pg_stat_user_tables WHERE relname = 'verification_claim'")
            if cursor.fetchone()[0] > before:
                return
        time.sleep(0.1)
    raise AssertionError("verification_claim was not analyzed")


@pytest.mark.django_db
def test_an_exposed_judgment_is_not_counted_against_an_items_allowance():
    """An exposed judgment (its verifier had seen a related item) does not count towards k, so the
    queue keeps the item open until k others are in: the rehearsal's allowance counts as the queue
    does (24 verifiers on a small pool, more of them exposed, failed it with items "over")."""
    from report.rehearsal import invariants
    from tests.factories import BatchFactory, ItemFactory, JudgmentFactory
    from verification.services import batch_queue_sync

    batch = BatchFactory(overlap=2)
    item = ItemFactory(batch=batch)
    JudgmentFactory(item=item, exposed=True)
    JudgmentFactory(item=item)
    JudgmentFactory(item=item)
    batch_queue_sync(batch=batch)
    assert item.queue_slot.needed == 2
    assert invariants(batch_ids=[batch.pk], acknowledged={}, errors=[], k_max=3)["over_k"] == 0
    JudgmentFactory(item=item)  # a third that counts: over the slot's two
    result = invariants(batch_ids=[batch.pk], acknowledged={}, errors=[], k_max=3)
    assert result["over_k"] == 1 and result["violations"][0] == "1 items over their allowance"
