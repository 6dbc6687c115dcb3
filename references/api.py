"""API of the reference workflow, mounted at /api/v1/ (dialtom_site/urls.py):

- GET  /api/v1/references/?reference_set=NAME[&format=jsonl] — accepted references (staff, release_reader)
- GET  /api/v1/similarity-runs/                — runs with their scores (staff)
- POST /api/v1/similarity-runs/                — upload model inferences; 202, scored by a Celery job (staff)
- GET  /api/v1/similarity-runs/<id>/           — one run (staff)

The crowd worker's own flow, the same services as the pages under /annotate/:

- GET  /api/v1/reference-queue/                       — my open sets: progress, work in progress, work sent back
- POST /api/v1/reference-sets/<name>/next/            — resume or claim a context (200), or 204 when none is left
- GET  /api/v1/reference-assignments/<id>/            — the dialogue window, the fields of my attributes and my draft
- PUT  /api/v1/reference-assignments/<id>/draft/      — save the draft (keeps the lease)
- POST /api/v1/reference-assignments/<id>/submit/     — submit my inferences (idempotency_key; 201, replay 200)
"""
import json

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsCrowdWorker, IsProjectStaff, IsStaffOrReleaseReader
from dialtom_site.parsers import StrictJSONParser

from . import selectors
from . import services, similarity
from annotation.models import Attribute
from .models import ReferenceSet


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
        return Response(list(selectors.references_export_rows(reference_set=reference_set)))


class SimilarityRunListView(APIView):
    permission_classes = [IsProjectStaff]
    parser_classes = [StrictJSONParser, MultiPartParser, FormParser]

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
            records = similarity.inferences_parse(lines=lines, filename=filename)
        except services.InputFormatError as exc:
            return Response({"errors": exc.messages}, status=400)
        run = similarity.similarity_run_create(
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


# --- the crowd worker's flow --------------------------------------------------------------


class ReferenceTurnSerializer(serializers.Serializer):
    speaker = serializers.CharField(help_text="initiator or recipient")
    role = serializers.CharField(help_text="the domain's name for the speaker: therapist, client, seeker, …")
    text = serializers.CharField()


class AttributeFieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    definition = serializers.CharField()
    example = serializers.CharField()


class ReferenceProgressSerializer(serializers.Serializer):
    filled = serializers.IntegerField(help_text="inferences at least min_chars long")
    total = serializers.IntegerField()
    percent = serializers.IntegerField()


class AssignmentSerializer(serializers.Serializer):
    """One context to write for: what the page under /annotate/work/<id>/ shows."""

    id = serializers.UUIDField()
    reference_set = serializers.CharField(source="member.reference_set.name")
    context_id = serializers.CharField(source="member.context.context_id")
    domain = serializers.CharField(source="member.context.domain_id")
    status = serializers.CharField()
    editable = serializers.BooleanField(source="is_editable")
    expires_at = serializers.DateTimeField()
    review_reason = serializers.CharField(help_text="why staff sent it back, if they did")
    target_speaker = serializers.CharField(source="member.reference_set.target_speaker")
    target_role = serializers.SerializerMethodField()
    min_chars = serializers.IntegerField(source="member.reference_set.min_chars")
    turns = serializers.SerializerMethodField()
    attributes = serializers.SerializerMethodField()
    texts = serializers.SerializerMethodField(help_text="the draft, else the last submission: attribute → text")
    seconds_spent = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    def _initial(self, assignment):
        if not hasattr(assignment, "_initial"):
            assignment._initial = selectors.reference_form_initial(assignment=assignment)
        return assignment._initial

    def get_target_role(self, assignment) -> str:
        return assignment.member.context.domain.role_name(assignment.member.reference_set.target_speaker)

    @extend_schema_field(ReferenceTurnSerializer(many=True))
    def get_turns(self, assignment):
        return selectors.context_window(context=assignment.member.context)

    @extend_schema_field(AttributeFieldSerializer(many=True))
    def get_attributes(self, assignment):
        return selectors.attribute_fields(assignment.attributes)

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_texts(self, assignment):
        texts = self._initial(assignment).texts
        return {a: texts.get(a, "") for a in assignment.attributes}

    def get_seconds_spent(self, assignment) -> float:
        return round(self._initial(assignment).seconds_spent, 1)

    @extend_schema_field(ReferenceProgressSerializer)
    def get_progress(self, assignment):
        texts = self._initial(assignment).texts
        return selectors.reference_progress(
            texts=texts, min_chars=assignment.member.reference_set.min_chars, attributes=assignment.attributes
        )


class AssignmentBriefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    context_id = serializers.CharField(source="member.context.context_id")
    status = serializers.CharField()
    review_reason = serializers.CharField()


class SetQueueSerializer(serializers.Serializer):
    reference_set = serializers.CharField(source="reference_set.name")
    status = serializers.CharField(source="reference_set.status")
    contexts = serializers.IntegerField(source="reference_set.n_members")
    done = serializers.IntegerField(help_text="contexts I have submitted (or had accepted)")
    assigned = serializers.IntegerField()
    percent = serializers.IntegerField()
    active = AssignmentBriefSerializer(many=True)
    sent_back = AssignmentBriefSerializer(many=True)


class TextsField(serializers.DictField):
    """attribute → text; only the six attributes, each a string."""

    child = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=services.MAX_TEXT_CHARS)

    def to_internal_value(self, data):
        texts = super().to_internal_value(data)
        unknown = sorted(set(texts) - set(Attribute.values))
        if unknown:
            raise serializers.ValidationError(
                f"unknown attribute(s) {', '.join(unknown)}; expected some of {', '.join(Attribute.values)}"
            )
        return texts


