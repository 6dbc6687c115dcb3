"""What verifiers do: claims on items from a batch queue, and their judgments."""
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.models import Batch, Item


class Label(models.TextChoices):
    A = "A", "A"
    B = "B", "B"
    C = "C", "C"
    D = "D", "D"
    NOTA = "NOTA", "None of the above (shown option)"
    NONE = "NONE", "None is correct"
    MULTIPLE = "MULTIPLE", "More than one is correct"


class ClaimStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    ANSWERED = "answered", "Answered"
    SKIPPED = "skipped", "Skipped"
    EXPIRED = "expired", "Expired"


class SkipReason(models.TextChoices):
    """Why a verifier gave an item back (asked on every skip; staff see it in the admin)."""

    UNCLEAR = "unclear", "The question or the options are unclear"
    DIALOGUE = "dialogue", "The dialogue is cut off or garbled"
    OVERLAP = "overlap", "Two options say the same thing"
    UNSURE = "unsure", "I cannot judge this one"
    OTHER = "other", "Another reason"


class Claim(models.Model):
    """A verifier holds an item for a lease; answering it turns it into a judgment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="claims")
    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="claims")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="claims")
    status = models.CharField(max_length=10, choices=ClaimStatus.choices, default=ClaimStatus.ACTIVE)
    display_order = models.CharField(max_length=5, help_text="original letters in the order shown, e.g. CADB")
    # one instant for the claims made together (a context's retrospective row: selectors.context_row_for)
    claimed_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    is_gold = models.BooleanField(default=False, help_text="served as an attention check")
    skip_reason = models.CharField(max_length=10, choices=SkipReason.choices, blank=True, help_text="why it was skipped")
    exposed = models.BooleanField(
        default=False, help_text="the verifier had already seen a related item of the context (least-exposure fallback)"
    )

    class Meta:
        ordering = ["claimed_at"]
        constraints = [
            # A verifier holds at most one live claim on an item.
            models.UniqueConstraint(
                fields=["item", "verifier"], condition=Q(status="active"), name="claim_one_active_per_item_verifier"
            ),
        ]
        indexes = [
            models.Index(fields=["item", "status"]), models.Index(fields=["verifier", "batch", "status"]),
            # the live claims of a batch (the dashboard's in-progress items; issue 23): few, whatever the claims
            models.Index(fields=["batch", "expires_at"], condition=Q(status="active"), name="claim_active_by_batch"),
        ]


class Judgment(models.Model):
    """One verifier's answer to one item, stored in the item's original letters. Exactly once."""

    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="judgments")
    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.PROTECT, related_name="judgments")
    claim = models.OneToOneField(Claim, on_delete=models.SET_NULL, null=True, blank=True, related_name="judgment")
    label = models.CharField(max_length=10, choices=Label.choices)
    displayed_label = models.CharField(max_length=10, blank=True, help_text="the letter as it was shown")
    implausible = models.JSONField(default=list, blank=True, help_text="original letters marked implausible")
    comment = models.TextField(blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    idempotency_key = models.UUIDField(unique=True, default=uuid.uuid4)
    source = models.CharField(max_length=10, default="form", help_text="form, api or import")
    exposed = models.BooleanField(
        default=False,
        help_text="its verifier had already seen a related item of the context (see DIALTOM_EXPOSED_JUDGMENTS)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "verifier"], name="judgment_one_per_item_verifier"),
            models.CheckConstraint(condition=Q(label__in=Label.values), name="judgment_label_valid"),
        ]
        indexes = [
            models.Index(fields=["batch", "item"]),
            # the latest commented judgments (the review queue, issue 23): few, whatever the judgments
            models.Index(fields=["-created_at", "-id"], condition=~Q(comment=""), name="judgment_commented_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.verifier_id} → {self.item_id}: {self.label}"


class QueueSlot(models.Model):
    """The queue row of one item: how many verifiers hold or have answered it, out of `needed`.

    The claim statement (`statements.claim_next`) locks these rows with `FOR NO KEY UPDATE
    SKIP LOCKED` and raises `taken` with `taken < needed` in its WHERE: PostgreSQL re-checks
    that against the newest version of the locked row, so concurrent verifiers can never push
    an item past k. The check constraint is the last line of defence.
    """

    item = models.OneToOneField("annotation.Item", on_delete=models.CASCADE, primary_key=True, related_name="queue_slot")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="queue_slots")
    needed = models.PositiveSmallIntegerField(help_text="judgments needed (the batch's overlap k; unbounded for gold)")
    taken = models.PositiveSmallIntegerField(default=0, help_text="active claims + answered claims/judgments")
    answered = models.PositiveSmallIntegerField(
        default=0, help_text="judgments stored; the answer that brings it to `needed` queues the batch's follow-up check"
    )
    is_gold = models.BooleanField(default=False)
    priority = models.FloatField(
        default=0.0, help_text="adaptive overlap: chance one more judgment flips the retention decision (served first)"
    )
    position = models.BigIntegerField(default=0, help_text="where the item stands in the queue, drawn from a secret")
    # --- issue 23 summaries (verification/tallies.py): kept by the answer statement and the aggregation job
    judged = models.PositiveIntegerField(default=0, help_text="judgments stored, exposed ones included (progress)")
    aggregated = models.BooleanField(default=False, help_text="the item has a result in a succeeded aggregation run")

    class Meta:
        ordering = ["batch", "item"]
        constraints = [
            models.CheckConstraint(condition=Q(taken__lte=models.F("needed")), name="queue_slot_taken_within_needed"),
        ]
        indexes = [
            # The pick walks this index in queue order (`queue.queue_order`) and stops at the first slot it may take.
            models.Index(
                "batch", "is_gold", models.F("priority").desc(), "position", "item",
                condition=Q(taken__lt=models.F("needed")), name="queue_slot_open_in_order",
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.taken}/{self.needed}"


class QueueTurn(models.Model):
    """One row per verifier: every claim takes a turn (`claims` goes up by one).

    It is how two requests of one verifier (two tabs, a double click) never claim at once:
    the claim statement (`statements.claim_next`) moves the counter only if it still holds
    the value the statement started from, so the second of two concurrent requests finds it
    moved, takes nothing, and looks again, now seeing the first one's claim. It replaces a
    lock on the user row, without a second round trip.
    """

    verifier = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="queue_turn")
    claims = models.PositiveBigIntegerField(default=0, help_text="claim statements this verifier has run")

    def __str__(self) -> str:
        return f"{self.verifier_id}: {self.claims}"


class AdaptiveOverlap(models.Model):
    """A batch opened with k-min..k-max: its policy (recorded when opened) and the state of its rounds.

    The batch's `overlap` is k-min; `aggregation.overlap` decides, at each refresh of a settled
    batch, which items get one more judgment (their slot's `needed` goes up by one, up to k-max).
    """

    batch = models.OneToOneField("annotation.Batch", on_delete=models.CASCADE, primary_key=True, related_name="adaptive_overlap")
    k_min = models.PositiveSmallIntegerField()
    k_max = models.PositiveSmallIntegerField()
    policy = models.JSONField(default=dict, help_text="aggregation.overlap.OverlapPolicy as recorded when the batch was opened")
    rounds = models.PositiveIntegerField(default=0, help_text="refreshes that decided the batch")
    undecided = models.PositiveIntegerField(default=0, help_text="items the last refresh asked one more judgment for")
    settled = models.BooleanField(default=False, help_text="the last refresh asked for nothing more: allocation done")
    settled_short = models.PositiveIntegerField(
        default=0, help_text="items the sweep settled below what they were asked: no pool member may give their next judgment"
    )
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch"]
        constraints = [
            models.CheckConstraint(condition=Q(k_min__gte=1) & Q(k_max__gte=models.F("k_min")), name="adaptive_overlap_k_range"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id}: k {self.k_min}..{self.k_max}"


class BatchQueue(Batch):
    """The admin's view of a batch as a queue (pause / close / reopen, pools)."""

    class Meta:
        proxy = True
        verbose_name = "batch queue"


class AuditItem(Item):
    """The admin's view of items for the audit (mark / unmark gold)."""

    class Meta:
        proxy = True
        verbose_name = "audit item"


# --- Summaries of agreement between verifiers (kept by pair_tallies.py) -----------------------
# Updated in the transaction that stores or changes a judgment (the answer statement's
# `pair_tallies_sql`, or `pair_tallies.judgment_added` / `judgment_relabelled` on the slow
# path); `pair_tallies.pairs_rebuild` rebuilds them from the judgments. Gold items are left out.


class ItemAnswers(models.Model):
    """The answers an (audited, not gold) item holds so far: who a new answer was co-judged with, and whether they agree."""

    item = models.OneToOneField("annotation.Item", on_delete=models.CASCADE, primary_key=True, related_name="answers_so_far")
    answers = models.JSONField(default=dict, help_text="verifier id (as text) → label, in original letters")

    def __str__(self) -> str:
        return f"{self.item_id}: {self.answers}"


class VerifierPairTally(models.Model):
    """Per batch × task × pair of verifiers (a < b): items both judged, and on how many they gave the same label."""

    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=20)
    verifier_a = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    verifier_b = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    co_judged = models.PositiveIntegerField(default=0)
    agreed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "task", "verifier_a", "verifier_b"], name="verifier_pair_tally_key"),
            models.CheckConstraint(condition=Q(verifier_a__lt=models.F("verifier_b")), name="verifier_pair_tally_ordered"),
        ]


