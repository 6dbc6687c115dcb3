"""DRF doors of the review app: a batch's guideline (GET / PUT) and an item's staff decisions
(GET its history, POST a new one), onto the same services as the pages."""
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsProjectStaff
from annotation.models import Batch
from dialtom_site.parsers import StrictJSONParser

from . import item_list, selectors, services, verifier_agreement
from .forms import ItemFilterForm
from .models import EXAMPLE_TOPICS, Adjudication, Decision


class GuidelineSerializer(serializers.Serializer):
    batch = serializers.CharField(read_only=True)
    text = serializers.CharField(max_length=services.MAX_TEXT, help_text="Markdown; raw HTML is not rendered")
    examples = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=services.MAX_TEXT), required=False,
        help_text=f"topic → Markdown, topics: {', '.join(code for code, _ in EXAMPLE_TOPICS)}; given: replaces every "
                  "example (a blank one is removed); left out: the examples stay",
    )
    updated_by = serializers.CharField(read_only=True, allow_null=True)
    updated_at = serializers.DateTimeField(read_only=True, allow_null=True)


class DecisionSerializer(serializers.ModelSerializer):
    item_id = serializers.CharField(source="item.item_id", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Adjudication
        fields = ["id", "item_id", "decision", "reason", "decided_by", "decided_at"]
        read_only_fields = ["id", "decided_at"]


class DecisionCreateSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.values, help_text="keep: released with its intended answer; drop: never released")
    reason = serializers.CharField(max_length=5000)


def _problem(exc: ValidationError) -> Response:
    detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
    return Response(detail, status=status.HTTP_400_BAD_REQUEST)


def _guideline_data(batch: Batch) -> dict:
    source = selectors.guideline_source(batch=batch)
    if not source["exists"]:
        raise NotFound(f"batch {batch.name} has no guideline")
    return {**source, "examples": {topic: text for topic, text in source["examples"].items() if text}}


class GuidelineApi(APIView):
    permission_classes = [IsProjectStaff]
    parser_classes = [StrictJSONParser]

    @extend_schema(responses={200: GuidelineSerializer, 404: OpenApiResponse(description="no such batch, or no guideline")},
                   summary="A batch's guideline: Markdown and an example per attribute (staff)")
    def get(self, request, name):
        return Response(GuidelineSerializer(_guideline_data(get_object_or_404(Batch, name=name))).data)

    @extend_schema(request=GuidelineSerializer, responses={200: GuidelineSerializer, 400: OpenApiResponse(description="field: reason")},
                   summary="Write a batch's guideline (staff); verifiers see it from their next item")
    def put(self, request, name):
        batch = get_object_or_404(Batch, name=name)
        payload = GuidelineSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            services.guideline_set(batch_name=batch.name, text=payload.validated_data["text"],
                                   examples=payload.validated_data.get("examples"), updated_by=request.user)
        except ValidationError as exc:
            return _problem(exc)
        return Response(GuidelineSerializer(_guideline_data(batch)).data)


class ItemDecisionsApi(APIView):
    permission_classes = [IsProjectStaff]
    parser_classes = [StrictJSONParser]

    @extend_schema(responses={200: DecisionSerializer(many=True), 404: OpenApiResponse(description="no such item")},
                   summary="An item's staff decisions, the one in force first (staff)")
    def get(self, request, item_id):
        decisions = selectors.item_decisions(item_id=item_id)
        if decisions is None:
            raise NotFound(f"no item {item_id}")
        return Response(DecisionSerializer(decisions, many=True).data)

    @extend_schema(
        request=DecisionCreateSerializer,
        responses={201: DecisionSerializer, 400: OpenApiResponse(description="field: reason (gold item, no reason, …)"),
                   404: OpenApiResponse(description="no such item")},
        summary="Keep or drop an item (staff); the next release honours it, its open flags are resolved",
    )
    def post(self, request, item_id):
        if selectors.item_decisions(item_id=item_id) is None:
            raise NotFound(f"no item {item_id}")
        payload = DecisionCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            decision = services.adjudication_record(item_id=item_id, staff=request.user, **payload.validated_data)
        except ValidationError as exc:
            return _problem(exc)
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)


# --- Agreement between verifiers (issue 23) --------------------------------------------------


