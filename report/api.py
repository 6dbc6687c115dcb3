"""The study report over the API: JSON, or `?format=latex`, `csv`, `md` (DRF renderers)."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsStaffOrReleaseReader
from releases.models import Release, ReleaseStatus

from . import selectors, tables


class _ReportRenderer(BaseRenderer):
    charset = "utf-8"
    render_report = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if not isinstance(data, dict) or "verification" not in data:  # an error body: as JSON
            return JSONRenderer().render(data)
        return type(self).render_report(data).encode("utf-8")


class LatexRenderer(_ReportRenderer):
    media_type = "application/x-latex"
    format = "latex"
    render_report = staticmethod(tables.render_latex)


class CsvRenderer(_ReportRenderer):
    media_type = "text/csv"
    format = "csv"
    render_report = staticmethod(tables.render_csv)


class MarkdownRenderer(_ReportRenderer):
    media_type = "text/markdown"
    format = "md"
    render_report = staticmethod(tables.render_markdown)


class StudyReportApi(APIView):
    permission_classes = [IsStaffOrReleaseReader]
    renderer_classes = [JSONRenderer, LatexRenderer, CsvRenderer, MarkdownRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter("release", str, description="a ready release: its frozen results and the runs scored on it"),
            OpenApiParameter("format", str, enum=["json", "latex", "csv", "md"]),
        ],
        responses={200: dict},
        summary="The study report: verification, evaluation and references, as in the paper",
    )
    def get(self, request):
        version = request.query_params.get("release", "").strip()
        release = get_object_or_404(Release, version=version, status=ReleaseStatus.READY) if version else None
        report = selectors.study_report(release=release)
        response = Response(report)
        fmt = getattr(request.accepted_renderer, "format", "json")
        if fmt != "json":
            name = f"study-report-{version or 'current'}.{ {'latex': 'tex'}.get(fmt, fmt) }"
            response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
