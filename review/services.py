"""Writes of the review app: guidelines, flags and adjudications. Views, the API, the
admin and the `guideline_set` command are thin doors onto these functions."""
from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from annotation.models import Batch, Item
from verification.models import Claim, ClaimStatus, Judgment

from .flag_tallies import flag_moved
from .item_summaries import item_summaries_decision_refresh, item_summaries_flags_refresh
from .models import EXAMPLE_TOPICS, Adjudication, Decision, Flag, FlagReason, FlagStatus, Guideline, GuidelineExample

MAX_TEXT = 20_000


@transaction.atomic
def guideline_set(*, batch_name: str, text: str, examples: dict[str, str] | None = None, updated_by: User | None = None) -> Guideline:
    """Create or replace a batch's guideline; `examples` (topic -> Markdown) replace the old ones
    when given (a topic left blank has no example). The in-app editor, the API, the command and
    the admin's form all write through here."""
    batch = Batch.objects.filter(name=batch_name).first()
    if batch is None:
        raise ValidationError({"batch": f"no batch named {batch_name!r}"})
    text = (text or "").strip()
    if not text:
        raise ValidationError({"text": "a guideline needs some text"})
    if len(text) > MAX_TEXT:
        raise ValidationError({"text": f"at most {MAX_TEXT} characters"})
    for example in (examples or {}).values():
        if isinstance(example, str) and len(example) > MAX_TEXT:
            raise ValidationError({"examples": f"at most {MAX_TEXT} characters an example"})
    topics = {code for code, _ in EXAMPLE_TOPICS}
    if examples is not None:
        examples = {topic: example for topic, example in examples.items() if not (isinstance(example, str) and not example.strip())}
    for topic, example in (examples or {}).items():
        if topic not in topics:
            raise ValidationError({"examples": f"{topic!r} is not one of {', '.join(sorted(topics))}"})
        if not isinstance(example, str) or not example.strip():
            raise ValidationError({"examples": f"{topic}: an example needs some text"})
    guideline, _ = Guideline.objects.update_or_create(batch=batch, defaults={"text": text, "updated_by": updated_by})
    if examples is not None:
        guideline.examples.all().delete()
        GuidelineExample.objects.bulk_create(
            [GuidelineExample(guideline=guideline, topic=topic, text=example.strip()) for topic, example in sorted(examples.items())]
        )
    return guideline


def _item_seen_by(*, verifier: User, item_id: int) -> bool:
    """Only an item a verifier holds or has answered may be flagged by them."""
    return (
        Claim.objects.filter(verifier=verifier, item_id=item_id, status=ClaimStatus.ACTIVE).exists()
        or Judgment.objects.filter(verifier=verifier, item_id=item_id).exists()
    )


@transaction.atomic
def flag_submit(*, verifier: User, claim_id: uuid.UUID | str, reason: str, comment: str = "") -> Flag:
    """A verifier flags the item of one of their claims. Flagging again replaces the reason and
    reopens the flag. Nothing about the item (its key, other people's answers) is returned."""
    claim = Claim.objects.filter(pk=claim_id, verifier=verifier).select_related("item").first()
    if claim is None or not _item_seen_by(verifier=verifier, item_id=claim.item_id):
        raise ValidationError({"claim": "this item is not yours to flag"})
    comment = (comment or "").strip()
    if reason not in FlagReason.values:
        raise ValidationError({"reason": f"must be one of {', '.join(FlagReason.values)}"})
    if reason == FlagReason.OTHER and not comment:
        raise ValidationError({"comment": "say what is wrong when the reason is 'other'"})
    if len(comment) > 5000:
        raise ValidationError({"comment": "at most 5000 characters"})
    before = Flag.objects.filter(item_id=claim.item_id, flagged_by=verifier).values_list("status", flat=True).first()
    flag, _ = Flag.objects.update_or_create(
        item_id=claim.item_id,
        flagged_by=verifier,
        defaults={"reason": reason, "comment": comment, "status": FlagStatus.OPEN, "handled_by": None, "handled_at": None, "note": ""},
    )
    flag_moved(before=before, after=FlagStatus.OPEN)  # issue 23: the counts per status
    item_summaries_flags_refresh(item_ids=[claim.item_id])
    return flag


