"""Studies: the recruitment channel through which crowd-platform participants arrive, work
and get paid (issue 24).

A `Study` serves either verification batches (verifiers audit items) or a reference set
(crowd writers write references). A `Participant` is one platform id in one study, with its
own pseudonymous account; every arrival is an `Entry`; what a participant is owed beyond
their work (bonuses) is a `LedgerLine`. Items and active time are read from the work itself
(judgments, reference assignments): `selectors.study_ledger`.
"""
import re
import secrets
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q


class Platform(models.TextChoices):
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Amazon Mechanical Turk"
    LINK = "link", "Plain link"


class StudyStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class PayBasis(models.TextChoices):
    ITEM = "item", "Per item"
    HOUR = "hour", "Per hour of active time"


def study_token() -> str:
    """The unguessable part of a study's URL (192 bits)."""
    return secrets.token_urlsafe(24)


class Study(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    platform = models.CharField(max_length=10, choices=Platform.choices)
    status = models.CharField(max_length=10, choices=StudyStatus.choices, default=StudyStatus.OPEN)
    token = models.CharField(max_length=64, unique=True, default=study_token, editable=False)
    batches = models.ManyToManyField("annotation.Batch", related_name="studies", blank=True,
                                     help_text="verification: the batches participants audit, in this order")
    reference_set = models.ForeignKey("references.ReferenceSet", on_delete=models.PROTECT, null=True, blank=True,
                                      related_name="studies", help_text="crowd writing: the set participants write for")
    pool = models.OneToOneField("accounts.Pool", on_delete=models.PROTECT, related_name="study",
                                help_text="the study's own pool: its participants, and the batches open to them")
    quota = models.PositiveIntegerField(help_text="items (verification) or contexts (writing) per participant")
    session_minutes = models.PositiveIntegerField(default=60, help_text="a participant's session ends this long after arrival")
    completion_code = models.CharField(max_length=64)
    screen_out_code = models.CharField(max_length=64, blank=True)
    pay_basis = models.CharField(max_length=4, choices=PayBasis.choices, default=PayBasis.ITEM)
    pay_rate = models.DecimalField(max_digits=8, decimal_places=4, help_text="per item or per hour, in `currency`")
    currency = models.CharField(max_length=3, default="GBP")
    minimum_hourly = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True,
                                         help_text="the lowest effective hourly rate staff accept")
    item_seconds_cap = models.PositiveIntegerField(default=300, help_text="active time counted per item at most (idle time cut)")
    qualification_batch = models.ForeignKey("annotation.Batch", on_delete=models.PROTECT, null=True, blank=True,
                                            related_name="qualifying_studies",
                                            help_text="gold items audited before real work (verification studies)")
    qualification_pass_mark = models.FloatField(default=0.8, help_text="share of qualification items answered right to pass")
    gold_threshold = models.FloatField(null=True, blank=True,
                                       help_text="stop a participant whose gold accuracy falls below this (attention checks)")
    gold_min_answers = models.PositiveIntegerField(default=3, help_text="gold answers needed before the rule applies")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(quota__gte=1), name="study_quota_positive"),
            models.CheckConstraint(condition=Q(pay_rate__gte=0), name="study_pay_rate_not_negative"),
            models.CheckConstraint(condition=Q(platform__in=Platform.values), name="study_platform_valid"),
            models.CheckConstraint(condition=Q(qualification_pass_mark__gte=0, qualification_pass_mark__lte=1),
                                   name="study_pass_mark_share"),
            models.CheckConstraint(condition=Q(gold_threshold__isnull=True) | Q(gold_threshold__gte=0, gold_threshold__lte=1),
                                   name="study_gold_threshold_share"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_writing(self) -> bool:
        return self.reference_set_id is not None

    def clean(self):
        if not self.completion_code.strip():
            raise ValidationError({"completion_code": "a study needs a completion code"})
        if not re.fullmatch(r"[A-Z]{3}", self.currency or ""):
            raise ValidationError({"currency": "a three-letter ISO 4217 code, e.g. GBP"})
        if self.qualification_batch_id and self.reference_set_id:
            raise ValidationError({"qualification_batch": "qualification is for verification studies"})


class ParticipantStatus(models.TextChoices):
    QUALIFYING = "qualifying", "Qualifying"
    WORKING = "working", "Working"
    COMPLETED = "completed", "Completed"
    SCREENED_OUT = "screened_out", "Screened out"
    STOPPED = "stopped", "Stopped (gold accuracy)"


FINISHED = (ParticipantStatus.COMPLETED, ParticipantStatus.SCREENED_OUT, ParticipantStatus.STOPPED)


class Participant(models.Model):
    """One platform id in one study: a pseudonymous account that only reaches the study's work."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    participant_id = models.CharField(max_length=64, help_text="the platform's id (PROLIFIC_PID, MTurk workerId, or the link's pid)")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="study_participant")
    status = models.CharField(max_length=12, choices=ParticipantStatus.choices, default=ParticipantStatus.WORKING)
    platform_study_id = models.CharField(max_length=64, blank=True, help_text="Prolific STUDY_ID / MTurk hitId")
    platform_session_id = models.CharField(max_length=64, blank=True, help_text="Prolific SESSION_ID / MTurk assignmentId")
    return_to = models.URLField(max_length=300, blank=True, help_text="MTurk turkSubmitTo")
    qualification_score = models.FloatField(null=True, blank=True)
    stop_overridden = models.BooleanField(default=False, help_text="staff let them work on despite the gold rule")
    status_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "participant_id"], name="participant_one_account_per_study"),
            models.CheckConstraint(condition=Q(status__in=ParticipantStatus.values), name="participant_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.participant_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED


class Entry(models.Model):
    """Every arrival through a study link: when, which study, a hashed address, the browser."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="entries")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, null=True, blank=True, related_name="entries")
    at = models.DateTimeField(auto_now_add=True)
    ip_hash = models.CharField(max_length=64, help_text="HMAC of the address (never the address itself)")
    user_agent = models.CharField(max_length=300, blank=True)
    kind = models.CharField(max_length=10, help_text="arrival, return or preview")

    class Meta:
        ordering = ["at", "id"]
        verbose_name_plural = "entries"
        indexes = [models.Index(fields=["study", "at"])]


class LedgerLine(models.Model):
    """A bonus (or correction) on a participant's account, beyond the pay for their work."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="ledger_lines")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.CharField(max_length=300)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["participant", "created_at", "id"]
        constraints = [models.CheckConstraint(condition=~Q(amount=Decimal("0")), name="ledgerline_amount_not_zero")]
