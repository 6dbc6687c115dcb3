"""Fill the item summaries made by annotation's `item_summary` migration from their sources
(judgments, current aggregates, flags, decisions): the rebuild, run once."""
from django.db import migrations


def fill(apps, schema_editor):
    from review.item_summaries import item_summaries_rebuild

    item_summaries_rebuild()


class Migration(migrations.Migration):

    dependencies = [
        ("review", "0001_initial"),
        ("annotation", "0009_item_summary"),
        ("aggregation", "0004_item_result_n_agree"),
        ("verification", "0008_lean_queue"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
