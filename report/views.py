"""The study report page for staff: the tables the LaTeX holds, every number a link."""
from django.http import Http404
from django.shortcuts import render

from accounts.permissions import staff_required
from releases.models import Release, ReleaseStatus

from . import selectors, tables


@staff_required
def report_page(request):
    version = request.GET.get("release", "").strip()
    release = None
    if version:
        release = Release.objects.filter(version=version, status=ReleaseStatus.READY).first()
        if release is None:
            raise Http404("no such ready release")
    report = selectors.study_report(release=release)
    return render(request, "report/report.html", {
        "report": report,
        "tables": tables.report_tables(report),
        "releases": Release.objects.filter(status=ReleaseStatus.READY).values_list("version", flat=True),
        "version": version,
    })
