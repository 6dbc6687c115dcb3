"""The release browser: staff and release readers see every release, its counts and manifest,
and download its files (through the export API, which checks permissions and sends ETags)."""
import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import render

from accounts.permissions import can_read_scores

from . import selectors
from .models import Release


def _reader(request):
    if not can_read_scores(request.user):
        raise PermissionDenied("releases are for staff and release readers")


def _release(request, version: str, *, ready: bool) -> Release:
    _reader(request)
    try:
        return selectors.release_ready_get(version=version) if ready else selectors.release_get(version=version)
    except Release.DoesNotExist:
        raise Http404(f"no such {'ready ' if ready else ''}release") from None


@login_required
def release_list(request):
    _reader(request)
    return render(request, "releases/list.html", {"releases": selectors.releases_list()})


@login_required
def release_detail(request, version):
    """A release's counts, files and checksums, and its per-batch agreement and staff decisions a
    page at a time (`?agreement=N`, `?decisions=N`): the same few statements at any size."""
    release = _release(request, version, ready=False)
    agreement_page, agreement = selectors.manifest_rows_page(release=release, kind="agreement",
                                                             page=request.GET.get("agreement"))
    decisions_page, decisions = selectors.manifest_rows_page(release=release, kind="adjudications",
                                                             page=request.GET.get("decisions"))
    return render(request, "releases/detail.html", {
        "release": release,
        "summary": release.summary,
        "files": selectors.release_files(release=release) if release.is_ready else [],
        "counts": (release.summary.get("counts") or {}).items(),
        "agreement": agreement, "agreement_page": agreement_page,
        "decisions": decisions, "decisions_page": decisions_page,
    })


@login_required
def release_manifest(request, version):
    release = _release(request, version, ready=True)
    response = HttpResponse(json.dumps(release.manifest, indent=2, ensure_ascii=False) + "\n", content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="dialtom-{release.version}-manifest.json"'
    return response
