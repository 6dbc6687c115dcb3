"""Fill the item summaries made by annotation's `item_summary` migration from their sources
(judgments, current aggregates, flags, decisions): the rebuild, run once."""
from django.db import migrations


def fill(apps, schema_editor):
    from review.item_summaries import item_summaries_rebuild

    item_summaries_rebuild()


class Migration(migrations.Migration):

    dependencies = [
        ("review", "0002_issue23_review_indexes"),
        ("annotation", "0010_item_summary"),
        ("aggregation", "0006_item_result_n_agree"),
        ("verification", "0012_issue23_review_indexes"),
        ("dashboard", "0002_issue23_fill_flag_tallies"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
