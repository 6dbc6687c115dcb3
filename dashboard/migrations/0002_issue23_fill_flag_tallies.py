from django.db import migrations


def fill(apps, schema_editor):
    Flag = apps.get_model("review", "Flag")
    FlagTally = apps.get_model("review", "FlagTally")
    from django.db.models import Count

    FlagTally.objects.all().delete()
    FlagTally.objects.bulk_create(
        [FlagTally(status=s, n=n) for s, n in Flag.objects.values_list("status").annotate(n=Count("id")).order_by("status")]
    )


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0001_issue23_fill_summaries"), ("review", "0002_issue23_review_indexes")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
