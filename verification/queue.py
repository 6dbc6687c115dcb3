"""The audit queue's rules, in one place: which queue slots a verifier may be given, in what
order, when a gold item is due, and what a batch needs of its pools.

The claim statement (`statements.claim_next`, compiled from `slots_open_to` below) and
`selectors.queue_progress_for_batches` (the progress a verifier sees) both read their rules
from here, so the progress bar counts exactly what the queue would hand out.

**The context rule** (issue 12). A prospective item's profile is its context's correct
retrospective options, and every profile-bearing item of a context (its prospective
items, one per state, and their easy and counterfactual variants) holds the same true
continuation. So, per context, a verifier gets *either* its retrospective items *or one*
profile-bearing item: never both, never two. "Seen" counts every claim the verifier ever
held on the context's items (answered, skipped, lapsed: they were read) and every judgment,
in any batch. Its retrospective items come in a row: the claim of the first reserves the
others for the same verifier (`statements.claim_next`), so the dialogue is read once.

**Across windows** (issue 20). A dialogue can show another window's true continuation: in
the authors' pool, window w's continuation opens window w+1's dialogue
(`annotation.ContinuationReveal`, found at import). So a verifier who has seen a dialogue
(a retrospective item) never gets a profile-bearing item of a context whose continuation
that dialogue shows, and a verifier who has seen a profile-bearing item never gets the
retrospective items of a dialogue that shows its continuation: in either order, in any batch.

**The least-exposure fallback.** With k = 3 and the authors' shape (6 retrospective items,
6 prospective ones) a context needs 3 + 6 × 3 = 21 different verifiers. When a batch needs
more than its pools hold (`batch_staffing`), a verifier who has nothing left under the rule
gets, among the items they have not judged, those of the contexts they have seen least of;
the claim and its judgment record `exposed=True`, and aggregation can drop those judgments
(`DIALTOM_EXPOSED_JUDGMENTS`).

**Order.** Slots are served by `queue_order()`: a position drawn from a secret per item
(`QueueSlot.position`), the same order for gold and ordinary items, counterfactual, easy
and hard ones alike, so nothing about an item's kind shows in when it arrives.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
from dataclasses import dataclass

from django.conf import settings
from django.db.models import (
    BooleanField, Count, Exists, ExpressionWrapper, F, FilteredRelation, IntegerField, Max, OuterRef, Q, QuerySet, Subquery, Sum, Value,
)
from django.db.models.functions import Coalesce

from accounts.models import Role, User
from annotation.models import OPTION_LETTERS, Batch, ContinuationReveal, Item, Task, Variant

from .models import Claim, ClaimStatus, Judgment, QueueSlot

AUDIT_ROLES = (Role.VERIFIER, Role.PARTICIPANT)  # who works an audit queue (User.can_audit)
# Claims through which a verifier was served an item (and which count against a gold rate).
SERVED = (ClaimStatus.ACTIVE, ClaimStatus.ANSWERED, ClaimStatus.SKIPPED)


# --- the secret behind every order a verifier sees ------------------------------------------


def shuffle_key() -> bytes:
    """`DIALTOM_SHUFFLE_SECRET`, or (outside production) a key derived from SECRET_KEY."""
    secret = settings.DIALTOM_SHUFFLE_SECRET
    if secret:
        return secret.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"dialtom-shuffle-secret", hashlib.sha256).digest()


def _secret_draw(*parts) -> int:
    digest = hmac.new(shuffle_key(), ":".join(str(p) for p in parts).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed bigint


# The 24 orders four options can be shown in; a draw from the secret picks one.
DISPLAY_ORDERS = tuple("".join(p) for p in itertools.permutations(OPTION_LETTERS))


def display_order_for(*, verifier_id: int, item_pk: int) -> str:
    """The order the options are shown to one verifier: reproducible, unguessable without the secret.

    The claim statement computes the same in SQL (`statements.display_order_sql`), from the
    HMAC keys of `hmac_pads()`; a test holds the two to the same answers.
    """
    return DISPLAY_ORDERS[_secret_draw("display", verifier_id, item_pk) % len(DISPLAY_ORDERS)]


def hmac_pads() -> tuple[bytes, bytes]:
    """HMAC-SHA256's inner and outer padded keys for the shuffle secret: with them, SQL's
    `sha256(outer || sha256(inner || message))` is `hmac.new(shuffle_key(), message, sha256)`."""
    return _pads_of(shuffle_key())


@functools.lru_cache(maxsize=8)
def _pads_of(key: bytes) -> tuple[bytes, bytes]:
    """Derived once per secret, not on every claim (the claim statement passes them each time)."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)


