"""API of the reference workflow, mounted at /api/v1/ (dialtom_site/urls.py):

- GET  /api/v1/references/?reference_set=NAME[&format=jsonl] — accepted references (staff, release_reader)
- GET  /api/v1/similarity-runs/                — runs with their scores (staff)
- POST /api/v1/similarity-runs/                — upload model inferences; 202, scored by a Celery job (staff)
- GET  /api/v1/similarity-runs/<id>/           — one run (staff)
"""
import json

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Role

from . import reference_selectors as selectors
from . import reference_services as services
from .models_references import ReferenceSet


class IsProjectStaff(BasePermission):
    message = "staff only"

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_project_staff)


class IsStaffOrReleaseReader(BasePermission):
    message = "staff or release readers only"

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated and (user.is_project_staff or user.role == Role.RELEASE_READER))


class JSONLinesRenderer(BaseRenderer):
    """`?format=jsonl`: one JSON object a line."""

    media_type = "application/jsonl"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict):  # an error
            return (json.dumps(data, ensure_ascii=False) + "\n").encode()
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in data).encode()


class ReferenceRowSerializer(serializers.Serializer):
    context_id = serializers.CharField()
    worker = serializers.CharField()
    attribute = serializers.CharField()
    text = serializers.CharField()


class SimilarityScoreSerializer(serializers.Serializer):
    attribute = serializers.CharField()
    bleu = serializers.FloatField(help_text="corpus BLEU, 0–100")
    rouge_l = serializers.FloatField(help_text="mean best ROUGE-L F, 0–1")
    n_contexts = serializers.IntegerField()
    n_references = serializers.IntegerField()
    n_skipped = serializers.IntegerField()


class SimilarityRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    reference_set = serializers.CharField(source="reference_set.name", allow_null=True, default=None)
    status = serializers.CharField()
    error = serializers.CharField()
    n_inferences = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    scores = serializers.SerializerMethodField()

    def get_n_inferences(self, run) -> int:
        return len(run.inferences)

    @extend_schema_field(SimilarityScoreSerializer(many=True))
    def get_scores(self, run):
        return SimilarityScoreSerializer(selectors.similarity_scores_ordered(run=run), many=True).data


class SimilarityRunCreateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    reference_set = serializers.CharField(required=False, allow_blank=True, help_text="compare with this set only")
    file = serializers.FileField(required=False, help_text="JSONL: context_id, attribute, text")
    inferences = serializers.ListField(child=serializers.DictField(), required=False, help_text="or the records inline")


class ReferencesExportView(APIView):
    """Accepted references, one row per context, worker and attribute (`?format=jsonl` for JSON Lines)."""

    permission_classes = [IsStaffOrReleaseReader]
    renderer_classes = [JSONRenderer, JSONLinesRenderer]

    @extend_schema(
        parameters=[OpenApiParameter("reference_set", OpenApiTypes.STR, description="only this set's references")],
        responses=ReferenceRowSerializer(many=True),
    )
    def get(self, request):
        reference_set = None
        name = request.query_params.get("reference_set")
        if name:
            reference_set = ReferenceSet.objects.filter(name=name).first()
            if reference_set is None:
                return Response({"reference_set": f"no set called {name!r}"}, status=status.HTTP_400_BAD_REQUEST)
        return Response(list(services.references_export_rows(reference_set=reference_set)))


class SimilarityRunListView(APIView):
    permission_classes = [IsProjectStaff]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(responses=SimilarityRunSerializer(many=True))
    def get(self, request):
        return Response(SimilarityRunSerializer(selectors.similarity_runs_list(), many=True).data)

    @extend_schema(request=SimilarityRunCreateSerializer, responses={202: SimilarityRunSerializer})
    def post(self, request):
        body = SimilarityRunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        reference_set_id = None
        if data.get("reference_set"):
            reference_set = ReferenceSet.objects.filter(name=data["reference_set"]).first()
            if reference_set is None:
                return Response({"reference_set": f"no set called {data['reference_set']!r}"}, status=400)
            reference_set_id = reference_set.pk
        if data.get("file") is not None:
            upload = data["file"]
            lines, filename = upload.read().splitlines(), upload.name
        elif data.get("inferences"):
            lines, filename = [json.dumps(r) for r in data["inferences"]], "inferences"
        else:
            return Response({"file": "send a JSONL file or an `inferences` list"}, status=400)
        try:
            records = services.inferences_parse(lines=lines, filename=filename)
        except services.InputFormatError as exc:
            return Response({"errors": exc.messages}, status=400)
        run = services.similarity_run_create(
            name=data.get("name") or filename, records=records, reference_set_id=reference_set_id, created_by=request.user
        )
        run = selectors.similarity_run_detail(run_id=run.pk)
        return Response(SimilarityRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class SimilarityRunDetailView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(responses=SimilarityRunSerializer)
    def get(self, request, run_id: int):
        run = selectors.similarity_run_detail(run_id=run_id)
        if run is None:
            return Response({"detail": "no such run"}, status=404)
        return Response(SimilarityRunSerializer(run).data)


urlpatterns = [
    path("references/", ReferencesExportView.as_view(), name="api-references"),
    path("similarity-runs/", SimilarityRunListView.as_view(), name="api-similarity-runs"),
    path("similarity-runs/<int:run_id>/", SimilarityRunDetailView.as_view(), name="api-similarity-run"),
]
