"""Fill the staff pages' summaries (issue 23) for the data already there.

It calls the rebuild itself (`dashboard.summaries`), not historical models, so it depends on the
last migration of every app whose tables the rebuild reads: when the rebuild comes to read a newer
schema, move this fill again (as 0001's was moved here) rather than add that dependency to it.
`tests/annotation/test_migrations.py` runs it on a database with data. Does nothing on an empty
database; on one that ran 0001's fill it recounts the same numbers.
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
        ("dashboard", "0002_issue23_fill_flag_tallies"),
        ("verification", "0012_issue23_review_indexes"),
        ("aggregation", "0008_staff_page_indexes"),
        ("annotation", "0010_item_summary"),
        ("review", "0003_decision_in_force"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
