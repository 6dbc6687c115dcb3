"""Who may do what: the role rules, shared by every app's pages and API.

Plain predicates (`can_read_scores`), a decorator for staff pages (`staff_required`) and one
DRF permission class per rule; every app reaches them here, with the people.
"""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .models import Role


def staff_required(view=None, *, area: str = "This page"):
    """A page for project staff: others are sent to log in, or refused (403) with a message
    naming the part of the studio they tried (`@staff_required(area="The review pages")`)."""
    if view is None:
        return lambda v: staff_required(v, area=area)

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_project_staff:
            raise PermissionDenied(f"{area} {'are' if area.endswith('s') else 'is'} for project staff.")
        return view(request, *args, **kwargs)

    return wrapper


def can_read_scores(user) -> bool:
    """Leaderboards are for staff and release readers (they hold the released labels)."""
    return user.is_authenticated and (user.is_project_staff or user.role == Role.RELEASE_READER)


def can_upload_runs(user) -> bool:
    """Staff, and release readers (the benchmark's users: model builders) for runs of their own."""
    return can_read_scores(user)


def can_manage_runs(user) -> bool:
    """Rescoring and publishing runs: staff."""
    return user.is_authenticated and user.is_project_staff


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
