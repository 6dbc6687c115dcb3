"""The reference workflow's models, moved here from `annotation` (issue 11).

State only: the tables exist already (created by annotation 0003–0004) and keep every
row. This migration tells Django that the models now belong to `references`, still on
their `annotation_*` tables; 0002 renames the tables and moves the content types.
"""
import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0004_draft_client_stamp'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='ReferenceSet',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.SlugField(max_length=100, unique=True)),
                        ('status', models.CharField(choices=[('open', 'Open'), ('paused', 'Paused'), ('closed', 'Closed')], default='open', max_length=10)),
                        ('per_context', models.PositiveSmallIntegerField(default=3, help_text='workers who write for each context')),
                        ('source', models.CharField(choices=[('stratified', 'Stratified by domain (seeded)'), ('ids', 'Uploaded list of context ids')], default='stratified', max_length=12)),
                        ('seed', models.IntegerField(blank=True, null=True)),
                        ('target_speaker', models.CharField(choices=[('initiator', 'Initiator'), ('recipient', 'Recipient')], default='recipient', max_length=10)),
                        ('lease_minutes', models.PositiveSmallIntegerField(default=30, help_text='an untouched claim returns to the pool')),
                        ('min_chars', models.PositiveSmallIntegerField(default=20, help_text='minimum length of each inference')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotation_referenceset',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='ReferenceSetContext',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveIntegerField(help_text='queue order (seeded)')),
                        ('context', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reference_memberships', to='annotation.context')),
                        ('reference_set', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='members', to='references.referenceset')),
                    ],
                    options={
                        'db_table': 'annotation_referencesetcontext',
                        'ordering': ['reference_set', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='ReferenceDraft',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('texts', models.JSONField(default=dict, help_text='attribute → text')),
                        ('seconds_spent', models.FloatField(default=0)),
                        ('client_ts', models.BigIntegerField(default=0, help_text="the browser's clock (ms) at the edit saved; an autosave older than this is ignored")),
                        ('client_id', models.CharField(blank=True, help_text='the browser that saved it last (autosave)', max_length=40)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('worker', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reference_drafts', to=settings.AUTH_USER_MODEL)),
                        ('member', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='drafts', to='references.referencesetcontext')),
                    ],
                    options={
                        'db_table': 'annotation_referencedraft',
                        'ordering': ['member', 'worker'],
                    },
                ),
                migrations.CreateModel(
                    name='ReferenceAssignment',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('slot', models.PositiveSmallIntegerField(help_text='0 … per_context-1; a live slot is held once')),
                        ('status', models.CharField(choices=[('active', 'In progress'), ('submitted', 'Submitted'), ('sent_back', 'Sent back'), ('accepted', 'Accepted'), ('expired', 'Expired')], default='active', max_length=10)),
                        ('claimed_at', models.DateTimeField(auto_now_add=True)),
                        ('expires_at', models.DateTimeField()),
                        ('submitted_at', models.DateTimeField(blank=True, null=True)),
                        ('seconds_spent', models.FloatField(default=0)),
                        ('review_reason', models.TextField(blank=True)),
                        ('reviewed_at', models.DateTimeField(blank=True, null=True)),
                        ('reviewed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('worker', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reference_assignments', to=settings.AUTH_USER_MODEL)),
                        ('member', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='references.referencesetcontext')),
                    ],
                    options={
                        'db_table': 'annotation_referenceassignment',
                        'ordering': ['claimed_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='ReferenceSubmission',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('idempotency_key', models.UUIDField(unique=True)),
                        ('texts', models.JSONField(help_text='attribute → text')),
                        ('seconds_spent', models.FloatField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('assignment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='references.referenceassignment')),
                    ],
                    options={
                        'db_table': 'annotation_referencesubmission',
                        'ordering': ['created_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='SimilarityRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('inferences', models.JSONField(help_text='[{context_id, attribute, text}] as uploaded')),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='pending', max_length=10)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('reference_set', models.ForeignKey(blank=True, help_text="compare with this set's accepted references; empty = every accepted reference", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='similarity_runs', to='references.referenceset')),
                    ],
                    options={
                        'db_table': 'annotation_similarityrun',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='SimilarityScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('attribute', models.CharField(help_text="an attribute, or 'all'", max_length=10)),
                        ('bleu', models.FloatField()),
                        ('rouge_l', models.FloatField()),
                        ('n_contexts', models.PositiveIntegerField(help_text='inferences that had at least one accepted reference')),
                        ('n_references', models.PositiveIntegerField()),
                        ('n_skipped', models.PositiveIntegerField(default=0, help_text='inferences without any accepted reference')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='references.similarityrun')),
                    ],
                    options={
                        'db_table': 'annotation_similarityscore',
                        'ordering': ['run', 'attribute'],
                    },
                ),
                migrations.CreateModel(
                    name='Reference',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('attribute', models.CharField(choices=[('belief', 'Belief'), ('desire', 'Desire'), ('intention', 'Intention'), ('emotion', 'Emotion'), ('knowledge', 'Knowledge'), ('trust', 'Trust')], max_length=10)),
                        ('text', models.TextField()),
                        ('assignment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='references', to='references.referenceassignment')),
                    ],
                    options={
                        'db_table': 'annotation_reference',
                        'ordering': ['assignment', 'attribute'],
                        'constraints': [models.UniqueConstraint(fields=('assignment', 'attribute'), name='reference_one_per_attribute'), models.CheckConstraint(condition=models.Q(('attribute__in', ['belief', 'desire', 'intention', 'emotion', 'knowledge', 'trust'])), name='reference_attribute_valid')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='referenceset',
                    constraint=models.CheckConstraint(condition=models.Q(('per_context__gte', 1)), name='referenceset_per_context_positive'),
                ),
                migrations.AddConstraint(
                    model_name='referenceset',
                    constraint=models.CheckConstraint(condition=models.Q(('status__in', ['open', 'paused', 'closed'])), name='referenceset_status_valid'),
                ),
                migrations.AddConstraint(
                    model_name='referencesetcontext',
                    constraint=models.UniqueConstraint(fields=('reference_set', 'context'), name='referencesetcontext_unique_context'),
                ),
                migrations.AddConstraint(
                    model_name='referencesetcontext',
                    constraint=models.UniqueConstraint(fields=('reference_set', 'position'), name='referencesetcontext_unique_position'),
                ),
                migrations.AddConstraint(
                    model_name='referencedraft',
                    constraint=models.UniqueConstraint(fields=('member', 'worker'), name='referencedraft_one_per_worker'),
                ),
                migrations.AddIndex(
                    model_name='referenceassignment',
                    index=models.Index(fields=['worker', 'status'], name='annotation__worker__4b016d_idx'),
                ),
                migrations.AddIndex(
                    model_name='referenceassignment',
                    index=models.Index(fields=['member', 'status'], name='annotation__member__42aecf_idx'),
                ),
                migrations.AddConstraint(
                    model_name='referenceassignment',
                    constraint=models.UniqueConstraint(condition=models.Q(('status', 'expired'), _negated=True), fields=('member', 'worker'), name='refassign_one_live_per_worker'),
                ),
                migrations.AddConstraint(
                    model_name='referenceassignment',
                    constraint=models.UniqueConstraint(condition=models.Q(('status', 'expired'), _negated=True), fields=('member', 'slot'), name='refassign_one_live_per_slot'),
                ),
                migrations.AddConstraint(
                    model_name='referenceassignment',
                    constraint=models.CheckConstraint(condition=models.Q(('status__in', ['active', 'submitted', 'sent_back', 'accepted', 'expired'])), name='refassign_status_valid'),
                ),
                migrations.AddConstraint(
                    model_name='similarityscore',
                    constraint=models.UniqueConstraint(fields=('run', 'attribute'), name='similarityscore_one_per_attribute'),
                ),
            ],
        ),
    ]
