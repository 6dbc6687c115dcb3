from rest_framework.permissions import BasePermission

from accounts.models import Role


def can_read_scores(user) -> bool:
    """Leaderboards are for staff and release readers (they hold the released labels)."""
    return user.is_authenticated and (user.is_project_staff or user.role == Role.RELEASE_READER)


def can_upload_runs(user) -> bool:
    """Staff, and release readers (the benchmark's users: model builders) for runs of their own."""
    return can_read_scores(user)


def can_manage_runs(user) -> bool:
    """Rescoring and publishing runs: staff."""
    return user.is_authenticated and user.is_project_staff


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