@transaction.atomic
def flag_handle(*, flag_id: int, status: str, staff: User, note: str = "") -> Flag:
    """Staff resolve (the item was fixed or adjudicated) or dismiss (nothing wrong) a flag."""
    if status not in (FlagStatus.RESOLVED, FlagStatus.DISMISSED):
        raise ValidationError({"status": "resolve or dismiss"})
    flag = Flag.objects.select_for_update().filter(pk=flag_id).first()
    if flag is None:
        raise ValidationError({"flag": "no such flag"})
    flag_moved(before=flag.status, after=status)  # issue 23: the counts per status
    flag.status = status
    flag.handled_by = staff
    flag.handled_at = timezone.now()
    flag.note = (note or "").strip()
    flag.save(update_fields=["status", "handled_by", "handled_at", "note"])
    item_summaries_flags_refresh(item_ids=[flag.item_id])
    return flag


@transaction.atomic
def adjudication_record(*, item_id: str, decision: str, reason: str, staff: User) -> Adjudication:
    """Record a staff decision on an item (keep: released with its intended answer even if the
    aggregate disagreed; drop: never released). The open flags on the item are resolved."""
    item = Item.objects.filter(item_id=item_id).first()
    if item is None:
        raise ValidationError({"item": f"no item {item_id!r}"})
    if item.is_gold:
        raise ValidationError({"item": "gold items are attention checks and are never released"})
    if decision not in Decision.values:
        raise ValidationError({"decision": "keep or drop"})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "give the reason for the decision"})
    adjudication = Adjudication.objects.create(item=item, decision=decision, reason=reason, decided_by=staff)
    resolved = Flag.objects.filter(item=item, status=FlagStatus.OPEN).update(
        status=FlagStatus.RESOLVED, handled_by=staff, handled_at=timezone.now(), note=f"adjudicated: {decision}"
    )
    flag_moved(before=FlagStatus.OPEN, after=FlagStatus.RESOLVED, n=resolved)
    item_summaries_decision_refresh(item_ids=[item.pk])
    item_summaries_flags_refresh(item_ids=[item.pk])
    return adjudication


# --- issue 23: bulk actions of the item list (h3) -----------------------------------------------


@transaction.atomic
def adjudications_record_bulk(*, item_ids: list[str], decision: str, reason: str, staff: User) -> list[Adjudication]:
    """Keep or drop the items named, with one reason, each as `adjudication_record` does: all or
    none (an unknown or gold item refuses the lot, naming it)."""
    decisions = []
    for item_id in sorted(set(item_ids)):
        try:
            decisions.append(adjudication_record(item_id=item_id, decision=decision, reason=reason, staff=staff))
        except ValidationError as exc:
            messages = exc.message_dict if hasattr(exc, "error_dict") else {"item": exc.messages}
            raise ValidationError({field: [f"{item_id}: {m}" for m in found] for field, found in messages.items()}) from None
    return decisions


@transaction.atomic
def flags_resolve(*, item_ids: list[str], staff: User, note: str = "") -> int:
    """Resolve the open flags of the items named; returns how many flags."""
    items = list(Item.objects.filter(item_id__in=sorted(set(item_ids))).order_by("pk").values_list("pk", flat=True))
    resolved = Flag.objects.filter(item_id__in=items, status=FlagStatus.OPEN).update(
        status=FlagStatus.RESOLVED, handled_by=staff, handled_at=timezone.now(), note=(note or "").strip() or "resolved in bulk"
    )
    flag_moved(before=FlagStatus.OPEN, after=FlagStatus.RESOLVED, n=resolved)  # the counts per status
    item_summaries_flags_refresh(item_ids=items)
    return resolved
