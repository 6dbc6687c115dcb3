"""Export API: list releases, read a manifest, download items (streamed, with ETag)."""
import hashlib
from pathlib import Path

from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsStaffOrReleaseReader
from annotation.models import Attribute, Domain, Task, Variant

from . import export, selectors, services
from .models import Release, ReleaseStatus


class IgnoreFormatNegotiation(DefaultContentNegotiation):
    """`?format=` names the file format of a download here, not a DRF renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ReleaseSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    files = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "version", "status", "created_at", "finished_at", "created_by", "trigger", "n_items", "files", "error",
            "warnings", "warnings_acknowledged", "attempts",
        ]

    def get_files(self, obj) -> dict:
        return {name: {"sha256": meta.get("sha256"), "bytes": meta.get("bytes")} for name, meta in obj.files.items()}


class ReleaseCreateSerializer(serializers.Serializer):
    version = serializers.CharField(required=False, allow_blank=True, max_length=64)
    acknowledge_warnings = serializers.BooleanField(
        required=False, default=False,
        help_text="needed when the current results carry warnings (a flagged batch, items under their overlap)",
    )


class ReleaseListView(APIView):
    permission_classes = [IsStaffOrReleaseReader]

    @extend_schema(responses=ReleaseSerializer(many=True), summary="List releases")
    def get(self, request):
        return Response(ReleaseSerializer(selectors.releases_list(), many=True).data)

    @extend_schema(
        request=ReleaseCreateSerializer,
        responses={
            202: ReleaseSerializer,
            400: OpenApiResponse(
                description="bad or existing version; or warnings not acknowledged (`warnings` lists them)"
            ),
        },
        summary="Create a release (staff); built by a Celery job (status `waiting` while the broker is down)",
    )
    def post(self, request):
        payload = ReleaseCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            release = services.release_create(
                version=payload.validated_data.get("version"),
                created_by=request.user,
                trigger="api",
                acknowledge_warnings=payload.validated_data["acknowledge_warnings"],
            )
        except services.ReleaseWarnings as exc:
            return Response(
                {"detail": "; ".join(exc.messages), "warnings": exc.warnings}, status=status.HTTP_400_BAD_REQUEST
            )
        except ValidationError as exc:
            return Response({"detail": "; ".join(exc.messages)}, status=status.HTTP_400_BAD_REQUEST)
        release.refresh_from_db()  # queued on commit: `pending`, or `waiting` for the broker
        return Response(ReleaseSerializer(release).data, status=status.HTTP_202_ACCEPTED)


def _release_or_404(version: str, *, ready: bool = True) -> Release:
    try:
        return selectors.release_ready_get(version=version) if ready else selectors.release_get(version=version)
    except Release.DoesNotExist as exc:
        raise NotFound(f"no {'ready ' if ready else ''}release {version}") from exc


class ReleaseDetailView(APIView):
    permission_classes = [IsStaffOrReleaseReader]

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        summary="A release's manifest (counts, retention, agreement, settings, SHA-256 per file)",
    )
    def get(self, request, version: str):
        release = _release_or_404(version, ready=False)
        if release.status != ReleaseStatus.READY:
            return Response(
                {"version": release.version, "status": release.status, "error": release.error, "warnings": release.warnings}
            )
        return Response(release.manifest)


ALLOWED_FILTERS = {
    "task": set(Task.values),
    "domain": None,  # checked against the Domain table
    "attribute": set(Attribute.values),
    "variant": set(Variant.values),
}


def etag_matches(header: str, etag: str) -> bool:
    if not header:
        return False
    if header.strip() == "*":
        return True
    candidates = [part.strip().removeprefix("W/") for part in header.split(",")]
    return etag in candidates


FILE_TYPES = {
    ".jsonl": "application/jsonl",
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
}


class ReleaseFileView(APIView):
    permission_classes = [IsStaffOrReleaseReader]

    @extend_schema(
        summary="Download one file of a release's manifest, as it is (items, results.csv, judgments.csv, references.jsonl, manifest.json)",
        parameters=[
            OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, description="an ETag from an earlier download"),
        ],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            304: OpenApiResponse(description="not modified (If-None-Match matched the ETag: the file's SHA-256)"),
            404: OpenApiResponse(description="no such ready release, or no file of that name in its manifest"),
        },
    )
    def get(self, request, version: str, name: str):
        release = _release_or_404(version)
        try:
            path, sha256 = selectors.release_file(release=release, name=name)
        except KeyError as exc:
            raise NotFound(f"release {release.version} has no file {name!r}") from exc
        etag = f'"{sha256}"'
        if etag_matches(request.headers.get("If-None-Match", ""), etag):
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response
        response = FileResponse(open(path, "rb"), content_type=FILE_TYPES.get(path.suffix, "application/octet-stream"))
        response["ETag"] = etag
        response["Content-Disposition"] = f'attachment; filename="dialtom-{release.version}-{path.name}"'
        response["Cache-Control"] = "private, max-age=3600"
        return response


class ReleaseItemsView(APIView):
    permission_classes = [IsStaffOrReleaseReader]
    content_negotiation_class = IgnoreFormatNegotiation

    @extend_schema(
        summary="Download a release's items (streamed), optionally filtered",
        parameters=[
            OpenApiParameter("format", str, enum=list(export.FORMATS), default="jsonl", description="file format"),
            OpenApiParameter("task", str, enum=list(Task.values)),
            OpenApiParameter("domain", str, description="mi, esc or pfg"),
            OpenApiParameter("attribute", str, enum=list(Attribute.values)),
            OpenApiParameter("variant", str, enum=list(Variant.values)),
            OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, description="an ETag from an earlier download"),
        ],
        responses={
            (200, "application/jsonl"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY,
            304: OpenApiResponse(description="not modified (If-None-Match matched the ETag)"),
            400: OpenApiResponse(description="bad format or filter"),
            404: OpenApiResponse(description="no such ready release"),
        },
    )
    def get(self, request, version: str):
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in export.FORMATS:
            return Response({"detail": f"format: must be one of {', '.join(export.FORMATS)}"}, status=400)
        filters: dict[str, str] = {}
        for key, allowed in ALLOWED_FILTERS.items():
            value = request.query_params.get(key)
            if value is None or value == "":
                continue
            if key == "domain":
                allowed = set(Domain.objects.values_list("code", flat=True))
            if value not in allowed:
                return Response({"detail": f"{key}: must be one of {', '.join(sorted(allowed))}"}, status=400)
            filters[key] = value
        release = _release_or_404(version)
        file_name, content_type = export.FORMATS[fmt]
        directory = Path(services.release_root()) / release.version
        file_sha = release.files[file_name]["sha256"]
        if filters:
            # The release is immutable: the source file's hash and the filter fix the content.
            canonical = "&".join(f"{k}={filters[k]}" for k in sorted(filters))
            etag = '"' + hashlib.sha256(f"{file_sha}|{fmt}|{canonical}".encode()).hexdigest() + '"'
        else:
            etag = f'"{file_sha}"'
        if etag_matches(request.headers.get("If-None-Match", ""), etag):
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response

        suffix = "".join(f"-{filters[k]}" for k in sorted(filters))
        download_name = f"dialtom-{release.version}{suffix}.{file_name.split('.', 1)[1]}"
        if not filters:
            response = FileResponse(open(directory / file_name, "rb"), content_type=content_type)
        elif fmt == "parquet":
            response = HttpResponse(export.parquet_filtered(directory / file_name, filters=filters), content_type=content_type)
        else:
            response = StreamingHttpResponse(
                export.stream_filtered(directory / "items.jsonl", fmt=fmt, filters=filters), content_type=content_type
            )
        response["ETag"] = etag
        response["Content-Disposition"] = f'attachment; filename="{download_name}"'
        response["Cache-Control"] = "private, max-age=3600"
        return response
