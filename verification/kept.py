"""The summaries a judgment keeps up to date (issue 23), for the step-by-step path and changes.

The one-statement answer (`statements.judgment_store`) keeps the same summaries in SQL
(`pair_tallies.pair_tallies_sql`, `tallies.tallies_sql`, `statements.item_summary_sql`); these are their Python twins, so that
`verification.services` calls one function per event whatever summaries there are.
"""

from __future__ import annotations

from . import pair_tallies, tallies
from .summaries import item_summary_judged


def judgment_added(*, judgment, claim) -> None:
    """A judgment was stored on `claim` (its slot's `answered` already counted)."""
    item = claim.item
    item_summary_judged(item_id=item.pk)  # the item list's summary
    pair_tallies.judgment_added(judgment=judgment, task=item.task, is_gold=item.is_gold)
    tallies.judgment_recorded(judgment=judgment, item=item, overlap=claim.batch.overlap)


def judgment_relabelled(*, judgment, verifier_id: int, before: tuple[str, str]) -> None:
    """`judgment` changed its answer from `before` (label, displayed label)."""
    item = judgment.item
    pair_tallies.judgment_relabelled(judgment=judgment, old_label=before[0], task=item.task, is_gold=item.is_gold)
    tallies.judgment_relabelled(verifier_id=verifier_id, item=item, before=before,
                                after=(judgment.label, judgment.displayed_label))


def items_regolded(*, items) -> None:
    """These items were marked (or unmarked) gold: gold items are counted apart or left out."""
    pair_tallies.pairs_rebuild(batch_ids={i.batch_id for i in items if i.batch_id})
    tallies.items_regolded(item_ids=[i.pk for i in items])