class VerifierPairTotal(models.Model):
    """`VerifierPairTally` summed over batches (per task × pair)."""

    task = models.CharField(max_length=20)
    verifier_a = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    verifier_b = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    co_judged = models.PositiveIntegerField(default=0)
    agreed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "verifier_a", "verifier_b"], name="verifier_pair_total_key"),
            models.CheckConstraint(condition=Q(verifier_a__lt=models.F("verifier_b")), name="verifier_pair_total_ordered"),
        ]


class VerifierSecondsTally(models.Model):
    """Per batch × task × verifier: judgments per bucket of seconds spent (`pair_tallies.seconds_bucket`;
    -1: not timed). Their sum is the verifier's judgments; the median comes from the buckets."""

    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=20)
    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    bucket = models.IntegerField()
    judgments = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "task", "verifier", "bucket"], name="verifier_seconds_tally_key"),
        ]


class VerifierSecondsTotal(models.Model):
    """`VerifierSecondsTally` summed over batches (per task × verifier × bucket)."""

    task = models.CharField(max_length=20)
    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    bucket = models.IntegerField()
    judgments = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "verifier", "bucket"], name="verifier_seconds_total_key"),
        ]
# --- issue 23: small summaries kept as the work happens (verification/tallies.py) -------------------


class BatchTally(models.Model):
    """Per batch × task × gold: item and judgment counts behind the dashboard's progress (one
    row per cell, whatever the number of items). `done` counts each item's judgments up to the
    batch's overlap k; `complete` items have k; the `agg_*` counts are the same for the items
    with a result in a succeeded run."""

    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=15)
    is_gold = models.BooleanField(default=False)
    items = models.PositiveIntegerField(default=0)
    judged_items = models.PositiveIntegerField(default=0)
    complete_items = models.PositiveIntegerField(default=0)
    done = models.PositiveBigIntegerField(default=0)
    judgments = models.PositiveBigIntegerField(default=0)
    exposed = models.PositiveBigIntegerField(default=0)
    agg_items = models.PositiveIntegerField(default=0)
    agg_judged = models.PositiveIntegerField(default=0)
    agg_complete = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "task", "is_gold"], name="batch_tally_one_per_cell")]


class BatchDayTally(models.Model):
    """Judgments per batch per (UTC) day, and the first of them: throughput and the ETA."""

    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    judgments = models.PositiveBigIntegerField(default=0)
    first_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "day"], name="batch_day_tally_one_per_day")]
        indexes = [models.Index(fields=["day"])]


class VerifierTally(models.Model):
    """Per verifier: the counts behind the dashboard's people table."""

    verifier = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+")
    judgments = models.PositiveBigIntegerField(default=0)
    n_none = models.PositiveBigIntegerField(default=0)
    n_multiple = models.PositiveBigIntegerField(default=0)
    gold_n = models.PositiveBigIntegerField(default=0)
    gold_ok = models.PositiveBigIntegerField(default=0)
    l_a = models.PositiveBigIntegerField(default=0)
    l_b = models.PositiveBigIntegerField(default=0)
    l_c = models.PositiveBigIntegerField(default=0)
    l_d = models.PositiveBigIntegerField(default=0)


class VerifierSecondCount(models.Model):
    """Per verifier × whole second (`floor(seconds_spent)`): judgments, for the median."""

    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    second = models.PositiveIntegerField()
    n = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verifier", "second"], name="verifier_seconds_tally_one")]
