"""Filters for the rows of chosen (batch, aggregation run) pairs: a batch's current run's results,
its agreement rows. Releases, the dashboard and the agreement job all read them this way."""
from __future__ import annotations

from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import BooleanField, F, Func, Q

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
