"""The moved models get tables (and index names) of their own app; their content types follow.

`ALTER TABLE … RENAME` keeps every row, key and sequence. The content types are
relabelled rather than recreated, so the permissions hanging on them (and any group or
user holding those permissions, and the admin's log) stay attached.
"""
from django.db import migrations

MODELS = [
    "referenceset", "referencesetcontext", "referenceassignment", "referencedraft",
    "referencesubmission", "reference", "similarityrun", "similarityscore",
]


def _relabel(apps, *, source: str, target: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=source, model=model).exists():
            continue  # a database that never held the models under their old label
        # An empty twin created by an earlier post_migrate would block the relabel; it holds nothing yet.
        ContentType.objects.filter(app_label=target, model=model).delete()
        ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_forward(apps, schema_editor):
    _relabel(apps, source="annotation", target="references")


def content_types_backward(apps, schema_editor):
    _relabel(apps, source="references", target="annotation")


class Migration(migrations.Migration):

    dependencies = [
        ('references', '0001_initial'),
        ('annotation', '0005_references_moved_out'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.RenameIndex(
            model_name='referenceassignment',
            new_name='refassign_worker_status_idx',
            old_name='annotation__worker__4b016d_idx',
        ),
        migrations.RenameIndex(
            model_name='referenceassignment',
            new_name='refassign_member_status_idx',
            old_name='annotation__member__42aecf_idx',
        ),
        migrations.AlterModelTable(name='referenceset', table=None),
        migrations.AlterModelTable(name='referencesetcontext', table=None),
        migrations.AlterModelTable(name='referenceassignment', table=None),
        migrations.AlterModelTable(name='referencedraft', table=None),
        migrations.AlterModelTable(name='referencesubmission', table=None),
        migrations.AlterModelTable(name='reference', table=None),
        migrations.AlterModelTable(name='similarityrun', table=None),
        migrations.AlterModelTable(name='similarityscore', table=None),
        migrations.RunPython(content_types_forward, content_types_backward),
    ]
