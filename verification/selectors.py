"""Reads of the verification queue. What a verifier sees never includes the answer key,
other verifiers' judgments or any aggregate: `item_view_for` is the one place that turns
an item into what the verifier is shown."""
from __future__ import annotations

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.models import Role, User
from annotation.dialtom import continuation_turns
from annotation.models import NOTA, OPTION_LETTERS, Batch, BatchStatus, Speaker, Task

from . import queue
from .models import Claim, ClaimStatus, Judgment, QueueSlot


def batches_for_verifier(*, verifier: User) -> QuerySet[Batch]:
    """Open or paused batches opened to one of the verifier's pools."""
    return (
        Batch.objects.filter(pools__members=verifier, status__in=[BatchStatus.OPEN, BatchStatus.PAUSED])
        .distinct()
        .order_by("name")
    )


def batch_for_verifier(*, verifier: User, name: str) -> Batch | None:
    return Batch.objects.filter(name=name, pools__members=verifier).distinct().first()


def batch_for_verifier_or_404(*, verifier: User, name: str) -> Batch:
    """The batch of that name open to the verifier's pools, or a 404 (the pages' lookup)."""
    batch = batch_for_verifier(verifier=verifier, name=name)
    if batch is None:
        raise Http404("no such batch for you")
    return batch


def queue_progress_for(*, verifier: User, batch: Batch) -> dict:
    """done / assigned for one verifier in one batch: assigned = done + what is still open to them."""
    return queue_progress_for_batches(verifier=verifier, batches=[batch])[0]


def queue_progress_for_batches(*, verifier: User, batches) -> list[dict]:
    """Progress in several batches with a fixed number of queries (no N+1 on the batch list).

    assigned = done + held + what the queue (`queue.py`) would still hand this verifier: the
    open regular items the context rule allows, plus the gold items the batch's rate will mix
    in. `held_back` counts the regular items still needing judgments that the context rule
    withholds from this verifier (they have read the dialogue or a profile of the context),
    so the page can say why the total shrinks when one answer rules out its neighbours. Gold items are counted from the start, so claiming or answering one moves the counts
    exactly as a regular item does.
    """
    batches = list(batches)
    ids = [b.pk for b in batches]
    done = dict(
        Judgment.objects.filter(verifier=verifier, batch_id__in=ids).values_list("batch_id").annotate(n=Count("pk"))
    )
    judged = Judgment.objects.filter(item_id=OuterRef("item_id"), verifier=verifier)
    # live claims, and skipped items: they stay in the total (shown as skipped, restorable)
    # unless judged since
    served = {
        row["batch_id"]: row
        for row in Claim.objects.filter(verifier=verifier, batch_id__in=ids, status__in=queue.SERVED)
        .values("batch_id")
        .order_by()
        .annotate(
            live=Count("pk", filter=Q(status=ClaimStatus.ACTIVE, expires_at__gt=timezone.now())),
            ordinary=Count("pk", filter=Q(is_gold=False)),
            gold=Count("pk", filter=Q(is_gold=True)),
            skipped=Count("pk", filter=Q(status=ClaimStatus.SKIPPED) & ~Q(Exists(judged))),
        )
    }
    staffing = queue.batch_staffing(batch_ids=ids)
    fallback = [pk for pk in ids if staffing[pk].short]
    open_now: dict[tuple[int, bool], int] = {}
    held: dict[int, int] = {}
    for batch_ids, exposure_allowed in ((set(ids) - set(fallback), False), (fallback, True)):
        if batch_ids:
            # every slot not yet served to the verifier, split by the context rule (`exposed`):
            # outside the fallback, the exposed ones are held back, and the page says so
            rows = (
                queue.slots_open_to(verifier=verifier, batch_ids=batch_ids, exposure_allowed=True)
                .values_list("batch_id", "is_gold", "exposed")
                .order_by()
                .annotate(n=Count("pk"))
            )
            for batch_id, gold, exposed, n in rows:
                if exposed and not exposure_allowed:
                    if not gold:  # gold items are planned by rate, never named
                        held[batch_id] = held.get(batch_id, 0) + n
                    continue
                open_now[(batch_id, gold)] = open_now.get((batch_id, gold), 0) + n
    rows = []
    for batch in batches:
        n_done = done.get(batch.pk, 0)
        mine = served.get(batch.pk, {"live": 0, "ordinary": 0, "gold": 0, "skipped": 0})
        n_skipped = mine["skipped"]
        ahead = 0
        if batch.status != BatchStatus.CLOSED:
            ordinary = open_now.get((batch.pk, False), 0)
            gold_open = open_now.get((batch.pk, True), 0)
            planned = queue.gold_planned(
                ordinary=mine["ordinary"] + ordinary, rate=batch.gold_rate, available=mine["gold"] + gold_open
            )
            ahead = ordinary + max(0, planned - mine["gold"])
        assigned = n_done + n_skipped + mine["live"] + ahead
        rows.append(
            {
                "batch": batch.name,
                "status": batch.status,
                "done": n_done,
                "skipped": n_skipped,
                "held_back": held.get(batch.pk, 0) if batch.status != BatchStatus.CLOSED else 0,
                "assigned": assigned,
                "percent": round(100 * n_done / assigned) if assigned else 100,
            }
        )
    return rows


