from rest_framework import serializers

from .models import BaselineRun, ModelRun


class ModelRunSerializer(serializers.ModelSerializer):
    overall_rate = serializers.FloatField(read_only=True, allow_null=True)
    release = serializers.SlugRelatedField(slug_field="version", read_only=True, help_text="the release it is scored on")
    scored_items = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="predictions scored: on items the release holds (null until scored)"
    )
    release_items = serializers.IntegerField(source="release.n_items", read_only=True, allow_null=True,
                                             help_text="items the release holds")
    uploaded_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ModelRun
        fields = ["id", "name", "model_name", "release", "description", "status", "n_predictions", "scored_items",
                  "release_items", "overall_rate", "published", "uploaded_by", "created_at", "scored_at"]


class ModelRunDetailSerializer(ModelRunSerializer):
    class Meta(ModelRunSerializer.Meta):
        fields = ModelRunSerializer.Meta.fields + ["scores", "stats", "error"]


class ModelRunUploadSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    model_name = serializers.CharField(max_length=200)
    release = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="",
        help_text="the ready release to score on (default: the latest); predictions for items it did not audit are refused",
    )
    description = serializers.CharField(required=False, allow_blank=True, default="")
    file = serializers.FileField(required=False, help_text="JSONL: item_id, prediction (A–D or NOTA), reasoning?")
    predictions = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="the same records as a JSON list, instead of a file"
    )

    def validate(self, attrs):
        if bool(attrs.get("file")) == bool(attrs.get("predictions")):
            raise serializers.ValidationError("give either a JSONL `file` or a `predictions` list")
        return attrs


class ModelRunPublishSerializer(serializers.Serializer):
    published = serializers.BooleanField(default=True, help_text="false takes it off the readers' leaderboard")


class McNemarSerializer(serializers.Serializer):
    table = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    n = serializers.IntegerField()
    discordant = serializers.IntegerField()
    statistic = serializers.FloatField()
    p_value = serializers.FloatField(allow_null=True)
    method = serializers.CharField()
    rate_a = serializers.FloatField(allow_null=True)
    rate_b = serializers.FloatField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    mcnemar = McNemarSerializer()
    stored = serializers.BooleanField()


class BaselineRunSerializer(serializers.ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    release = serializers.SlugRelatedField(slug_field="version", read_only=True)
    overall_rate = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = BaselineRun
        fields = ["id", "pool", "release", "status", "overall_rate", "scores", "by_person", "created_at", "scored_at"]
