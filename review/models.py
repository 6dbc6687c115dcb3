"""What staff add around the audit: per-batch guidelines, verifiers' flags on items, and
staff adjudications (keep / drop) that the release builder honours."""
from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Attribute


class Guideline(models.Model):
    """A batch's instructions (Markdown), shown before a verifier's first item and on `g`."""

    batch = models.OneToOneField("annotation.Batch", on_delete=models.CASCADE, related_name="guideline")
    text = models.TextField(help_text="Markdown; raw HTML is not rendered")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["batch__name"]

    def __str__(self) -> str:
        return f"guideline of {self.batch}"


EXAMPLE_TOPICS = Attribute.choices + [("prospective", "Prospective (continuations)")]


class GuidelineExample(models.Model):
    """A worked example for one attribute (or the prospective task) in a guideline (Markdown)."""

    guideline = models.ForeignKey(Guideline, on_delete=models.CASCADE, related_name="examples")
    topic = models.CharField(max_length=15, choices=EXAMPLE_TOPICS)
    text = models.TextField(help_text="Markdown")

    class Meta:
        ordering = ["guideline", "topic", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(topic__in=[c[0] for c in EXAMPLE_TOPICS]), name="guideline_example_topic_valid"),
        ]


class FlagReason(models.TextChoices):
    OPTIONS_OVERLAP = "options_overlap", "Options overlap"
    DIALOGUE_CUT = "dialogue_cut", "Dialogue cut"
    QUESTION_UNCLEAR = "question_unclear", "Question unclear"
    OTHER = "other", "Other"


class FlagStatus(models.TextChoices):
    OPEN = "open", "Open"
    RESOLVED = "resolved", "Resolved"
    DISMISSED = "dismissed", "Dismissed"


class Flag(models.Model):
    """A verifier's report that an item is faulty; staff resolve or dismiss it."""

    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="flags")
    flagged_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="flags")
    reason = models.CharField(max_length=20, choices=FlagReason.choices)
    comment = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=FlagStatus.choices, default=FlagStatus.OPEN, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    handled_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    handled_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, help_text="staff's note on resolving or dismissing")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "flagged_by"], name="flag_one_per_item_verifier"),
            models.CheckConstraint(condition=Q(reason__in=FlagReason.values), name="flag_reason_valid"),
            models.CheckConstraint(condition=Q(status__in=FlagStatus.values), name="flag_status_valid"),
            models.CheckConstraint(condition=~Q(reason=FlagReason.OTHER) | ~Q(comment=""), name="flag_other_needs_comment"),
        ]
        indexes = [models.Index(fields=["status", "-created_at", "-id"], name="flag_queue_order")]  # a page of the queue

    def __str__(self) -> str:
        return f"{self.item_id} flagged by {self.flagged_by_id}: {self.reason}"


class Decision(models.TextChoices):
    KEEP = "keep", "Keep (the intended answer stands)"
    DROP = "drop", "Drop from releases"


class Adjudication(models.Model):
    """A staff decision on an item. Append-only: the latest one per item is in force, the
    earlier ones are its history (who decided what, when, why)."""

    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="adjudications")
    decision = models.CharField(max_length=4, choices=Decision.choices)
    reason = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    decided_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-decided_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(decision__in=Decision.values), name="adjudication_decision_valid"),
            models.CheckConstraint(condition=~Q(reason=""), name="adjudication_reason_required"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.decision}"


class DecisionInForce(models.Model):
    """The decision in force on each adjudicated item: its latest Adjudication (by `decided_at`,
    then `id`). A database view (migration `decision_in_force`), so `selectors.adjudicated` joins
    the few decisions once a statement: as a subquery a row it was three subqueries for each of a
    release's millions of results (30 s a statement at 4M items)."""

    item = models.OneToOneField("annotation.Item", primary_key=True, on_delete=models.DO_NOTHING,
                                related_name="decision_in_force", db_constraint=False)
    decision = models.CharField(max_length=4, choices=Decision.choices)
    adjudication = models.OneToOneField(Adjudication, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)

    class Meta:
        managed = False
        db_table = "review_decision_in_force"
        verbose_name_plural = "decisions in force"

    def __str__(self) -> str:
        return f"{self.item_id}: {self.decision}"


class FlagTally(models.Model):
    """Flags per status (issue 23), kept by the services that raise and handle them (`review.flag_tallies`)."""

    status = models.CharField(max_length=10, primary_key=True)
    n = models.PositiveIntegerField(default=0)
