"""Reads of the review app: guidelines as verifiers see them, the flag queue, an item's
drill-down (staff: judgments, aggregate, verifiers' qualities, adjudications), agreement per
verifier, and the adjudications a release honours."""
from __future__ import annotations

from collections.abc import Iterator

from django.db.models import BooleanField, Case, CharField, Count, F, Q, QuerySet, When

from accounts.models import User
from aggregation.models import ItemResult, WorkerResult
from aggregation.selectors import current_item_results
from annotation.models import OPTION_LETTERS, Batch, Item, Task
from dialtom_site.db.collation import code_points
from verification.models import Judgment

from .markdown import render_markdown
from .models import Adjudication, Decision, DecisionInForce, Flag, FlagStatus, FlagTally, Guideline

# --- Guidelines -------------------------------------------------------------------------


def guideline_for(*, batch: Batch) -> dict | None:
    """The batch's guideline as safe HTML, with its examples per attribute; None when there is none."""
    guideline = Guideline.objects.filter(batch=batch).prefetch_related("examples").first()
    if guideline is None:
        return None
    return {
        "html": render_markdown(guideline.text),
        "examples": [
            {"topic": ex.topic, "title": ex.get_topic_display(), "html": render_markdown(ex.text)}
            for ex in guideline.examples.all()
        ],
        "updated_at": guideline.updated_at,
    }


def guideline_source(*, batch: Batch) -> dict:
    """A batch's guideline as staff edit it: its Markdown, an example's Markdown per topic
    (every topic, '' where there is none), who changed it last and when."""
    from .models import EXAMPLE_TOPICS

    guideline = Guideline.objects.filter(batch=batch).select_related("updated_by").prefetch_related("examples").first()
    examples = {ex.topic: ex.text for ex in guideline.examples.all()} if guideline else {}
    return {
        "batch": batch.name,
        "exists": guideline is not None,
        "text": guideline.text if guideline else "",
        "examples": {code: examples.get(code, "") for code, _ in EXAMPLE_TOPICS},
        "topics": EXAMPLE_TOPICS,
        "updated_by": guideline.updated_by.username if guideline and guideline.updated_by else None,
        "updated_at": guideline.updated_at if guideline else None,
    }


def guideline_preview(*, text: str, examples: dict[str, str]) -> dict:
    """What verifiers would see of a guideline not saved yet (safe HTML, examples with text only)."""
    from .models import EXAMPLE_TOPICS

    return {
        "html": render_markdown(text),
        "examples": [
            {"topic": code, "title": title, "html": render_markdown(examples[code])}
            for code, title in EXAMPLE_TOPICS if (examples.get(code) or "").strip()
        ],
    }


def item_decisions(*, item_id: str) -> list[Adjudication] | None:
    """An item's staff decisions, latest (in force) first; None for an unknown item."""
    item = Item.objects.filter(item_id=item_id).first()
    if item is None:
        return None
    return list(item.adjudications.select_related("decided_by", "item").order_by("-decided_at", "-id"))


# --- Flags ------------------------------------------------------------------------------


def flags_queue(*, status: str = FlagStatus.OPEN) -> QuerySet[Flag]:
    return (
        Flag.objects.filter(status=status)
        .select_related("item", "item__batch", "flagged_by", "handled_by")
        .order_by("-created_at", "-id")
    )


def flag_counts() -> dict[str, int]:
    """Flags per status, from `FlagTally` (kept by the services: `review.flag_tallies`)."""
    counts = dict(FlagTally.objects.values_list("status", "n"))
    return {status: counts.get(status, 0) for status in FlagStatus.values}


def commented_judgments(*, limit: int = 50) -> list[Judgment]:
    """The latest judgments that carry a verifier's comment (the other half of the review queue)."""
    return list(
        Judgment.objects.exclude(comment="")
        .select_related("item", "verifier", "batch")
        .order_by("-created_at", "-id")[:limit]
    )


def flag_of(*, verifier: User, item_id: int) -> Flag | None:
    """The verifier's own flag on an item (what the audit form may show back to them)."""
    return Flag.objects.filter(flagged_by=verifier, item_id=item_id).first()


# --- Adjudications ----------------------------------------------------------------------


def adjudicated(results: QuerySet[ItemResult]) -> QuerySet[ItemResult]:
    """`results` with staff's decisions applied, the one place of that rule:

    - `adjudication`: the decision in force on the item (keep, drop or None);
    - `released`: whether a release holds the item (kept: yes; dropped: no; else the aggregate's `retained`);
    - `released_label`: the label it is released and scored with (kept: its intended answer,
      whatever the aggregate said; else the Dawid–Skene label).
    """
    return results.annotate(
        adjudication=F("item__decision_in_force__decision"),  # a join on a view of the few decisions in force
        released=Case(
            When(adjudication=Decision.KEEP, then=True),
            When(adjudication=Decision.DROP, then=False),
            default=F("retained"),
            output_field=BooleanField(),
        ),
        released_label=Case(
            When(adjudication=Decision.KEEP, then=F("item__answer")), default=F("label"), output_field=CharField()
        ),
    )


