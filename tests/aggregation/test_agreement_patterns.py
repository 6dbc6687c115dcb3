"""The study report's agreement reads the patterns the aggregation job keeps (`AgreementPattern`),
never the judgments: the patterns of a run equal a count of the judgments it fitted, one at a
time; they stay with the run when judgments change after it (the report describes the results
it sits beside) and follow the gold marks; `summaries_rebuild` counts them again from scratch."""
from collections import Counter, defaultdict

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from aggregation import services as aggregation_services
from aggregation.models import AgreementPattern, BatchResult
from aggregation.selectors import AGREEMENT_CHOICES, usable_judgments
from annotation.models import Item
from dashboard.summaries import summaries_rebuild
from report.selectors import verification_section
from tests.dashboard.test_summaries import _history
from verification import services
from verification.models import Judgment

pytestmark = pytest.mark.django_db


def _counted(run_id: int) -> dict[tuple, tuple[int, int]]:
    """(batch, task, domain, attribute, variant, judgments per choice…) → (items, judgments), from
    the usable judgments on the run's benchmark items, read one at a time."""
    batch_ids = list(BatchResult.objects.filter(run_id=run_id).values_list("batch_id", flat=True))
    per_item: dict[int, Counter] = defaultdict(Counter)
    cells = {}
    rows = usable_judgments().filter(item__batch_id__in=batch_ids, item__is_gold=False).values_list(
        "item_id", "label", "item__batch_id", "item__task", "item__context__domain_id", "item__attribute", "item__variant")
    for item_id, label, *cell in rows:
        per_item[item_id][label] += 1
        cells[item_id] = tuple(cell)
    out: dict[tuple, tuple[int, int]] = {}
    for item_id, counts in per_item.items():
        key = (*cells[item_id], *(counts[choice] for choice in AGREEMENT_CHOICES))
        items, judgments = out.get(key, (0, 0))
        out[key] = (items + 1, judgments + sum(counts.values()))
    return out


def _kept(run_id: int) -> dict[tuple, tuple[int, int]]:
    counts = [f"c{k}" for k in range(len(AGREEMENT_CHOICES))]
    return {tuple(row[:-2]): tuple(row[-2:]) for row in AgreementPattern.objects.filter(run_id=run_id).values_list(
        "batch_id", "task", "domain", "attribute", "variant", *counts, "items", "judgments")}


def _run() -> int:
    audited = sorted(set(Judgment.objects.values_list("batch_id", flat=True)))
    run = aggregation_services.aggregation_run_create(batch_ids=audited, trigger="test", dispatch=False)
    aggregation_services.aggregation_run_execute(run_id=run.pk)
    return run.pk


def _pairs() -> dict[int, int]:
    return dict(BatchResult.objects.filter(is_current=True).values_list("batch_id", "run_id"))


@pytest.mark.parametrize("seed", [5, 23])
def test_a_runs_patterns_are_the_judgments_it_fitted_counted_one_at_a_time(seed):
    _history(seed)
    run_id = _run()
    kept = _kept(run_id)
    assert kept and kept == _counted(run_id)
    judged = usable_judgments().filter(item__batch__results__run_id=run_id, item__is_gold=False)
    assert sum(items for items, _ in kept.values()) == judged.values("item_id").distinct().count()
    summaries_rebuild()
    assert _kept(run_id) == kept  # nothing changed since the run: the rebuild counts the same


def test_the_report_reads_the_patterns_of_its_runs_not_the_judgments():
    _history(23)
    first = _run()
    before = verification_section(pairs=_pairs(), release=None)
    with CaptureQueriesContext(connection) as queries:
        verification_section(pairs=_pairs(), release=None)
    assert not [q["sql"] for q in queries.captured_queries if Judgment._meta.db_table in q["sql"]]

    # judgments changed after the run: the report stays that of the run's results, until the next run
    changed = 0
    for judgment in Judgment.objects.filter(item__is_gold=False).select_related("verifier").order_by("pk")[:6]:
        services.judgment_change(verifier=judgment.verifier, judgment_id=judgment.pk,
                                 choice="MULTIPLE" if judgment.label != "MULTIPLE" else "A")
        changed += 1
    assert changed and _counted(first) != _kept(first)
    assert verification_section(pairs=_pairs(), release=None)["by_task"] == before["by_task"]
    second = _run()
    assert _kept(second) == _counted(second)
    assert verification_section(pairs=_pairs(), release=None)["by_task"] != before["by_task"]


def test_a_gold_mark_moves_the_item_out_of_its_runs_patterns():
    _history(2023)
    run_id = _run()
    judged = (Item.objects.filter(is_gold=False, judgments__isnull=False, batch__results__run_id=run_id)
              .order_by("pk").first())
    before = sum(items for items, _ in _kept(run_id).values())
    services.items_gold_set(item_ids=[judged.item_id], is_gold=True)
    assert sum(items for items, _ in _kept(run_id).values()) == before - 1
    assert _kept(run_id) == _counted(run_id)


def test_the_migration_counts_the_patterns_of_earlier_runs_as_the_job_does():
    """Migration 0009's own SQL (frozen there) against the job's: runs that succeeded before the
    patterns existed get the same ones."""
    from importlib import import_module

    migration = import_module("aggregation.migrations.0009_agreement_patterns")
    _history(23)
    first, second = _run(), _run()
    kept = {run_id: _kept(run_id) for run_id in (first, second)}
    AgreementPattern.objects.all().delete()
    with connection.schema_editor() as editor:
        migration.patterns_backfill(None, editor)
    assert {run_id: _kept(run_id) for run_id in (first, second)} == kept and kept[second]