def recent_judgments_for(*, verifier: User, batch: Batch, limit: int = 10) -> list[Judgment]:
    return list(
        Judgment.objects.filter(verifier=verifier, batch=batch)
        .select_related("item", "claim")
        .order_by("-created_at", "-id")[:limit]
    )


def skipped_claims_for(*, verifier: User, batch: Batch) -> list[Claim]:
    """The verifier's skipped items in the batch (not judged since), newest first, to restore;
    each with `item_name` (attribute and question) for the list."""
    judged = Judgment.objects.filter(item_id=OuterRef("item_id"), verifier=verifier)
    claims = list(
        Claim.objects.filter(verifier=verifier, batch=batch, status=ClaimStatus.SKIPPED)
        .exclude(Exists(judged))
        .select_related("item")
        .order_by("-claimed_at")
    )
    for claim in claims:
        claim.item_name = item_name_for(item=claim.item)
    return claims


def _options_as_shown(*, item, display_order: str) -> list[dict]:
    options = [{"letter": shown, "text": item.options[OPTION_LETTERS.index(original)]}
               for shown, original in zip(OPTION_LETTERS, display_order)]
    if item.task == Task.PROSPECTIVE:  # a continuation reads as dialogue: one turn a line, with its speaker
        domain = item.context.domain
        for option in options:
            option["turns"] = [{"speaker": domain.role_name(t["speaker"]) if t["speaker"] else "", "text": t["text"]}
                               for t in continuation_turns(option["text"], domain)]
    if queue.offers_nota(task=item.task, variant=item.variant):
        options.append({"letter": NOTA, "text": "None of the above"})
    return options


def item_view_for(*, claim: Claim) -> dict:
    """The item as this verifier sees it (shuffled options; no answer key, no metadata).

    Its only reference is the claim's UUID: no item id, variant or (on a prospective item)
    attribute, which would tell a counterfactual or an easy item from a regular one.
    """
    item = claim.item
    domain = item.context.domain
    view = {
        "claim": str(claim.pk),
        "batch": claim.batch.name,
        "task": item.task,
        "domain": domain.code,
        "attribute": item.attribute if item.task == Task.RETROSPECTIVE else "",
        "question": item.question,
        "options": _options_as_shown(item=item, display_order=claim.display_order),
        "choices": [o["letter"] for o in _options_as_shown(item=item, display_order=claim.display_order)]
        + ["NONE", "MULTIPLE"],
        "expires_at": claim.expires_at.isoformat(),
    }
    if item.task == Task.RETROSPECTIVE:
        view["context"] = [
            {"speaker": domain.role_name(turn.get("speaker", Speaker.INITIATOR)), "text": turn.get("text", "")}
            for turn in item.context.turns
        ]
        view["target_speaker"] = domain.role_name(item.target_speaker) if item.target_speaker else ""
    else:
        view["profile"] = dict(item.profile or {})
    return view


def context_row_for(*, claim: Claim, previous: Judgment | None) -> dict | None:
    """Where a retrospective item stands in its context's row (`services.item_claim_next`
    claims them together, so the dialogue is read once): {"position", "total", "same_dialogue"}.

    The row is the claims made together with this one (same verifier, batch, context and
    claim time); a restored skip is a row of its own. `same_dialogue` is true when the
    verifier's previous answer (`previous`, their latest judgment in the batch) was about
    this dialogue, so the form can fold it away. None for a prospective item or a row of one.
    Counts claims only: nothing about an item's id, variant or gold status.
    """
    item = claim.item
    if item.task != Task.RETROSPECTIVE:
        return None
    row = Claim.objects.filter(
        verifier_id=claim.verifier_id, batch_id=claim.batch_id, item__context_id=item.context_id, claimed_at=claim.claimed_at
    ).aggregate(total=Count("pk"), position=Count("pk", filter=Q(expires_at__lte=claim.expires_at)))
    if row["total"] < 2:
        return None
    same = previous is not None and previous.item.context_id == item.context_id and previous.item.task == Task.RETROSPECTIVE
    return {"position": row["position"], "total": row["total"], "same_dialogue": same}


