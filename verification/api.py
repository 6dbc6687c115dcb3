"""The DRF door onto the audit queue: the same services the htmx views call."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsProjectStaff, IsVerifier
from annotation.models import Batch, BatchStatus

from . import selectors, services
from .models import Judgment
from .queue import Staffing, batch_staffing


BUSY_RETRY_AFTER = "1"  # seconds: a busy queue (claims contending this instant) frees up in milliseconds


def error_response(exc: services.VerificationError) -> Response:
    body = {"detail": exc.message, "code": exc.code}
    if exc.field:
        body[exc.field] = [exc.message]
    headers = {"Retry-After": BUSY_RETRY_AFTER} if exc.code == "busy" else None
    return Response(body, status=exc.status, headers=headers)


class TurnSerializer(serializers.Serializer):
    speaker = serializers.CharField(allow_blank=True, help_text="the domain role, e.g. counselor / client")
    text = serializers.CharField()


class OptionSerializer(serializers.Serializer):
    letter = serializers.CharField()
    text = serializers.CharField()
    turns = TurnSerializer(many=True, required=False, help_text="prospective items: the continuation, turn by turn")


class ItemViewSerializer(serializers.Serializer):
    claim = serializers.UUIDField()
    batch = serializers.CharField()
    task = serializers.CharField()
    domain = serializers.CharField()
    attribute = serializers.CharField(allow_blank=True, help_text="retrospective items only")
    question = serializers.CharField()
    options = OptionSerializer(many=True, help_text="in the order shown to you; answer with these letters")
    choices = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField()
    context = TurnSerializer(many=True, required=False, help_text="retrospective items only")
    target_speaker = serializers.CharField(required=False)
    profile = serializers.DictField(child=serializers.CharField(), required=False, help_text="prospective items only")


class JudgmentChangeSerializer(serializers.Serializer):
    """An answer: what a new judgment and a change of one both carry."""

    choice = serializers.CharField(max_length=10, help_text="A–D as displayed, NOTA where shown, NONE or MULTIPLE")
    implausible = serializers.ListField(child=serializers.CharField(max_length=1), required=False, default=list)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class JudgmentInSerializer(JudgmentChangeSerializer):
    claim = serializers.UUIDField()
    idempotency_key = serializers.UUIDField(help_text="client-generated; a retry with the same key returns the stored judgment")


class JudgmentOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    claim = serializers.CharField(allow_blank=True, help_text="the claim it answered (the only reference to its item)")
    choice = serializers.CharField(help_text="as displayed to you")
    implausible = serializers.ListField(child=serializers.CharField())
    comment = serializers.CharField(allow_blank=True)
    seconds_spent = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()


class ProgressSerializer(serializers.Serializer):
    batch = serializers.CharField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    assigned = serializers.IntegerField()
    percent = serializers.IntegerField()


class NextItemView(APIView):
    permission_classes = [IsVerifier]

    @extend_schema(
        parameters=[OpenApiParameter("batch", str, required=True)],
        responses={200: ItemViewSerializer, 204: OpenApiResponse(description="nothing left for you in this batch")},
    )
    def get(self, request):
        name = request.query_params.get("batch", "")
        if not name:
            return Response({"detail": "the batch parameter is required", "batch": ["required"]}, status=400)
        try:
            claim = services.item_claim_next(verifier=request.user, batch_name=name)
        except services.VerificationError as exc:
            return error_response(exc)
        if claim is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        # `item_view_for` is the one place an item becomes what a verifier sees: already in
        # ItemViewSerializer's shape (the schema), so no serializer is built per request
        return Response(selectors.item_view_for(claim=claim))


class JudgmentAndNextSerializer(JudgmentOutSerializer):
    next_item = ItemViewSerializer(
        allow_null=True, required=False,
        help_text="with ?next=1: your next item of the batch (null when none is left; absent when the queue was busy: ask GET /next-item/)",
    )


class JudgmentCreateView(APIView):
    permission_classes = [IsVerifier]

    @extend_schema(
        parameters=[OpenApiParameter("next", bool, required=False, description="answer with your next item of the batch too")],
        request=JudgmentInSerializer,
        responses={201: JudgmentAndNextSerializer, 200: JudgmentAndNextSerializer},
    )
    def post(self, request):
        incoming = JudgmentInSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            result = services.judgment_submit(
                verifier=request.user,
                claim_id=data["claim"],
                choice=data["choice"],
                idempotency_key=data["idempotency_key"],
                implausible=data["implausible"],
                comment=data["comment"],
                source="api",
            )
        except services.VerificationError as exc:
            return error_response(exc)
        body = selectors.judgment_view_for(judgment=result.judgment)  # JudgmentOutSerializer's shape
        if request.query_params.get("next") in ("1", "true"):
            # submit-and-next: the answer's response carries the next item (a retry gets the
            # item in hand again: the live claim)
            try:
                claim = services.item_claim_next(verifier=request.user, batch_name=result.batch_name)
            except services.VerificationError as exc:
                if exc.code == "busy":  # no next_item at all: ask GET /next-item/ (null would say "none left")
                    return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)
                claim = None  # the batch was paused or closed since: nothing more to hand out
            body["next_item"] = selectors.item_view_for(claim=claim) if claim else None
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class JudgmentChangeView(APIView):
    permission_classes = [IsVerifier]

    @extend_schema(request=JudgmentChangeSerializer, responses={200: JudgmentOutSerializer})
    def put(self, request, judgment_id: int):
        incoming = JudgmentChangeSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            services.judgment_change(verifier=request.user, judgment_id=judgment_id, **incoming.validated_data)
        except services.VerificationError as exc:
            return error_response(exc)
        judgment = Judgment.objects.select_related("item", "claim").get(pk=judgment_id)
        return Response(JudgmentOutSerializer(selectors.judgment_view_for(judgment=judgment)).data)


class ProgressView(APIView):
    permission_classes = [IsVerifier]

    @extend_schema(responses={200: ProgressSerializer(many=True)})
    def get(self, request):
        rows = selectors.queue_progress_for_batches(
            verifier=request.user, batches=selectors.batches_for_verifier(verifier=request.user)
        )
        return Response(ProgressSerializer(rows, many=True).data)


# --- staff ----------------------------------------------------------------------------------


class BatchStatusSerializer(serializers.Serializer):
    # A plain string (checked below) rather than an enum: other apps' `status` enums would
    # collide in the OpenAPI component names.
    status = serializers.CharField(help_text="open, paused or closed")
    overlap = serializers.IntegerField(min_value=1, required=False)
    k_min = serializers.IntegerField(min_value=1, required=False, help_text="adaptive overlap (with k_max)")
    k_max = serializers.IntegerField(min_value=1, required=False, help_text="adaptive overlap (with k_min)")
    gold_rate = serializers.FloatField(min_value=0, max_value=1, required=False)
    pools = serializers.ListField(child=serializers.SlugField(), required=False)

    def validate_status(self, value: str) -> str:
        if value not in BatchStatus.values:
            raise serializers.ValidationError(f"must be one of {', '.join(BatchStatus.values)}")
        return value


class BatchOutSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    overlap = serializers.IntegerField()
    gold_rate = serializers.FloatField()
    lease_minutes = serializers.IntegerField()
    pools = serializers.SerializerMethodField()
    adaptive_overlap = serializers.SerializerMethodField()

    def get_adaptive_overlap(self, batch) -> dict | None:
        adaptive = getattr(batch, "adaptive_overlap", None)
        return None if adaptive is None else adaptive.policy
    verifiers_needed = serializers.SerializerMethodField(help_text="different verifiers the context rule needs")
    verifiers_available = serializers.SerializerMethodField(help_text="verifiers in the batch's pools")
    short = serializers.SerializerMethodField(help_text="needs more than its pools hold: least-exposure fallback")

    def get_pools(self, batch) -> list[str]:
        return sorted(batch.pools.values_list("name", flat=True))

    def _staffing(self, batch) -> Staffing:
        if getattr(self, "_staffing_of", (None, None))[0] != batch.pk:
            self._staffing_of = (batch.pk, batch_staffing(batch_ids=[batch.pk])[batch.pk])
        return self._staffing_of[1]

    def get_verifiers_needed(self, batch) -> int:
        return self._staffing(batch).needed

    def get_verifiers_available(self, batch) -> int:
        return self._staffing(batch).available

    def get_short(self, batch) -> bool:
        return self._staffing(batch).short


class BatchStatusView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(request=BatchStatusSerializer, responses={200: BatchOutSerializer})
    def post(self, request, batch_name: str):
        incoming = BatchStatusSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            if data["status"] == BatchStatus.OPEN:
                get_object_or_404(Batch, name=batch_name)
                batch, _ = services.batch_open(
                    name=batch_name, overlap=data.get("overlap"), gold_rate=data.get("gold_rate"), pools=data.get("pools", []),
                    k_min=data.get("k_min"), k_max=data.get("k_max"),
                )
            elif data["status"] == BatchStatus.PAUSED:
                batch = services.batch_pause(name=batch_name)
            else:
                batch = services.batch_close(name=batch_name)
        except services.VerificationError as exc:
            return error_response(exc)
        return Response(BatchOutSerializer(batch).data)


class GoldAccuracySerializer(serializers.Serializer):
    verifier = serializers.CharField()
    excluded = serializers.BooleanField()
    gold_answered = serializers.IntegerField()
    gold_correct = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)


class GoldAccuracyView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(parameters=[OpenApiParameter("batch", str, required=False)], responses={200: GoldAccuracySerializer(many=True)})
    def get(self, request):
        batch = None
        if request.query_params.get("batch"):
            batch = get_object_or_404(Batch, name=request.query_params["batch"])
        return Response(GoldAccuracySerializer(selectors.gold_accuracy(batch=batch), many=True).data)


class ItemsGoldSerializer(serializers.Serializer):
    item_ids = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    is_gold = serializers.BooleanField(default=True)


class ItemsGoldOutSerializer(serializers.Serializer):
    updated = serializers.IntegerField()
    is_gold = serializers.BooleanField()


class ItemsGoldView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(request=ItemsGoldSerializer, responses={200: ItemsGoldOutSerializer})
    def post(self, request):
        incoming = ItemsGoldSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            n = services.items_gold_set(**incoming.validated_data)
        except services.VerificationError as exc:
            return error_response(exc)
        return Response({"updated": n, "is_gold": incoming.validated_data["is_gold"]})
