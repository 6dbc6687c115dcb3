"""Leaderboard pages: thin doors onto the selectors (login required; staff and release readers)."""
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from releases.models import Release, ReleaseStatus

from . import selectors, services
from .forms import UploadForm
from .models import ModelRun, ScoreStatus
from accounts.permissions import can_manage_runs, can_read_scores, can_upload_runs

FACET_TITLES = {"task": "Task", "domain": "Domain", "attribute": "Attribute", "variant": "Variant"}


def _require_reader(request):
    if not can_read_scores(request.user):
        raise PermissionDenied("the leaderboard is for staff and release readers")


@login_required
def leaderboard(request):
    _require_reader(request)
    release = selectors.leaderboard_release(user=request.user, version=request.GET.get("release", ""))
    runs = selectors.leaderboard_runs(user=request.user, release=release)
    chart = {
        "labels": [run.name for run in runs],
        "rates": [round(100 * (run.overall_rate or 0), 1) for run in runs],
        "baselines": [round(100 * (run.scores["overall"]["baseline"] or 0), 1) for run in runs],
    }
    return render(
        request,
        "scoring/leaderboard.html",
        {
            "runs": runs,
            "runs_chart": chart,
            "release": release,
            "releases": selectors.leaderboard_releases(user=request.user),
            "pending": selectors.runs_visible_to(user=request.user).exclude(status=ScoreStatus.SUCCEEDED),
            "baselines": selectors.latest_baselines(),
        },
    )


@login_required
def run_detail(request, name):
    _require_reader(request)
    visible = selectors.runs_visible_to(user=request.user)
    run = get_object_or_404(visible, name=name)
    facets = [(FACET_TITLES[key], run.scores.get(key) or {}) for key in FACET_TITLES]
    others = visible.filter(status=ScoreStatus.SUCCEEDED, release_id=run.release_id).exclude(pk=run.pk)
    return render(request, "scoring/run_detail.html", {"run": run, "facets": facets, "others": others,
                                                       "can_manage": can_manage_runs(request.user)})


@login_required
@require_POST
def publish(request, name):
    """Staff put a run on every reader's leaderboard (or take it off)."""
    if not can_manage_runs(request.user):
        raise PermissionDenied("publishing runs is for staff")
    run = services.model_run_publish(run=get_object_or_404(ModelRun, name=name), published=request.POST.get("published") != "0")
    messages.success(request, f"{run.name} is {'on' if run.published else 'off'} the readers' leaderboard.")
    return redirect("leaderboard-run", name=run.name)


@login_required
def compare(request):
    _require_reader(request)
    names = request.GET.get("a"), request.GET.get("b")
    scored = selectors.runs_visible_to(user=request.user).filter(status=ScoreStatus.SUCCEEDED)
    runs = {r.name: r for r in scored.filter(name__in=names)}
    comparison = problem = None
    if all(n in runs for n in names) and names[0] != names[1]:
        problem = selectors.runs_comparable(run_a=runs[names[0]], run_b=runs[names[1]])
        if problem is None:
            comparison = selectors.runs_compare(run_a=runs[names[0]], run_b=runs[names[1]])
    return render(
        request,
        "scoring/compare.html",
        {"comparison": comparison, "problem": problem, "a": names[0], "b": names[1],
         "choices": scored},
    )


@login_required
@require_http_methods(["GET", "POST"])
def upload(request):
    """Upload a model's predictions (staff, and release readers for runs of their own, as in the
    API); scoring runs as a task, then the run's page shows it."""
    if not can_upload_runs(request.user):
        raise PermissionDenied("uploading predictions is for staff and release readers")
    versions = list(Release.objects.filter(status=ReleaseStatus.READY).order_by("-created_at").values_list("version", flat=True))
    form = UploadForm(request.POST or None, request.FILES or None, releases=versions)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.run_upload_check(uploaded_by=request.user, size=data["file"].size, source=data["file"].name)
            lines = data["file"].read().decode("utf-8").splitlines()
        except services.InputErrors as exc:
            errors = exc.errors
        except UnicodeDecodeError as exc:
            errors = [f"{data['file'].name}:0: file: not UTF-8 ({exc.reason})"]
        else:
            try:
                run = services.model_run_create(
                    name=data["name"], model_name=data["model_name"], release=data["release"],
                    description=data["description"], lines=lines, source=data["file"].name, uploaded_by=request.user,
                )
            except services.InputErrors as exc:
                errors = exc.errors
            else:
                shown = "" if run.published else " Only you and staff see it until staff publish it."
                messages.success(request, f"{run.n_predictions} predictions uploaded; scoring has started.{shown}")
                return redirect("leaderboard-run", name=run.name)
    status = 400 if request.method == "POST" else 200
    return render(request, "scoring/upload.html", {
        "form": form, "errors": errors, "has_release": bool(versions), "is_staff": request.user.is_project_staff,
        "max_bytes": settings.DIALTOM_RUN_UPLOAD_MAX_BYTES, "per_day": settings.DIALTOM_READER_RUNS_PER_DAY,
    }, status=status)