class DraftSerializer(serializers.Serializer):
    texts = TextsField()
    seconds_spent = serializers.FloatField(required=False, default=0, min_value=0)


class DraftSaveSerializer(DraftSerializer):
    client_ts = serializers.IntegerField(
        required=False, min_value=0, max_value=2**62,
        help_text="your clock (ms) at the edit: a save older than the stored draft's is dropped (stale)",
    )
    client_id = serializers.CharField(required=False, allow_blank=True, max_length=40, help_text="which client saved it")


class DraftSavedSerializer(serializers.Serializer):
    saved_at = serializers.DateTimeField()
    warning = serializers.CharField(help_text="set when the lease had lapsed and the context was taken meanwhile")
    stale = serializers.BooleanField(help_text="true: a later edit was stored already and this one was dropped")
    progress = ReferenceProgressSerializer()


class SubmitSerializer(DraftSerializer):
    idempotency_key = serializers.UUIDField(help_text="a fresh UUID per submission; a retry with the same key is a no-op")


class SubmittedSerializer(serializers.Serializer):
    assignment = serializers.UUIDField(source="assignment_id")
    status = serializers.CharField(source="assignment.status")
    submitted_at = serializers.DateTimeField(source="created_at")
    idempotency_key = serializers.UUIDField()


def _conflict(exc: services.ReferenceWorkflowError) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)


def _my_assignment(request, assignment_id):
    return selectors.reference_assignment_for_worker(worker=request.user, assignment_id=assignment_id)


NOT_YOURS = {"detail": "no such assignment of yours"}


class ReferenceQueueView(APIView):
    """My open and paused reference sets, with my progress and the work I hold or got back."""

    permission_classes = [IsCrowdWorker]

    @extend_schema(responses=SetQueueSerializer(many=True))
    def get(self, request):
        return Response(SetQueueSerializer(selectors.reference_queue_for(worker=request.user), many=True).data)


class ReferenceClaimNextView(APIView):
    """Resume the context I hold in this set, or claim the next one that still needs writers."""

    permission_classes = [IsCrowdWorker]

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 204: None, 404: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request, set_name: str):
        reference_set = ReferenceSet.objects.filter(name=set_name).first()
        if reference_set is None:
            return Response({"detail": f"no reference set called {set_name!r}"}, status=status.HTTP_404_NOT_FOUND)
        try:
            assignment = services.reference_assignment_claim_next(worker=request.user, reference_set_id=reference_set.pk)
        except services.ReferenceWorkflowError as exc:
            return _conflict(exc)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(_my_assignment(request, assignment.pk)).data)