def item_name_for(*, item) -> str:
    """How an item is named in the verifier's own lists ("recent answers", "skipped"): its
    attribute (retrospective only, as on the form) and its question, never an id or hash."""
    attribute = item.get_attribute_display() if item.task == Task.RETROSPECTIVE and item.attribute else ""
    kind = attribute or ("Prospective" if item.task == Task.PROSPECTIVE else item.get_task_display())
    return f"{kind} · {item.question}" if item.question else kind


def recent_answers_view_for(*, judgments: list[Judgment]) -> list[dict]:
    """`recent_judgments_for` as the audit page lists them: each answer with its item's name
    (the judgments come with their items: no query per row)."""
    return [{**judgment_view_for(judgment=j), "item_name": item_name_for(item=j.item)} for j in judgments]


def judgment_view_for(*, judgment: Judgment) -> dict:
    """One of the verifier's own answers, as they gave it (displayed letters)."""
    order = judgment.claim.display_order if judgment.claim else "".join(OPTION_LETTERS)
    shown_marks = sorted(OPTION_LETTERS[order.index(letter)] for letter in judgment.implausible if letter in order)
    return {
        "id": judgment.pk,
        "claim": str(judgment.claim_id) if judgment.claim_id else "",
        "choice": judgment.displayed_label or judgment.label,
        "implausible": shown_marks,
        "comment": judgment.comment,
        "seconds_spent": judgment.seconds_spent,
        "created_at": judgment.created_at.isoformat(),
    }


def batch_completion(*, batch_id: int) -> dict:
    from .models import AdaptiveOverlap

    batch = Batch.objects.get(pk=batch_id)
    slots = QueueSlot.objects.filter(batch=batch, is_gold=False)
    incomplete = slots.exclude(Q(taken__gte=batch.overlap)).count()
    judged = Judgment.objects.filter(batch=batch, item__is_gold=False).count()
    total = slots.count()
    # an adaptive batch is complete once its last refresh asked for nothing more
    unsettled = AdaptiveOverlap.objects.filter(batch=batch, settled=False).exists()
    return {
        "batch": batch.name,
        "overlap": batch.overlap,
        "items": total,
        "judgments": judged,
        "complete": total > 0 and incomplete == 0 and judged >= total * batch.overlap and not unsettled,
    }


def gold_accuracy(*, batch: Batch | None = None) -> list[dict]:
    """Per verifier: how many gold items they answered and how many matched the known answer. Staff only."""
    qs = Judgment.objects.filter(item__is_gold=True, verifier__role=Role.VERIFIER)
    if batch is not None:
        qs = qs.filter(batch=batch)
    rows = (
        qs.values("verifier__username", "verifier__excluded_from_aggregation")
        .annotate(n=Count("pk"), correct=Count("pk", filter=Q(label=F("item__answer"))))
        .order_by("verifier__username")
    )
    return [
        {
            "verifier": r["verifier__username"],
            "excluded": r["verifier__excluded_from_aggregation"],
            "gold_answered": r["n"],
            "gold_correct": r["correct"],
            "accuracy": round(r["correct"] / r["n"], 4) if r["n"] else None,
        }
        for r in rows
    ]



def overlap_allocation(*, batch_ids) -> list[dict]:
    """How each batch's judgments were allocated, for release manifests: fixed k, or the
    adaptive policy recorded when the batch was opened and the rounds it took."""
    from .models import AdaptiveOverlap

    adaptive = {a.batch_id: a for a in AdaptiveOverlap.objects.filter(batch_id__in=list(batch_ids))}
    rows = []
    for batch in Batch.objects.filter(pk__in=list(batch_ids)).order_by("name"):
        a = adaptive.get(batch.pk)
        if a is None:
            rows.append({"batch": batch.name, "mode": "fixed", "k": batch.overlap})
        else:
            rows.append({"batch": batch.name, "mode": "adaptive", "k_min": a.k_min, "k_max": a.k_max,
                         "rounds": a.rounds, "settled": a.settled, "policy": a.policy})
    return rows
