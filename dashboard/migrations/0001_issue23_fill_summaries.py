"""Fill the staff pages' summaries (issue 23) for the data already there.

It calls the rebuild itself (`dashboard.summaries`), not historical models: it must run with the
schema of the migrations it depends on, and does nothing on an empty database.
"""
from django.db import migrations


def fill(apps, schema_editor):
    Judgment = apps.get_model("verification", "Judgment")
    ItemResult = apps.get_model("aggregation", "ItemResult")
    Item = apps.get_model("annotation", "Item")
    if not (Judgment.objects.exists() or ItemResult.objects.exists() or Item.objects.exists()):
        return
    from dashboard.summaries import summaries_rebuild

    summaries_rebuild()


class Migration(migrations.Migration):
    dependencies = [
        ("verification", "0012_issue23_review_indexes"),
        ("aggregation", "0006_item_result_n_agree"),
        ("annotation", "0010_item_summary"),
        ("review", "0002_issue23_review_indexes"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
