"""The reference workflow's models leave `annotation` for the `references` app (issue 11).

State only: no table is dropped. `references` 0001 declares the same models on the same
tables, 0002 renames the tables and moves their content types and permissions.
"""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0004_draft_client_stamp'),
        ('references', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='Reference'),
                migrations.DeleteModel(name='ReferenceSubmission'),
                migrations.DeleteModel(name='ReferenceDraft'),
                migrations.DeleteModel(name='ReferenceAssignment'),
                migrations.DeleteModel(name='SimilarityScore'),
                migrations.DeleteModel(name='SimilarityRun'),
                migrations.DeleteModel(name='ReferenceSetContext'),
                migrations.DeleteModel(name='ReferenceSet'),
            ],
        ),
    ]
