"""Who may read scores and manage model runs, as DRF permissions (the rules are `accounts.permissions`)."""
from rest_framework.permissions import BasePermission

from accounts.permissions import can_manage_runs, can_read_scores, can_upload_runs


class ReadsScores(BasePermission):
    """Reading scores: staff and release readers; uploading a run: the same (`can_upload_runs`)."""

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return can_read_scores(request.user)
        return can_upload_runs(request.user)


class ManagesRuns(BasePermission):
    message = "project staff only"

    def has_permission(self, request, view):
        return can_manage_runs(request.user)