class VerifierPairSerializer(serializers.Serializer):
    verifier_a = serializers.CharField(help_text="username; the pair is listed once, a before b")
    verifier_b = serializers.CharField()
    co_judged = serializers.IntegerField(help_text="items both judged (gold left out)")
    agreed = serializers.IntegerField(help_text="of those, the items they answered alike")
    agreement = serializers.FloatField(help_text="agreed / co_judged")


class VerifierPairsApi(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(
        parameters=[
            OpenApiParameter("batch", str, description="a batch name (default: every batch)"),
            OpenApiParameter("task", str, enum=list(verifier_agreement.TASKS), description="one task (default: both)"),
        ],
        responses={200: VerifierPairSerializer(many=True)},
        summary="Every pair of verifiers who judged items in common, and how often alike (staff); read from kept tallies",
    )
    def get(self, request):
        pairs = verifier_agreement.verifier_pairs(batch=request.query_params.get("batch", "").strip(),
                                                  task=request.query_params.get("task", ""))
        return Response(VerifierPairSerializer(pairs, many=True).data)


# --- issue 23: the item list (h3) -----------------------------------------------------------------


class ItemRowSerializer(serializers.Serializer):
    item_id = serializers.CharField()
    batch = serializers.CharField(allow_null=True)
    domain = serializers.CharField()
    task = serializers.CharField()
    attribute = serializers.CharField()
    variant = serializers.CharField()
    intended = serializers.CharField(help_text="the intended answer")
    judgments = serializers.IntegerField()
    flags_open = serializers.IntegerField()
    flags_total = serializers.IntegerField()
    label = serializers.CharField(allow_null=True, help_text="the current aggregate's label (null: not aggregated)")
    posterior = serializers.FloatField(allow_null=True)
    n_agree = serializers.IntegerField(allow_null=True, help_text="judgments the aggregate counted that agree with its label")
    agreement = serializers.FloatField(allow_null=True, help_text="n_agree / judgments the aggregate counted")
    retained = serializers.BooleanField(allow_null=True)
    disagrees = serializers.BooleanField(allow_null=True, help_text="the aggregate's label is not the intended answer")
    decision = serializers.CharField(allow_null=True, help_text="the staff decision in force: keep, drop or null")


class ItemListSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text=f"items matching, counted up to {item_list.COUNT_CAP:,}")
    count_capped = serializers.BooleanField(help_text=f"more than {item_list.COUNT_CAP:,} match")
    count_estimated = serializers.BooleanField(
        help_text=f"`count` is PostgreSQL's estimate: counting exactly took longer than {item_list.COUNT_BUDGET_MS} ms")
    next = serializers.CharField(allow_null=True, help_text="the next page's URL")
    previous = serializers.CharField(allow_null=True, help_text="the previous page's URL")
    results = ItemRowSerializer(many=True)


def _filter_parameters() -> list[OpenApiParameter]:
    form = ItemFilterForm()
    out = []
    for name, field in form.fields.items():
        choices = [c for c, _ in getattr(field, "choices", []) if c]
        kind = float if name.startswith("posterior") else (int if name == "size" else str)
        out.append(OpenApiParameter(name, kind, required=False, enum=choices or None, description=str(field.help_text or "")))
    return out


class ItemListApi(APIView):
    """The staff's item list: the same filters, sort and keyset pages as `/review/items/`."""

    permission_classes = [IsProjectStaff]

    @extend_schema(parameters=_filter_parameters(),
                   responses={200: ItemListSerializer, 400: OpenApiResponse(description="parameter: reason (unknown parameter, bad value, stale cursor)")},
                   summary="Items with their judgments, aggregate, flags and decision: filtered, sorted, keyset pages (staff)")
    def get(self, request):
        form = ItemFilterForm(request.query_params, known_only=True)
        if not form.is_valid():
            return Response({field: list(errors) for field, errors in form.errors.items()}, status=status.HTTP_400_BAD_REQUEST)
        try:
            page = item_list.item_page(filters=form.cleaned_data)
        except item_list.BadCursor as exc:
            return Response({"after" if form.cleaned_data.get("after") else "before": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)

        def url(key: str, cursor: str | None) -> str | None:
            if cursor is None:
                return None
            params = request.query_params.copy()
            params.pop("after", None)
            params.pop("before", None)
            params[key] = cursor
            return request.build_absolute_uri(request.path + "?" + params.urlencode())

        return Response({
            "count": page.total, "count_capped": page.capped, "count_estimated": page.estimated,
            "next": url("after", page.next), "previous": url("before", page.previous),
            "results": [item_list.item_row(row) for row in page.rows],
        })