def queue_position_for(*, item_id: str) -> int:
    """Where an item stands in every queue it is in (`QueueSlot.position`): drawn from the
    secret and the item's id, so one database and the next (a restore, a test run) agree."""
    return _secret_draw("position", item_id)


def queue_order(*, exposure_allowed: bool = False) -> tuple:
    """The order slots are served in: under the fallback, unexposed slots and least exposure
    first; then adaptive overlap's priority (the most informative judgment first); then the
    secret position, the same for every kind of item."""
    first = ("exposed", "exposure") if exposure_allowed else ()
    return (*first, "-priority", "position", "item_id")


def offers_nota(*, task: str, variant: str) -> bool:
    """Every prospective item offers "None of the above", whatever its variant, so that a
    counterfactual item (whose answer is NOTA) looks like any other; retrospective items do
    not (a counterfactual one, which the data formats do not make, still could be answered)."""
    return task == Task.PROSPECTIVE or variant == Variant.COUNTERFACTUAL


# --- which slots a verifier may be given ------------------------------------------------------


def _related_seen(verifier: User, *, profile_bearing_only: bool):
    """Exists: the verifier has seen another item of the slot's context (a claim of any status, or a judgment)."""
    related = {"verifier": verifier, "item__context_id": OuterRef("item_context")}
    if profile_bearing_only:
        related["item__task"] = Task.PROSPECTIVE
    claims = Claim.objects.filter(**related).exclude(item_id=OuterRef("item_id"))
    judged = Judgment.objects.filter(**related).exclude(item_id=OuterRef("item_id"))
    return Q(Exists(claims)) | Q(Exists(judged))


def _seen_in(verifier: User, *, context: OuterRef, task: str):
    """Exists: the verifier has seen an item of this task of that context (a claim of any status, or a judgment)."""
    related = {"verifier": verifier, "item__context_id": context, "item__task": task}
    return Q(Exists(Claim.objects.filter(**related))) | Q(Exists(Judgment.objects.filter(**related)))


def _revealing_dialogue_seen(verifier: User):
    """Exists: the verifier has read a dialogue that shows the slot's context's true continuation."""
    dialogues = ContinuationReveal.objects.filter(continuation_of_id=OuterRef("item_context"))
    return Q(Exists(dialogues.filter(_seen_in(verifier, context=OuterRef("dialogue_id"), task=Task.RETROSPECTIVE))))


def _revealed_continuation_seen(verifier: User):
    """Exists: the verifier has seen a profile-bearing item whose true continuation the slot's dialogue shows."""
    targets = ContinuationReveal.objects.filter(dialogue_id=OuterRef("item_context"))
    return Q(Exists(targets.filter(_seen_in(verifier, context=OuterRef("continuation_of_id"), task=Task.PROSPECTIVE))))


def exposure_rule(verifier: User) -> Q:
    """True for a slot the context rule withholds from this verifier: its context's profile-bearing
    item was seen, or the slot is itself profile-bearing and anything else of the context was seen,
    or a dialogue the verifier read shows the slot's continuation, or the slot's dialogue shows the
    continuation of a profile-bearing item the verifier saw."""
    return (
        _related_seen(verifier, profile_bearing_only=True)
        | (Q(item_task=Task.PROSPECTIVE) & (_related_seen(verifier, profile_bearing_only=False) | _revealing_dialogue_seen(verifier)))
        | (Q(item_task=Task.RETROSPECTIVE) & _revealed_continuation_seen(verifier))
    )


