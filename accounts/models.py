from django.contrib.auth.models import AbstractUser
from django.db import models


class Role(models.TextChoices):
    VERIFIER = "verifier", "Verifier"
    CROWD_WORKER = "crowd_worker", "Crowd worker"
    STAFF = "staff", "Staff"
    RELEASE_READER = "release_reader", "Release reader"
    PARTICIPANT = "participant", "Baseline participant"


class User(AbstractUser):
    """A person using the studio. `role` says which doors they may open.

    Staff (role `staff`) also get Django's `is_staff` so the admin works for them; the
    two are kept in step by `accounts.services.person_create`.
    """

    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VERIFIER, db_index=True)
    excluded_from_aggregation = models.BooleanField(
        default=False,
        help_text="Judgments of an excluded verifier are kept but not used by Dawid–Skene.",
    )
    exclusion_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["username"]

    @property
    def is_verifier(self) -> bool:
        return self.role == Role.VERIFIER

    @property
    def can_audit(self) -> bool:
        """Who works an audit queue: verifiers, and baseline participants (issue 7), whose
        judgments are kept apart from aggregation by `excluded_from_aggregation`."""
        return self.role in (Role.VERIFIER, Role.PARTICIPANT)

    @property
    def is_crowd_worker(self) -> bool:
        return self.role == Role.CROWD_WORKER

    @property
    def is_project_staff(self) -> bool:
        return self.is_staff or self.is_superuser or self.role == Role.STAFF


class Pool(models.Model):
    """A named group of people a batch can be opened to (`batch_open --pool NAME`)."""

    name = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(User, related_name="pools", blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
