"""DRF doors: list models, upload predictions, per-model scores, compare two models, baselines."""
import json

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from dialtom_site.parsers import BoundedJSONParser

from . import selectors, services
from .models import ModelRun
from .permissions import ManagesRuns, ReadsScores
from .serializers import (
    BaselineRunSerializer,
    ComparisonSerializer,
    ModelRunDetailSerializer,
    ModelRunPublishSerializer,
    ModelRunSerializer,
    ModelRunUploadSerializer,
)


class PredictionsJSONParser(BoundedJSONParser):
    """A `predictions` list is bounded as a JSONL file is (56,700 predictions are ~3 MB)."""

    max_bytes_setting = "DIALTOM_RUN_UPLOAD_MAX_BYTES"


class ModelRunListApi(APIView):
    permission_classes = [ReadsScores]
    parser_classes = [MultiPartParser, FormParser, PredictionsJSONParser]

    @extend_schema(
        responses=ModelRunSerializer(many=True),
        parameters=[OpenApiParameter("release", str, description="only the runs scored on this release")],
        summary="Scored and pending model runs (staff: all; a release reader: the published ones and their own)",
    )
    def get(self, request):
        runs = selectors.runs_visible_to(user=request.user)
        if request.query_params.get("release"):
            runs = runs.filter(release__version=request.query_params["release"])
        return Response(ModelRunSerializer(runs, many=True).data)

    @extend_schema(
        request=ModelRunUploadSerializer,
        responses={
            202: ModelRunSerializer,
            400: OpenApiResponse(description="`errors`: one `file:line: field: reason` per problem; nothing saved"),
            429: OpenApiResponse(description="a release reader's daily number of uploads is reached"),
        },
        summary="Upload a model's predictions (staff; a release reader: a run of their own, published by staff); "
                "scoring runs as a Celery job",
    )
    def post(self, request):
        upload = ModelRunUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        source = data["file"].name if data.get("file") else "predictions"
        try:
            services.run_upload_check(uploaded_by=request.user, size=data["file"].size if data.get("file") else 0,
                                      source=source)
        except services.UploadLimited as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except services.InputErrors as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        if data.get("file"):
            try:
                lines, source = data["file"].read().decode("utf-8").splitlines(), data["file"].name
            except UnicodeDecodeError as exc:
                return Response({"errors": [f"{data['file'].name}:0: file: not UTF-8 ({exc.reason})"]}, status=400)
        else:
            lines, source = [json.dumps(record) for record in data["predictions"]], "predictions"
        try:
            run = services.model_run_create(
                name=data["name"], model_name=data["model_name"], release=data["release"],
                description=data["description"], lines=lines, source=source, uploaded_by=request.user,
            )
        except services.UploadLimited as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except services.InputErrors as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        run.refresh_from_db()  # queued on commit: `pending`, or `waiting` for the broker
        return Response(ModelRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class ModelRunDetailApi(APIView):
    permission_classes = [ReadsScores]

    @extend_schema(responses=ModelRunDetailSerializer, summary="A model run's scores and statistics")
    def get(self, request, name):
        return Response(ModelRunDetailSerializer(get_object_or_404(selectors.runs_visible_to(user=request.user), name=name)).data)


class ModelRunPublishApi(APIView):
    permission_classes = [ManagesRuns]

    @extend_schema(request=ModelRunPublishSerializer, responses={200: ModelRunSerializer},
                   summary="Put a run on every release reader's leaderboard, or take it off (staff)")
    def post(self, request, name):
        payload = ModelRunPublishSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        run = services.model_run_publish(run=get_object_or_404(ModelRun, name=name), published=payload.validated_data["published"])
        return Response(ModelRunSerializer(run).data)


class ModelRunRescoreApi(APIView):
    permission_classes = [ManagesRuns]

    @extend_schema(request=None, responses={202: ModelRunSerializer}, summary="Queue a new scoring (staff)")
    def post(self, request, name):
        run = get_object_or_404(ModelRun, name=name)
        if run.release_id is None:
            return Response({"errors": [f"run {name} names no release: upload it again naming one"]}, status=400)
        run = services.model_run_rescore(run=run)
        return Response(ModelRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class ModelRunCompareApi(APIView):
    permission_classes = [ReadsScores]

    @extend_schema(
        parameters=[OpenApiParameter("a", str, required=True), OpenApiParameter("b", str, required=True)],
        responses=ComparisonSerializer,
        summary="McNemar's test of two scored runs on the items both answered",
    )
    def get(self, request):
        names = request.query_params.get("a"), request.query_params.get("b")
        if not all(names) or names[0] == names[1]:
            return Response({"errors": ["a, b: two different run names are needed"]}, status=400)
        runs = {run.name: run for run in selectors.runs_visible_to(user=request.user).filter(name__in=names)}
        missing = [n for n in names if n not in runs]
        if missing:
            return Response({"errors": [f"unknown run {n}" for n in missing]}, status=404)
        unscored = [n for n in names if runs[n].status != "succeeded"]
        if unscored:
            return Response({"errors": [f"run {n} is not scored yet" for n in unscored]}, status=409)
        problem = selectors.runs_comparable(run_a=runs[names[0]], run_b=runs[names[1]])
        if problem:
            return Response({"errors": [problem]}, status=400)
        return Response(ComparisonSerializer(selectors.runs_compare(run_a=runs[names[0]], run_b=runs[names[1]])).data)


class BaselineListApi(APIView):
    permission_classes = [ReadsScores]

    @extend_schema(responses=BaselineRunSerializer(many=True), summary="Latest human baseline of each pool")
    def get(self, request):
        return Response(BaselineRunSerializer(selectors.latest_baselines(), many=True).data)
