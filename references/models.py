"""The crowd-worker reference workflow: reference sets, assignments, drafts, references.

Nine crowd workers write one free-text inference per mental-state attribute for each
context of a subset (a ReferenceSet). Those accepted are the gold-standard references
that model inferences are compared with (SimilarityRun).

These tables lived in `annotation` until issue 11 (migrations annotation 0005 and
references 0001–0002 moved them without touching a row).
"""
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Attribute, Speaker
from dialtom_site.jobs import JobFields

from .fields import AttributeListField


def all_attributes() -> list[str]:
    return list(Attribute.values)


def attribute_list(help_text: str) -> AttributeListField:
    """A list of attributes (in Attribute order), e.g. ["belief", "trust"]: a PostgreSQL array, JSON text on SQLite."""
    return AttributeListField(models.CharField(max_length=10, choices=Attribute.choices), default=all_attributes, help_text=help_text)


def _attributes_valid() -> Q:
    return Q(**{"attributes__contained_by": Attribute.values}) & Q(**{"attributes__len__gte": 1})


class ReferenceSetStatus(models.TextChoices):
    OPEN = "open", "Open"
    PAUSED = "paused", "Paused"
    CLOSED = "closed", "Closed"


class ReferenceSet(models.Model):
    """A subset of contexts that crowd workers write references for.

    The unit of work is (context, attribute): each attribute a member asks for gets
    `per_context` writers (k, 3 by default). One claim gives a worker a context and up to
    `attributes_per_worker` of its attributes that still need writers, so the form shows
    one attribute or several, not necessarily all six.
    """

    class Source(models.TextChoices):
        STRATIFIED = "stratified", "Stratified by domain (seeded)"
        IDS = "ids", "Uploaded list of context ids"
        AUTHORS = "authors", "The DialToM authors' written inferences (imported)"

    name = models.SlugField(max_length=100, unique=True)
    status = models.CharField(max_length=10, choices=ReferenceSetStatus.choices, default=ReferenceSetStatus.OPEN)
    per_context = models.PositiveSmallIntegerField(default=3, help_text="writers for each (context, attribute): k")
    attributes_per_worker = models.PositiveSmallIntegerField(
        default=6, help_text="how many of a context's attributes one claim gives a worker (1–6)"
    )
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.STRATIFIED)
    seed = models.IntegerField(null=True, blank=True)
    target_speaker = models.CharField(max_length=10, choices=Speaker.choices, default=Speaker.RECIPIENT)
    lease_minutes = models.PositiveSmallIntegerField(default=30, help_text="an untouched claim returns to the pool")
    min_chars = models.PositiveSmallIntegerField(default=20, help_text="minimum length of each inference")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(per_context__gte=1), name="referenceset_per_context_positive"),
            models.CheckConstraint(
                condition=Q(attributes_per_worker__gte=1, attributes_per_worker__lte=len(Attribute.values)),
                name="referenceset_attributes_per_worker_range",
            ),
            models.CheckConstraint(condition=Q(status__in=ReferenceSetStatus.values), name="referenceset_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class ReferenceSetContext(models.Model):
    """One context of a reference set. Its row is what the queue locks (SKIP LOCKED)."""

    reference_set = models.ForeignKey(ReferenceSet, on_delete=models.CASCADE, related_name="members")
    context = models.ForeignKey("annotation.Context", on_delete=models.PROTECT, related_name="reference_memberships")
    attributes = attribute_list("the attributes this set asks of the context; each is a unit with k writers")
    position = models.PositiveIntegerField(help_text="queue order (seeded)")

    class Meta:
        ordering = ["reference_set", "position"]
        constraints = [
            models.UniqueConstraint(fields=["reference_set", "context"], name="referencesetcontext_unique_context"),
            models.UniqueConstraint(fields=["reference_set", "position"], name="referencesetcontext_unique_position"),
            models.CheckConstraint(condition=_attributes_valid(), name="referencesetcontext_attributes_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.reference_set_id}:{self.context_id}"


class AssignmentStatus(models.TextChoices):
    ACTIVE = "active", "In progress"
    SUBMITTED = "submitted", "Submitted"
    SENT_BACK = "sent_back", "Sent back"
    ACCEPTED = "accepted", "Accepted"
    EXPIRED = "expired", "Expired"


LIVE_ASSIGNMENT = ~Q(status=AssignmentStatus.EXPIRED)


class ReferenceAssignment(models.Model):
    """A crowd worker's work on a context of a set, for the attributes assigned to them: claimed, written, reviewed.

    While it is live (not expired) it holds one ReferenceSeat per attribute.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    member = models.ForeignKey(ReferenceSetContext, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reference_assignments")
    attributes = attribute_list("the attributes assigned to this worker for this context")
    status = models.CharField(max_length=10, choices=AssignmentStatus.choices, default=AssignmentStatus.ACTIVE)
    claimed_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    seconds_spent = models.FloatField(default=0)
    review_reason = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["claimed_at", "id"]
        constraints = [
            # A worker writes for a context once (the seats cap each (context, attribute) at k).
            models.UniqueConstraint(fields=["member", "worker"], condition=LIVE_ASSIGNMENT, name="refassign_one_live_per_worker"),
            models.CheckConstraint(condition=_attributes_valid(), name="refassign_attributes_valid"),
            models.CheckConstraint(condition=Q(status__in=AssignmentStatus.values), name="refassign_status_valid"),
        ]
        indexes = [
            models.Index(fields=["worker", "status"], name="refassign_worker_status_idx"),
            models.Index(fields=["member", "status"], name="refassign_member_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} → {self.member_id} ({self.status})"

    @property
    def is_editable(self) -> bool:
        """The worker may still write: in progress, sent back, or lapsed (revived on the next save)."""
        return self.status in (AssignmentStatus.ACTIVE, AssignmentStatus.SENT_BACK, AssignmentStatus.EXPIRED)


class ReferenceSeat(models.Model):
    """One of the k places of a (context, attribute) unit, held by a live assignment.

    Created with the assignment's claim (or revival), deleted when it expires, under the
    member's row lock. The unique constraints are the rule in SQL: a slot of a unit is
    held once, and a worker holds one place of a unit.
    """

    member = models.ForeignKey(ReferenceSetContext, on_delete=models.CASCADE, related_name="seats")
    attribute = models.CharField(max_length=10, choices=Attribute.choices)
    slot = models.PositiveSmallIntegerField(help_text="0 … per_context-1")
    assignment = models.ForeignKey(ReferenceAssignment, on_delete=models.CASCADE, related_name="seats")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        ordering = ["member", "attribute", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["member", "attribute", "slot"], name="refseat_one_per_slot"),
            models.UniqueConstraint(fields=["member", "attribute", "worker"], name="refseat_one_per_worker"),
            models.CheckConstraint(condition=Q(attribute__in=Attribute.values), name="refseat_attribute_valid"),
        ]


class ReferenceDraft(models.Model):
    """What a worker has typed so far for a context; autosaved, survives sessions and leases."""

    member = models.ForeignKey(ReferenceSetContext, on_delete=models.CASCADE, related_name="drafts")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reference_drafts")
    texts = models.JSONField(default=dict, help_text="attribute → text")
    seconds_spent = models.FloatField(default=0)
    client_ts = models.BigIntegerField(
        default=0, help_text="the browser's clock (ms) at the edit saved; an autosave older than this is ignored"
    )
    client_id = models.CharField(max_length=40, blank=True, help_text="the browser that saved it last (autosave)")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["member", "worker"]
        constraints = [models.UniqueConstraint(fields=["member", "worker"], name="referencedraft_one_per_worker")]


class ReferenceSubmission(models.Model):
    """One submit of the form (a resubmit after a send-back is a new one). Idempotent by key."""

    assignment = models.ForeignKey(ReferenceAssignment, on_delete=models.CASCADE, related_name="submissions")
    idempotency_key = models.UUIDField(unique=True)
    texts = models.JSONField(help_text="attribute → text")
    seconds_spent = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class Reference(models.Model):
    """The current text of one attribute of an assignment (the latest submission)."""

    assignment = models.ForeignKey(ReferenceAssignment, on_delete=models.CASCADE, related_name="references")
    attribute = models.CharField(max_length=10, choices=Attribute.choices)
    text = models.TextField()

    class Meta:
        ordering = ["assignment", "attribute"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "attribute"], name="reference_one_per_attribute"),
            models.CheckConstraint(condition=Q(attribute__in=Attribute.values), name="reference_attribute_valid"),
        ]


class SimilarityRunStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for the task queue"
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SimilarityRun(JobFields):
    """An uploaded set of model inferences compared with the accepted references (BLEU, ROUGE-L)."""

    name = models.CharField(max_length=200)
    reference_set = models.ForeignKey(
        ReferenceSet, on_delete=models.CASCADE, null=True, blank=True, related_name="similarity_runs",
        help_text="compare with this set's accepted references; empty = every accepted reference",
    )
    inferences = models.JSONField(help_text="[{context_id, attribute, text}] as uploaded")
    status = models.CharField(max_length=10, choices=SimilarityRunStatus.choices, default=SimilarityRunStatus.WAITING)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class SimilarityScore(models.Model):
    """A run's scores for one attribute (or `all`): corpus BLEU (0–100) and mean best ROUGE-L F (0–1)."""

    run = models.ForeignKey(SimilarityRun, on_delete=models.CASCADE, related_name="scores")
    attribute = models.CharField(max_length=10, help_text="an attribute, or 'all'")
    bleu = models.FloatField()
    rouge_l = models.FloatField()
    n_contexts = models.PositiveIntegerField(help_text="inferences that had at least one accepted reference")
    n_references = models.PositiveIntegerField()
    n_skipped = models.PositiveIntegerField(default=0, help_text="inferences without any accepted reference")

    class Meta:
        ordering = ["run", "attribute"]
        constraints = [models.UniqueConstraint(fields=["run", "attribute"], name="similarityscore_one_per_attribute")]
