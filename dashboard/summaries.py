"""Every summary the staff pages read (issue 23), and how to rebuild each from scratch.

The summaries are kept as the work happens (`verification.tallies`, `verification.pair_tallies`,
`aggregation.summaries`, `aggregation.worker_agreement`, `review.flag_tallies`, `review.item_summaries`); `manage.py summaries_rebuild [--only NAME]` recounts them from their
sources (after a bulk load that went around the services, or to check them: the test
`tests/dashboard/test_summaries.py` compares the kept ones with the rebuilt ones).
"""
from django.db import connection, transaction

from aggregation import summaries as aggregation_summaries
from aggregation.worker_agreement import worker_agreement_rebuild
from dialtom_site.db.statistics import analyze_own_tables
from review.flag_tallies import flag_tallies_rebuild
from review.item_summaries import item_summaries_rebuild
from verification import tallies
from verification.pair_tallies import pairs_rebuild


def _progress():
    aggregation_summaries.batches_progress_refresh()


def _verifiers():
    tallies.verifier_tallies_refresh()


def _retention():
    aggregation_summaries.rebuild()


# name -> rebuild function, in an order where each may read what the ones before it wrote
REBUILDERS = {
    "verifiers": _verifiers,
    "retention": _retention,  # includes the progress tallies (aggregated items)
    "progress": _progress,
    "flags": flag_tallies_rebuild,
    "pairs": pairs_rebuild,  # agreement between verifiers, seconds per judgment (/review/verifiers/)
    "worker_agreement": worker_agreement_rebuild,  # agreement with the consensus per verifier
    "items": item_summaries_rebuild,  # one row per item (/review/items/)
}


def _analyze() -> None:
    """PostgreSQL: fresh planner statistics. After a bulk load that went around the services
    (the case for a rebuild) the tables may never have been analyzed, and a statement planned for
    empty tables runs a subquery per row as a scan (at 4M items, the current cells' statement ran
    for minutes). Before the rebuild's transaction, not in it: inside a half-hour rebuild the
    locks of a whole-database ANALYZE held up every ANALYZE on the server for that long."""
    analyze_own_tables(connection)


def summaries_rebuild(*, only: str | None = None) -> list[str]:
    names = [only] if only else list(REBUILDERS)
    unknown = [n for n in names if n not in REBUILDERS]
    if unknown:
        raise ValueError(f"no summary {unknown[0]!r} (known: {', '.join(REBUILDERS)})")
    _analyze()
    with transaction.atomic():
        for name in names:
            if name == "progress" and only is None:
                continue  # the retention rebuild did it
            REBUILDERS[name]()
    return names