def continuation_read(verifier) -> Q:
    """For rows annotated `item_context` (a slot, a judgment): the verifier has read a dialogue that
    shows that context's true continuation. `verifier` as seen from inside the claims' subquery."""
    return _revealing_dialogue_seen(verifier)


def exposed_judgments_count() -> bool:
    """Whether an exposed claim and its judgment count towards an item's k: only when aggregation
    uses them (`DIALTOM_EXPOSED_JUDGMENTS=include`). With `exclude` (the default) they do not, so
    the item stays in the queue until k usable judgments are in."""
    return settings.DIALTOM_EXPOSED_JUDGMENTS == "include"


def counts_towards_k(*, exposed: bool) -> bool:
    return not exposed or exposed_judgments_count()


def judgments_towards_k() -> Q:
    """For an `Item` queryset: the filter of its judgments that count towards k (`counts_towards_k`)."""
    return Q() if exposed_judgments_count() else Q(judgments__exposed=False)


def slots_open_to(*, verifier, batch_ids, exposure_allowed: bool = False, short_only: bool = True) -> QuerySet[QueueSlot]:
    """Slots that still need judgments, that this verifier has not been served, and that the
    context rule allows (or, under the fallback, all of those, annotated `exposed`/`exposure`).

    `verifier` and `batch_ids` may be SQL expressions (`batch_ids` then names one batch): the claim statement (`statements.py`)
    compiles this very queryset into its pick, so the rules are written once.
    """
    mine = Claim.objects.filter(item_id=OuterRef("item_id"), verifier=verifier, status__in=SERVED)
    judged = Judgment.objects.filter(item_id=OuterRef("item_id"), verifier=verifier)
    if hasattr(batch_ids, "resolve_expression"):  # one batch, as SQL: `batch_id = (…)` lets a pick walk the queue index
        in_batches = Q(batch_id=batch_ids)
    else:
        in_batches = Q(batch_id__in=list(batch_ids))
    if short_only:  # the queue's own use; `slots_nobody_may_take` also asks of slots that are full for now
        in_batches &= Q(taken__lt=F("needed"))
    item = Item.objects.filter(pk=OuterRef("item_id")).order_by()
    qs = (
        QueueSlot.objects.filter(in_batches)
        # the slot's item's context and task as subqueries, not a join: the pick then reads the
        # slot table alone, in the order of its index, and stops at the first slot it may take
        .annotate(item_context=Subquery(item.values("context_id")[:1]), item_task=Subquery(item.values("task")[:1]))
        .exclude(Exists(mine))
        .exclude(Exists(judged))
        .annotate(exposed=ExpressionWrapper(exposure_rule(verifier), output_field=BooleanField()))
    )
    if not exposure_allowed:
        return qs.filter(exposed=False)
    seen_in_context = (
        Claim.objects.filter(verifier=verifier, item__context_id=OuterRef("item_context"))
        .order_by()
        .values("verifier")
        .annotate(n=Count("item_id", distinct=True))
        .values("n")
    )
    return qs.annotate(exposure=Coalesce(Subquery(seen_in_context, output_field=IntegerField()), Value(0)))


def slots_nobody_may_take(*, batch_id: int, item_pks=None) -> set[int]:
    """Items of an adaptive batch whose next judgment no member of its pools may give: each has
    judged it or holds it, or the context rule withholds it from them (under the fallback, when
    the batch is short of staff, only judging or holding it counts). Without `item_pks`: the
    slots still short of what they were asked; with them: those items, full or not (would one
    more judgment find anyone?). The overlap refresh does not ask what nobody can give, and the
    sweep settles a slot left short this way (`aggregation.adaptive`, docs/overlap.md)."""
    slots = QueueSlot.objects.filter(batch_id=batch_id, is_gold=False)
    slots = slots.filter(taken__lt=F("needed")) if item_pks is None else slots.filter(pk__in=list(item_pks))
    left = set(slots.values_list("item_id", flat=True))
    if not left:
        return left
    exposure_allowed = batch_staffing(batch_ids=[batch_id])[batch_id].short
    members = User.objects.filter(pools__batches=batch_id, role__in=AUDIT_ROLES, is_active=True).distinct().order_by("pk")
    for verifier in members:
        open_to = slots_open_to(verifier=verifier, batch_ids=[batch_id], exposure_allowed=exposure_allowed, short_only=False)
        left -= set(open_to.filter(item_id__in=left).values_list("item_id", flat=True))
        if not left:
            break
    return left


