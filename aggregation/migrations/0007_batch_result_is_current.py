"""BatchResult.is_current (issue 23): each batch's current results marked, so that the staff pages
read them through a partial index instead of grouping every batch's results on every load."""
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def mark_current(apps, schema_editor):
    BatchResult = apps.get_model("aggregation", "BatchResult")
    latest = (BatchResult.objects.filter(batch_id=OuterRef("batch_id"), run__status="succeeded")
              .order_by("-run_id").values("run_id")[:1])
    BatchResult.objects.filter(run_id=Subquery(latest)).update(is_current=True)


class Migration(migrations.Migration):

    dependencies = [
        ("aggregation", "0006_item_result_n_agree"),
        ("annotation", "0010_item_summary"),
    ]

    operations = [
        migrations.AddField(
            model_name="batchresult",
            name="is_current",
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.RunPython(mark_current, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="batchresult",
            constraint=models.UniqueConstraint(condition=models.Q(("is_current", True)), fields=("batch",), include=("run",),
                                               name="batchresult_one_current"),
        ),
    ]
