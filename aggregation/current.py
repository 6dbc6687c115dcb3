"""A batch's current aggregation results, in one place: those of its latest SUCCEEDED run that
wrote a BatchResult for it (a run that failed or is still running never replaces them).

- `latest_succeeded_run`: that run, from the sources (a subquery a row): what the kept mark is
  rebuilt from, and what reads that must not depend on the mark use;
- `current_q`: the rows of each batch's current run, through the kept mark
  (`BatchResult.is_current`, set where a run becomes SUCCEEDED);
- `pairs_q`: the rows of given (batch → run) pairs (a release's, frozen when it was made).
Releases, the dashboard and the aggregation job all read them this way."""
from __future__ import annotations

from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import BooleanField, F, Func, OuterRef, Q, Subquery

from .models import BatchResult, RunStatus

def latest_succeeded_run(batch_ref=None, *, before: int | None = None) -> Subquery:
    """The id of the latest succeeded run that aggregated the batch `batch_ref` (default: the
    outer row's `batch_id`), of the runs before `before` if given."""
    runs = BatchResult.objects.filter(batch_id=OuterRef("batch_id") if batch_ref is None else batch_ref,
                                      run__status=RunStatus.SUCCEEDED)
    if before is not None:
        runs = runs.filter(run_id__lt=before)
    return Subquery(runs.order_by("-run_id").values("run_id")[:1])


class CurrentPairs(Func):
    """`(batch_id, run_id) IN (the current batch results)`: the pairs the aggregation job marks
    (`BatchResult.is_current`, one per batch, a partial index), read in the statement instead of
    sent as arrays of every pair or grouped over every batch's results (issue 23)."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, *, prefix: str = ""):
        super().__init__(F(f"{prefix}batch_id"), F(f"{prefix}run_id"))

    def as_sql(self, compiler, connection, **extra):
        sql, params = super().as_sql(compiler, connection, **extra)
        inner = f"SELECT br.batch_id, br.run_id FROM {BatchResult._meta.db_table} br WHERE br.is_current"
        columns = sql[sql.index("(") + 1:sql.rindex(")")]
        return f"({columns}) IN ({inner})", params


def current_q(*, prefix: str = "") -> Q:
    """Rows of each batch's current run (the latest succeeded run that aggregated it)."""
    return Q(CurrentPairs(prefix=prefix))


# Up to this many runs, the pairs are an OR of `run_id = r AND batch_id IN (…)` terms (index
# friendly); past it, one hash lookup a row: an OR of one term per run costs every row a pass
# over all the terms, and a batch aggregated when it completes has a run of its own (7,937
# batches at 4M items: retention and the release grew with items × batches).
PAIRS_OR_MAX_RUNS = 20


class PairsIn(Func):
    """`(batch_id, run_id) IN (SELECT * FROM unnest(batches, runs))` on PostgreSQL."""

    template = "(%(expressions)s) IN (SELECT * FROM unnest(%%s::bigint[], %%s::bigint[]))"
    output_field = BooleanField()
    conditional = True

    def __init__(self, pairs: dict[int, int], *, prefix: str = ""):
        self.batches, self.runs = (list(column) for column in zip(*sorted(pairs.items())))
        super().__init__(F(f"{prefix}batch_id"), F(f"{prefix}run_id"))

    def as_sql(self, compiler, connection, **extra):
        sql, params = super().as_sql(compiler, connection, **extra)
        return sql, (*params, self.batches, self.runs)


def pairs_q(pairs: dict[int, int], *, prefix: str = "") -> Q:
    """Rows of the (batch → run) `pairs` as a filter whose cost a row does not grow with the
    number of runs: one `run_id = r AND batch_id IN (…)` term per run while they are few (or off
    PostgreSQL), else `PairsIn`."""
    if not pairs:
        return Q(pk__in=[])
    by_run: dict[int, list[int]] = {}
    for batch_id, run_id in sorted(pairs.items()):
        by_run.setdefault(run_id, []).append(batch_id)
    if len(by_run) > PAIRS_OR_MAX_RUNS and connection.vendor == "postgresql":
        return Q(PairsIn(pairs, prefix=prefix))
    return reduce(or_, (Q(**{f"{prefix}run_id": r, f"{prefix}batch_id__in": b}) for r, b in sorted(by_run.items())))
