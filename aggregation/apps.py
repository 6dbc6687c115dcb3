from django.apps import AppConfig


class AggregationConfig(AppConfig):
    name = "aggregation"

    def ready(self):
        from verification import tallies  # noqa: PLC0415

        from .summaries import batches_regolded  # noqa: PLC0415

        if batches_regolded not in tallies.REGOLD_HOOKS:
            tallies.REGOLD_HOOKS.append(batches_regolded)
