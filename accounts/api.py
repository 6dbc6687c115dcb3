"""Staff API about people: exclude a verifier from aggregation, or include them again."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsProjectStaff

from . import services
from .models import User


class ExclusionSerializer(serializers.Serializer):
    excluded = serializers.BooleanField()
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)


class ExclusionOutSerializer(serializers.Serializer):
    username = serializers.CharField()
    excluded_from_aggregation = serializers.BooleanField()
    exclusion_reason = serializers.CharField(allow_blank=True)


class ExclusionView(APIView):
    permission_classes = [IsProjectStaff]

    @extend_schema(request=ExclusionSerializer, responses={200: ExclusionOutSerializer})
    def post(self, request, username: str):
        incoming = ExclusionSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        user = services.verifier_exclusion_set(user=get_object_or_404(User, username=username), **incoming.validated_data)
        return Response(ExclusionOutSerializer(user).data)
