"""Who may call which API: one permission class per role rule, shared by every app's API."""
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .models import Role


def _signed_in(request) -> bool:
    return bool(request.user and request.user.is_authenticated)


class IsProjectStaff(BasePermission):
    message = "project staff only"

    def has_permission(self, request, view):
        return _signed_in(request) and request.user.is_project_staff


class IsVerifier(BasePermission):
    """Verifiers, and anyone else allowed to take the audit queue (`User.can_audit`)."""

    message = "the audit queue is for verifiers"

    def has_permission(self, request, view):
        return _signed_in(request) and request.user.can_audit


class IsCrowdWorker(BasePermission):
    message = "the reference queue is for crowd workers"

    def has_permission(self, request, view):
        return _signed_in(request) and request.user.is_crowd_worker


class IsStaffOrReleaseReader(BasePermission):
    """Reading releases and references: staff or the release_reader role. Writing: staff only."""

    message = "staff and release readers only"

    def has_permission(self, request, view):
        if not _signed_in(request):
            return False
        if request.method in SAFE_METHODS:
            return request.user.is_project_staff or request.user.role == Role.RELEASE_READER
        return request.user.is_project_staff
