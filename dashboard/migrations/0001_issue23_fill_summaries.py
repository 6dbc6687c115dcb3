"""Filled the staff pages' summaries (issue 23); the fill has moved to 0003.

The fill calls the rebuild itself (`dashboard.summaries`), which reads the schema of today's code:
since the item summaries read the view of review 0003, it must run after that migration, and this
one cannot depend on it (databases that ran this one already would refuse the new order). Kept as
a step so that the history stays the same.
"""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("verification", "0012_issue23_review_indexes"),
        ("aggregation", "0006_item_result_n_agree"),
        ("annotation", "0010_item_summary"),
        ("review", "0002_issue23_review_indexes"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
