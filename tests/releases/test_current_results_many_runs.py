"""The current results when every batch has a run of its own (auto aggregation when a batch
completes): past PAIRS_OR_MAX_RUNS runs, `pairs_q` becomes one hash lookup a row instead of an
OR with a term per run (bench/scale.py: retention and the release grew with items × batches),
and must select exactly the same rows."""
import pytest

from dashboard.summaries import summaries_rebuild

from aggregation import current, worker_agreement
from aggregation.models import AggregationRun, BatchResult, ItemResult, RunStatus
from releases import selectors
from tests.factories import BatchFactory, ItemFactory

N_EXTRA = 24  # batches aggregated each by a run of its own: with the world's, past PAIRS_OR_MAX_RUNS


@pytest.fixture
def many_runs(world):
    for n in range(N_EXTRA):
        batch = BatchFactory(name=f"auto-{n:02d}")
        items = [ItemFactory(batch=batch, attribute=a, answer="B") for a in ("trust", "belief")]
        for attempt in (1, 2):  # re-aggregated: only the second run's results are current
            run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED, progress=1.0)
            run.batches.add(batch)
            for m, item in enumerate(items):
                keep = (m + n + attempt) % 2 == 0
                ItemResult.objects.create(run=run, item=item, batch=batch, label="B", posterior=0.9, mv_label="B",
                                          n_judgments=3 if (n, m) != (0, 0) else 2, retained=keep)
            BatchResult.objects.create(run=run, batch=batch, items=2, judgments=6, retained=1, ac1=0.9)
    summaries_rebuild()  # the release warnings read the aggregation job's summaries
    return world


def _both(monkeypatch, read):
    monkeypatch.setattr(current, "PAIRS_OR_MAX_RUNS", 10_000)
    with_or = read()
    monkeypatch.setattr(current, "PAIRS_OR_MAX_RUNS", 0)
    return with_or, read()


def test_many_runs_select_the_same_current_results(many_runs, monkeypatch):
    # Given 26 batches, 25 of them aggregated twice, and a failed run
    pairs = selectors.current_batch_runs()
    assert len(set(pairs.values())) > 20

    # When the current results are read both ways
    with_or, with_pairs = _both(monkeypatch, lambda: sorted(selectors.current_item_results(pairs=pairs).values_list("pk", "run_id")))

    # Then they are the same rows: every batch's latest succeeded run, nothing of the runs it replaced
    assert with_or == with_pairs
    assert {run for _, run in with_pairs} == set(pairs.values())
    assert len(with_pairs) == 6 + 2 * N_EXTRA


def test_many_runs_give_the_same_retention_warnings_and_batch_results(many_runs, monkeypatch):
    pairs = selectors.current_batch_runs()

    def read():
        return (
            selectors.retention_counts(pairs=pairs),
            selectors.release_warnings(pairs=pairs),
            [(br.batch_id, br.run_id) for br in selectors.current_batch_results(pairs=pairs)],
        )

    with_or, with_pairs = _both(monkeypatch, read)
    assert with_or == with_pairs
    assert with_pairs[0]["overall"]["total"] == 6 + 2 * N_EXTRA
    assert [w["code"] for w in with_pairs[1]] == ["under_overlap"]  # auto-00's first item holds 2 judgments


def test_many_runs_filter_is_one_row_lookup(many_runs, monkeypatch):
    monkeypatch.setattr(current, "PAIRS_OR_MAX_RUNS", 0)
    sql = str(selectors.current_item_results(pairs=selectors.current_batch_runs()).query)
    assert "unnest" in sql and " OR " not in sql


def test_many_runs_rebuild_the_same_agreement_totals(many_runs, monkeypatch):
    """The agreement job's rebuild selects each batch's current run's rows with the same filter."""
    from aggregation.models import WorkerAccuracyTotal, WorkerAgreementTotal

    def read():
        worker_agreement.worker_agreement_rebuild()
        return (
            sorted(WorkerAgreementTotal.objects.values_list("verifier_id", "task", "week", "judged", "agreed")),
            sorted(WorkerAccuracyTotal.objects.values_list("verifier_id", "judgments")),
        )

    with_or, with_pairs = _both(monkeypatch, read)
    assert with_or == with_pairs
    assert with_pairs[0]  # the world's judgments are in them



def test_retention_cells_are_a_count_over_the_current_results(many_runs):
    """The release's and the report's retention read the aggregation job's cells (a few a batch),
    not the results: they must count exactly the audited benchmark results of the current runs."""
    from django.db.models import Count, Q

    # Given also a batch whose run holds a gold item's result and an item's without a judgment
    batch = BatchFactory(name="auto-gold")
    run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED, progress=1.0)
    run.batches.add(batch)
    for n, (gold, judgments) in enumerate(((True, 3), (False, 0), (False, 3))):
        ItemResult.objects.create(run=run, item=ItemFactory(batch=batch, is_gold=gold, attribute="trust"), batch=batch,
                                  label="B", posterior=0.9, mv_label="B", n_judgments=judgments, retained=True)
    BatchResult.objects.create(run=run, batch=batch, items=3, judgments=6, retained=3, ac1=0.9)
    summaries_rebuild()
    pairs = selectors.current_batch_runs()

    # When the retention cells and counts are read, and the same counted over the current results
    audited = selectors.current_item_results(pairs=pairs).filter(n_judgments__gt=0)
    fields = ("item__task", "item__context__domain_id", "item__attribute")
    counted = list(audited.values(*fields).annotate(total=Count("id"), retained=Count("id", filter=Q(retained=True)))
                   .order_by(*fields))
    per_batch = {row["batch__name"]: (row["total"], row["retained"]) for row in audited.values("batch__name").order_by()
                 .annotate(total=Count("id"), retained=Count("id", filter=Q(retained=True)))}

    # Then they are the same: the gold result and the unjudged one count nowhere
    assert selectors.retention_cells(pairs=pairs) == counted
    batches = selectors.retention_counts(pairs=pairs)["batch"]
    assert {name: (row["total"], row["retained"]) for name, row in batches.items()} == per_batch
    assert len(per_batch) > N_EXTRA and per_batch["auto-gold"] == (1, 1)
