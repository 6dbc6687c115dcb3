"""Releases: immutable, versioned snapshots of the retained items, written as files."""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class ReleaseStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Release(models.Model):
    """One published version of the benchmark.

    The files live under `settings.RELEASE_ROOT/<version>/` and never change once the
    release is ready; `manifest` is a copy of `manifest.json` (counts, retention,
    agreement, aggregation settings, SHA-256 of every file).
    """

    version = models.CharField(
        max_length=64, unique=True, validators=[RegexValidator(VERSION_PATTERN, "letters, digits, '.', '_' or '-'")]
    )
    status = models.CharField(max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.PENDING)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    trigger = models.CharField(max_length=20, default="manual", help_text="dashboard, api or command")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    files = models.JSONField(default=dict, blank=True, help_text="file name -> {path, sha256, bytes, rows}")
    manifest = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ReleaseStatus.values), name="release_status_valid"),
        ]

    def __str__(self) -> str:
        return f"release {self.version} ({self.status})"

    @property
    def is_ready(self) -> bool:
        return self.status == ReleaseStatus.READY