class ReferenceAssignmentView(APIView):
    permission_classes = [IsCrowdWorker]

    @extend_schema(responses={200: AssignmentSerializer, 404: OpenApiTypes.OBJECT})
    def get(self, request, assignment_id):
        assignment = _my_assignment(request, assignment_id)
        if assignment is None:
            return Response(NOT_YOURS, status=status.HTTP_404_NOT_FOUND)
        return Response(AssignmentSerializer(assignment).data)


class ReferenceDraftView(APIView):
    """Autosave: store what I have typed so far; it also keeps my lease on the context."""

    permission_classes = [IsCrowdWorker]

    @extend_schema(
        request=DraftSaveSerializer,
        responses={200: DraftSavedSerializer, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
    def put(self, request, assignment_id):
        assignment = _my_assignment(request, assignment_id)
        if assignment is None:
            return Response(NOT_YOURS, status=status.HTTP_404_NOT_FOUND)
        body = DraftSaveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            saved = services.reference_draft_save(
                worker=request.user,
                assignment_id=assignment.pk,
                texts=body.validated_data["texts"],
                seconds_spent=body.validated_data["seconds_spent"],
                client_ts=body.validated_data.get("client_ts"),
                client_id=body.validated_data.get("client_id", ""),
            )
        except services.ReferenceWorkflowError as exc:
            return _conflict(exc)
        progress = selectors.reference_progress(
            texts=saved.draft.texts, min_chars=assignment.member.reference_set.min_chars, attributes=assignment.attributes
        )
        result = {"saved_at": saved.draft.updated_at, "warning": saved.warning, "stale": saved.stale, "progress": progress}
        return Response(DraftSavedSerializer(result).data)


class ReferenceSubmitView(APIView):
    """Submit my inferences (the attributes assigned to me). 400 names each field that is missing, too short or a copy of another."""

    permission_classes = [IsCrowdWorker]

    @extend_schema(
        request=SubmitSerializer,
        responses={
            201: SubmittedSerializer,
            200: SubmittedSerializer,
            400: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
            409: OpenApiTypes.OBJECT,
        },
    )
    def post(self, request, assignment_id):
        assignment = _my_assignment(request, assignment_id)
        if assignment is None:
            return Response(NOT_YOURS, status=status.HTTP_404_NOT_FOUND)
        body = SubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            result = services.reference_submit(
                worker=request.user,
                assignment_id=assignment.pk,
                texts=data["texts"],
                idempotency_key=data["idempotency_key"],
                seconds_spent=data["seconds_spent"],
            )
        except services.ReferenceValidationError as exc:
            return Response({"texts": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except services.ReferenceWorkflowError as exc:
            return _conflict(exc)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response(SubmittedSerializer(result.submission).data, status=code)


urlpatterns = [
    path("reference-queue/", ReferenceQueueView.as_view(), name="api-reference-queue"),
    path("reference-sets/<slug:set_name>/next/", ReferenceClaimNextView.as_view(), name="api-reference-next"),
    path("reference-assignments/<uuid:assignment_id>/", ReferenceAssignmentView.as_view(), name="api-reference-assignment"),
    path(
        "reference-assignments/<uuid:assignment_id>/draft/", ReferenceDraftView.as_view(), name="api-reference-draft"
    ),
    path(
        "reference-assignments/<uuid:assignment_id>/submit/", ReferenceSubmitView.as_view(), name="api-reference-submit"
    ),
    path("references/", ReferencesExportView.as_view(), name="api-references"),
    path("similarity-runs/", SimilarityRunListView.as_view(), name="api-similarity-runs"),
    path("similarity-runs/<int:run_id>/", SimilarityRunDetailView.as_view(), name="api-similarity-run"),
]