# --- gold items ----------------------------------------------------------------------------------


def gold_due(*, served: int, gold_served: int, rate: float) -> bool:
    """Whether the next item a verifier is served should be a gold one (the batch's gold rate)."""
    return rate > 0 and gold_served < rate * (served + 1)


def gold_planned(*, ordinary: int, rate: float, available: int) -> int:
    """How many gold items a verifier served `ordinary` regular items gets in all, by `gold_due`.

    The progress bar counts these from the start, so it moves the same whether the item in
    hand is gold or not.
    """
    gold = 0
    while gold < available and gold_due(served=ordinary + gold, gold_served=gold, rate=rate):
        gold += 1
    return gold


# --- what a batch needs of its pools -------------------------------------------------------------


@dataclass(frozen=True)
class Staffing:
    """Verifiers a batch needs under the context rule, and how many its pools hold."""

    needed: int
    available: int

    @property
    def short(self) -> bool:
        return self.needed > self.available

    def as_dict(self) -> dict:
        return {"verifiers_needed": self.needed, "verifiers_available": self.available, "short": self.short}


def batch_staffing(*, batch_ids) -> dict[int, Staffing]:
    """Per batch: a context needs max(k of its retrospective items) + Σ k of its profile-bearing
    items different verifiers, plus, when its profile-bearing items are in the batch, the readers
    of every other dialogue that shows its true continuation (max k of that window's
    retrospective items, in any batch: the queue does not make them the same people); the batch
    needs what its most demanding context needs. The authors' shape at k = 3: 3 + 6 × 3 = 21 for a
    session's last window, 21 + 3 = 24 for a window whose continuation opens the next one."""
    ids = list(batch_ids)
    k = Coalesce("queue_slot__needed", "batch__overlap")  # an item's slot may not exist yet
    # the slots of these batches only (issue 23): an index scan, not a pass over every slot
    slot = FilteredRelation("queue_slot", condition=Q(queue_slot__batch_id__in=ids))
    per_context = list(
        Item.objects.filter(batch_id__in=ids, is_gold=False).annotate(slot=slot)
        .annotate(slot_needed=F("slot__needed"))
        .values("batch_id", "context_id")
        .order_by()
        .annotate(
            retro=Coalesce(Max(Coalesce("slot_needed", "batch__overlap"), filter=Q(task=Task.RETROSPECTIVE)), 0),
            profile=Coalesce(Sum(Coalesce("slot_needed", "batch__overlap"), filter=Q(task=Task.PROSPECTIVE)), 0),
        )
        .values_list("batch_id", "context_id", "retro", "profile")
    )
    profile_contexts = {context for _, context, _, profile in per_context if profile}
    reveals = list(
        ContinuationReveal.objects.filter(continuation_of_id__in=profile_contexts).order_by().values_list("dialogue_id", "continuation_of_id")
    )
    readers = dict(
        Item.objects.filter(context_id__in={d for d, _ in reveals}, task=Task.RETROSPECTIVE, is_gold=False)
        .values("context_id").order_by()
        .annotate(k=Max(k)).values_list("context_id", "k")
    )
    other_readers: dict[int, int] = {}
    for dialogue, target in reveals:
        other_readers[target] = other_readers.get(target, 0) + (readers.get(dialogue) or 0)
    needed = dict.fromkeys(ids, 0)
    for batch_id, context, retro, profile in per_context:
        extra = other_readers.get(context, 0) if profile else 0
        needed[batch_id] = max(needed[batch_id], retro + profile + extra)
    available = dict(
        Batch.objects.filter(pk__in=ids)
        .values_list("pk")
        .annotate(n=Count("pools__members", distinct=True, filter=Q(pools__members__role__in=AUDIT_ROLES, pools__members__is_active=True)))
    )
    return {pk: Staffing(needed=needed[pk], available=available.get(pk, 0)) for pk in ids}
