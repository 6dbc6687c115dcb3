"""The DRF door onto studies (staff): create and read studies, the payment exports,
overrides of the gold rule and bonuses. The same services the pages and commands call."""
from decimal import Decimal

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsProjectStaff

from . import selectors, services
from .models import Participant, Study


def _error(exc: services.StudyError) -> Response:
    body = {"detail": exc.message}
    if exc.field:
        body[exc.field] = [exc.message]
    return Response(body, status=exc.status)


class StudyInSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    platform = serializers.CharField(help_text="prolific, mturk or link")
    batches = serializers.ListField(child=serializers.SlugField(), required=False, default=list)
    reference_set = serializers.SlugField(required=False, allow_null=True, default=None)
    quota = serializers.IntegerField(min_value=1, max_value=100_000)
    session_minutes = serializers.IntegerField(min_value=1, max_value=10_080, default=60)
    completion_code = serializers.CharField(max_length=64)
    screen_out_code = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    pay_per_item = serializers.DecimalField(max_digits=8, decimal_places=4, required=False, allow_null=True, default=None)
    pay_per_hour = serializers.DecimalField(max_digits=8, decimal_places=4, required=False, allow_null=True, default=None)
    currency = serializers.CharField(max_length=3, default="GBP")
    minimum_hourly = serializers.DecimalField(max_digits=8, decimal_places=2, required=False, allow_null=True, default=None)
    item_seconds_cap = serializers.IntegerField(min_value=1, max_value=86_400, default=300)
    qualification_batch = serializers.SlugField(required=False, allow_null=True, default=None)
    qualification_pass_mark = serializers.FloatField(min_value=0, max_value=1, default=0.8)
    gold_threshold = serializers.FloatField(min_value=0, max_value=1, required=False, allow_null=True, default=None)
    gold_min_answers = serializers.IntegerField(min_value=1, max_value=10_000, default=3)


def study_out(study: Study, *, request=None, ledger=None) -> dict:
    base = request.build_absolute_uri("/") if request is not None else None
    return {
        "study": study.name,
        "url": selectors.study_url(study=study, base=base),
        "platform": study.platform,
        "status": study.status,
        "batches": sorted(study.batches.values_list("name", flat=True)),
        "reference_set": study.reference_set.name if study.reference_set_id else None,
        "quota": study.quota,
        "session_minutes": study.session_minutes,
        "completion_code": study.completion_code,
        "screen_out_code": study.screen_out_code,
        "pay_basis": study.pay_basis,
        "pay_rate": str(study.pay_rate),
        "currency": study.currency,
        "qualification_batch": study.qualification_batch.name if study.qualification_batch_id else None,
        "qualification_pass_mark": study.qualification_pass_mark,
        "gold_threshold": study.gold_threshold,
        "participants": selectors.study_counts(study=study),
        "rate": {k: (str(v) if v is not None and not isinstance(v, (bool, int, float, str)) else v)
                 for k, v in selectors.study_rate(study=study, ledger=ledger).items()},
    }


class StudyListView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(operation_id="v1_studies_list", responses={200: dict})
    def get(self, request):
        return Response([study_out(s, request=request) for s in Study.objects.order_by("name")])

    @extend_schema(operation_id="v1_studies_create", request=StudyInSerializer, responses={201: dict})
    def post(self, request):
        incoming = StudyInSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            study = services.study_create(created_by=request.user, **incoming.validated_data)
        except services.StudyError as exc:
            return _error(exc)
        return Response(study_out(study, request=request), status=status.HTTP_201_CREATED)


class StudyStatusSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="open or closed")


class StudyDetailView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(operation_id="v1_study_retrieve", responses={200: dict})
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        ledger = selectors.study_ledger(study=study)
        body = study_out(study, request=request, ledger=ledger)
        body["ledger"] = [
            {"participant_id": r.participant_id, "status": r.status, "items": r.items, "active_seconds": r.active_seconds,
             "base": f"{r.base:.2f}", "bonus": f"{r.bonus:.2f}", "owed": f"{r.owed:.2f}", "excluded": r.excluded}
            for r in ledger
        ]
        return Response(body)

    @extend_schema(operation_id="v1_study_status_set", request=StudyStatusSerializer, responses={200: dict})
    def post(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        incoming = StudyStatusSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            services.study_status_set(study=study, status=incoming.validated_data["status"])
        except services.StudyError as exc:
            return _error(exc)
        return Response(study_out(study, request=request))


class IgnoreFormatNegotiation(DefaultContentNegotiation):
    """`?format=` names the export here, not a DRF renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class StudyPaymentsView(APIView):
    permission_classes = [IsProjectStaff]
    content_negotiation_class = IgnoreFormatNegotiation

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=list(selectors.EXPORT_FORMATS), default="csv")],
                   responses={(200, "text/csv"): str})
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        fmt = request.query_params.get("format", "csv")
        if fmt not in selectors.EXPORT_FORMATS:
            return Response({"detail": f"format: one of {', '.join(selectors.EXPORT_FORMATS)}"}, status=400)
        body = selectors.payments_export(study=study, fmt=fmt)
        return HttpResponse(body, content_type="text/plain; charset=utf-8" if fmt == "prolific-bonus" else "text/csv; charset=utf-8")


def _participant(name: str, participant_id: str) -> Participant:
    return get_object_or_404(Participant.objects.select_related("study", "user"), study__name=name,
                             participant_id=participant_id)


def _participant_act(request, name: str, participant_id: str, serializer_class, action):
    """A staff action on one participant: the body validated by `serializer_class`, then
    `action(participant=…, by=…, **body)`; a refusal of the service is answered as such."""
    participant = _participant(name, participant_id)
    incoming = serializer_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        return action(participant=participant, by=request.user, **incoming.validated_data)
    except services.StudyError as exc:
        return _error(exc)


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500)


class ParticipantOverrideView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(request=ReasonSerializer, responses={200: dict})
    def post(self, request, name: str, participant_id: str):
        done = _participant_act(request, name, participant_id, ReasonSerializer, services.participant_stop_override)
        if isinstance(done, Response):
            return done
        return Response({"participant_id": done.participant_id, "status": done.status, "reason": done.status_reason})


class BonusSerializer(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=8, decimal_places=2, min_value=Decimal("0.01"))
    reason = serializers.CharField(max_length=300)


class ParticipantBonusView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(request=BonusSerializer, responses={201: dict})
    def post(self, request, name: str, participant_id: str):
        line = _participant_act(request, name, participant_id, BonusSerializer, services.bonus_add)
        if isinstance(line, Response):
            return line
        return Response({"participant_id": participant_id, "amount": f"{line.amount:.2f}", "reason": line.reason},
                        status=status.HTTP_201_CREATED)
