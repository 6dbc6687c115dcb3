from rest_framework.permissions import BasePermission

from accounts.models import Role


def can_read_scores(user) -> bool:
    """Leaderboards are for staff and release readers (they hold the released labels)."""
    return user.is_authenticated and (user.is_project_staff or user.role == Role.RELEASE_READER)


def can_upload_runs(user) -> bool:
    return user.is_authenticated and user.is_project_staff


class ReadsScores(BasePermission):
    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return can_read_scores(request.user)
        return can_upload_runs(request.user)
