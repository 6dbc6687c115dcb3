from django.apps import AppConfig


class AggregationConfig(AppConfig):
    name = "aggregation"
