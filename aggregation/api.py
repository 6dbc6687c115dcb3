"""Staff-only API: start an aggregation run, follow its status and progress."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsProjectStaff
from annotation.models import Batch

from . import selectors, services
from .models import AggregationRun


class RunStartSerializer(serializers.Serializer):
    batches = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, allow_empty=False,
        help_text="batch names; leave out (or set all=true) for every batch that holds judgments",
    )
    all = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs):
        names = attrs.get("batches")
        if names and attrs.get("all"):
            raise serializers.ValidationError("give either batches or all, not both")
        if names:
            found = dict(Batch.objects.filter(name__in=names).values_list("name", "pk"))
            unknown = [n for n in names if n not in found]
            if unknown:
                raise serializers.ValidationError({"batches": f"unknown batch(es): {', '.join(unknown)}"})
            attrs["batch_ids"] = [found[n] for n in names]
        else:
            attrs["batch_ids"] = selectors.batch_ids_audited()
            if not attrs["batch_ids"]:
                raise serializers.ValidationError("no batch has judgments yet: nothing to aggregate")
        return attrs


class RunSerializer(serializers.ModelSerializer):
    batches = serializers.SlugRelatedField(many=True, read_only=True, slug_field="name")
    started_by = serializers.SlugRelatedField(read_only=True, slug_field="username")

    class Meta:
        model = AggregationRun
        fields = [
            "id", "status", "trigger", "batches", "started_by", "progress", "batches_done", "batches_total", "attempts",
            "created_at", "started_at", "finished_at", "settings", "versions", "counts", "timings", "summary", "error",
        ]
        read_only_fields = fields


class RunListCreateView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(
        request=RunStartSerializer,
        responses={202: RunSerializer},
        summary="Start an aggregation run (status `waiting` while the broker is down: the sweep queues it later)",
    )
    def post(self, request):
        serializer = RunStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = services.aggregation_run_create(
            batch_ids=serializer.validated_data["batch_ids"], trigger="api", started_by=request.user
        )
        run.refresh_from_db()  # queued on commit: `pending`, or `waiting` for the broker
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: RunSerializer(many=True)}, summary="The latest aggregation runs")
    def get(self, request):
        runs = selectors.runs_list().select_related("started_by").prefetch_related("batches")[:50]
        return Response(RunSerializer(runs, many=True).data)


class RunDetailView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(responses={200: RunSerializer}, summary="Status and progress of an aggregation run")
    def get(self, request, run_id: int):
        run = get_object_or_404(AggregationRun.objects.select_related("started_by"), pk=run_id)
        return Response(RunSerializer(run).data)
