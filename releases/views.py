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
    release = _release(request, version, ready=False)
    manifest = release.manifest or {}
    return render(request, "releases/detail.html", {
        "release": release,
        "manifest": manifest,
        "manifest_json": json.dumps(manifest, indent=2, ensure_ascii=False),
        "files": selectors.release_files(release=release) if release.is_ready else [],
        "counts": (manifest.get("counts") or {}).items(),
    })


@login_required
def release_manifest(request, version):
    release = _release(request, version, ready=True)
    response = HttpResponse(json.dumps(release.manifest, indent=2, ensure_ascii=False) + "\n", content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="dialtom-{release.version}-manifest.json"'
    return response