def release_rows(results: QuerySet[ItemResult], *, values: tuple[str, ...], chunk_size: int = 2000) -> Iterator[dict]:
    """The rows a release takes from `results`, streamed in item_id order: retained items not
    dropped by staff, and items staff kept (`adjudicated`). A kept item carries its intended
    answer as its `label`, whatever the aggregate said; each row says its `adjudication`."""
    qs = (
        adjudicated(results)
        .filter(released=True)
        .order_by(code_points("item__item_id"))
        .values(*values, "adjudication")
    )
    for row in qs.iterator(chunk_size=chunk_size):
        if row["adjudication"] == Decision.KEEP:
            row["label"] = row["item__answer"]
        yield row


def adjudications_in_force() -> list[dict]:
    """The latest adjudication of every adjudicated item, for a release's manifest."""
    latest = Adjudication.objects.filter(pk__in=DecisionInForce.objects.values("adjudication_id"))
    return [
        {
            "item_id": a.item.item_id,
            "decision": a.decision,
            "reason": a.reason,
            "decided_by": a.decided_by.username,
            "decided_at": a.decided_at.isoformat(),
        }
        for a in latest.select_related("item", "decided_by").order_by("item__item_id")
    ]


def batch_names() -> list[str]:
    return list(Batch.objects.order_by("name").values_list("name", flat=True))


# --- Item drill-down ----------------------------------------------------------------------


def items_search(*, q: str = "", batch: str = "", only: str = "", limit: int = 100) -> list[dict]:
    """Items for the staff's item list: search by id or question; `only` flagged / adjudicated / dropped-by-DS."""
    items = Item.objects.select_related("batch").order_by("item_id")
    if q:
        items = items.filter(Q(item_id__icontains=q) | Q(question__icontains=q))
    if batch:
        items = items.filter(batch__name=batch)
    if only == "flagged":
        items = items.filter(flags__status=FlagStatus.OPEN).distinct()
    elif only == "adjudicated":
        items = items.filter(adjudications__isnull=False).distinct()
    elif only == "not_retained":
        items = items.filter(pk__in=current_item_results().filter(retained=False).values("item_id"))
    items = list(
        items.annotate(
            n_judgments=Count("judgments", distinct=True),
            n_open_flags=Count("flags", filter=Q(flags__status=FlagStatus.OPEN), distinct=True),
        )[:limit]
    )
    results = {
        r.item_id: r for r in current_item_results().filter(item_id__in=[i.pk for i in items]).only(
            "item_id", "label", "posterior", "retained")
    }
    decisions = dict(
        DecisionInForce.objects.filter(item_id__in=[i.pk for i in items]).values_list("item_id", "decision")
    )
    return [
        {
            "item": item,
            "n_judgments": item.n_judgments,
            "open_flags": item.n_open_flags,
            "result": results.get(item.pk),
            "decision": decisions.get(item.pk),
        }
        for item in items
    ]


def item_detail(*, item_id: str) -> dict | None:
    """Everything staff need to judge one item (never shown to verifiers)."""
    item = Item.objects.select_related("context__domain", "batch").filter(item_id=item_id).first()
    if item is None:
        return None
    domain = item.context.domain
    judgments = list(
        Judgment.objects.filter(item=item).select_related("verifier", "claim").order_by("created_at", "id")
    )
    result = current_item_results().filter(item=item).select_related("run").first()
    qualities = {}
    if result is not None:
        for wr in WorkerResult.objects.filter(run_id=result.run_id, batch_id=result.batch_id,
                                              verifier_id__in=[j.verifier_id for j in judgments]):
            qualities[wr.verifier_id] = {
                "accuracy": wr.accuracy,
                "diagonal": {label: p for label in sorted(wr.confusion)
                             if (p := (wr.confusion.get(label) or {}).get(label)) is not None},
                "gold_accuracy": wr.gold_accuracy,
            }
    rows = []
    for j in judgments:
        order = j.claim.display_order if j.claim_id and j.claim else "".join(OPTION_LETTERS)
        rows.append(
            {
                "verifier": j.verifier.username,
                "excluded": j.verifier.excluded_from_aggregation,
                "shown": j.displayed_label or j.label,
                "display_order": order,
                "stored": j.label,
                "matches_intended": j.label == item.answer,
                "matches_aggregate": result is not None and j.label == result.label,
                "implausible": j.implausible,
                "comment": j.comment,
                "seconds": j.seconds_spent,
                "source": j.source,
                "created_at": j.created_at,
                "quality": qualities.get(j.verifier_id),
            }
        )
    adjudications = list(item.adjudications.select_related("decided_by").order_by("-decided_at", "-id"))
    return {
        "item": item,
        "options": list(zip(OPTION_LETTERS, item.options)),
        "context": [
            {"speaker": domain.role_name(t.get("speaker")), "text": t.get("text", "")} for t in item.context.turns
        ] if item.task == Task.RETROSPECTIVE else [],
        "judgments": rows,
        "result": result,
        "adjudications": adjudications,
        "decision": adjudications[0] if adjudications else None,
        "flags": list(item.flags.select_related("flagged_by", "handled_by").order_by("-created_at")),
    }


# Agreement per verifier and between verifiers: review/verifier_agreement.py (issue 23).
