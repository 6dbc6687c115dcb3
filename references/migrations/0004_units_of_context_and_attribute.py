"""The unit of reference work becomes (context, attribute), with k writers each (issue 11).

A member lists the attributes the set asks of its context, an assignment the attributes
given to its worker, and each live assignment holds one seat per attribute. Existing work
was written for all six attributes: members and assignments get all six, and every live
assignment gets the seats of its old slot, before the slot column goes.

The lists are `references.fields.AttributeListField`: on PostgreSQL the very `varchar(10)[]`
an `ArrayField` makes (databases migrated before it changed nothing), JSON text on SQLite,
so `make demo` migrates with no server.
"""

import django.db.models.deletion
import references.fields
import references.models
from django.conf import settings
from django.db import migrations, models


def seats_from_slots(apps, schema_editor):
    Assignment = apps.get_model("references", "ReferenceAssignment")
    Seat = apps.get_model("references", "ReferenceSeat")
    Seat.objects.bulk_create(
        Seat(member_id=a.member_id, attribute=attribute, slot=a.slot, assignment_id=a.pk, worker_id=a.worker_id)
        for a in Assignment.objects.exclude(status="expired").order_by("pk")
        for attribute in a.attributes
    )


def slots_from_seats(apps, schema_editor):
    Assignment = apps.get_model("references", "ReferenceAssignment")
    Seat = apps.get_model("references", "ReferenceSeat")
    for seat in Seat.objects.order_by("assignment_id", "attribute").distinct("assignment_id"):
        Assignment.objects.filter(pk=seat.assignment_id).update(slot=seat.slot)


class Migration(migrations.Migration):

    dependencies = [
        ('references', '0003_similarityrun_jobs'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ReferenceSeat',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('attribute', models.CharField(choices=[('belief', 'Belief'), ('desire', 'Desire'), ('intention', 'Intention'), ('emotion', 'Emotion'), ('knowledge', 'Knowledge'), ('trust', 'Trust')], max_length=10)),
                ('slot', models.PositiveSmallIntegerField(help_text='0 … per_context-1')),
            ],
            options={
                'ordering': ['member', 'attribute', 'slot'],
            },
        ),
        migrations.AddField(
            model_name='referenceassignment',
            name='attributes',
            field=references.fields.AttributeListField(base_field=models.CharField(choices=[('belief', 'Belief'), ('desire', 'Desire'), ('intention', 'Intention'), ('emotion', 'Emotion'), ('knowledge', 'Knowledge'), ('trust', 'Trust')], max_length=10), default=references.models.all_attributes, help_text='the attributes assigned to this worker for this context', size=None),
        ),
        migrations.AddField(
            model_name='referenceset',
            name='attributes_per_worker',
            field=models.PositiveSmallIntegerField(default=6, help_text="how many of a context's attributes one claim gives a worker (1–6)"),
        ),
        migrations.AddField(
            model_name='referencesetcontext',
            name='attributes',
            field=references.fields.AttributeListField(base_field=models.CharField(choices=[('belief', 'Belief'), ('desire', 'Desire'), ('intention', 'Intention'), ('emotion', 'Emotion'), ('knowledge', 'Knowledge'), ('trust', 'Trust')], max_length=10), default=references.models.all_attributes, help_text='the attributes this set asks of the context; each is a unit with k writers', size=None),
        ),
        migrations.AlterField(
            model_name='referenceset',
            name='per_context',
            field=models.PositiveSmallIntegerField(default=3, help_text='writers for each (context, attribute): k'),
        ),
        migrations.AlterField(
            model_name='referenceset',
            name='source',
            field=models.CharField(choices=[('stratified', 'Stratified by domain (seeded)'), ('ids', 'Uploaded list of context ids'), ('authors', "The DialToM authors' written inferences (imported)")], default='stratified', max_length=12),
        ),
        migrations.AddConstraint(
            model_name='referenceassignment',
            constraint=models.CheckConstraint(condition=models.Q(('attributes__contained_by', ['belief', 'desire', 'intention', 'emotion', 'knowledge', 'trust']), ('attributes__len__gte', 1)), name='refassign_attributes_valid'),
        ),
        migrations.AddConstraint(
            model_name='referenceset',
            constraint=models.CheckConstraint(condition=models.Q(('attributes_per_worker__gte', 1), ('attributes_per_worker__lte', 6)), name='referenceset_attributes_per_worker_range'),
        ),
        migrations.AddConstraint(
            model_name='referencesetcontext',
            constraint=models.CheckConstraint(condition=models.Q(('attributes__contained_by', ['belief', 'desire', 'intention', 'emotion', 'knowledge', 'trust']), ('attributes__len__gte', 1)), name='referencesetcontext_attributes_valid'),
        ),
        migrations.AddField(
            model_name='referenceseat',
            name='assignment',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='seats', to='references.referenceassignment'),
        ),
        migrations.AddField(
            model_name='referenceseat',
            name='member',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='seats', to='references.referencesetcontext'),
        ),
        migrations.AddField(
            model_name='referenceseat',
            name='worker',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='referenceseat',
            constraint=models.UniqueConstraint(fields=('member', 'attribute', 'slot'), name='refseat_one_per_slot'),
        ),
        migrations.AddConstraint(
            model_name='referenceseat',
            constraint=models.UniqueConstraint(fields=('member', 'attribute', 'worker'), name='refseat_one_per_worker'),
        ),
        migrations.AddConstraint(
            model_name='referenceseat',
            constraint=models.CheckConstraint(condition=models.Q(('attribute__in', ['belief', 'desire', 'intention', 'emotion', 'knowledge', 'trust'])), name='refseat_attribute_valid'),
        ),
        migrations.RemoveConstraint(
            model_name='referenceassignment',
            name='refassign_one_live_per_slot',
        ),
        migrations.RunPython(seats_from_slots, slots_from_seats),
        migrations.AlterField(  # so that going back adds the column to existing rows; the seats then set it
            model_name='referenceassignment',
            name='slot',
            field=models.PositiveSmallIntegerField(default=0, help_text='0 … per_context-1; a live slot is held once'),
        ),
        migrations.RemoveField(
            model_name='referenceassignment',
            name='slot',
        ),
    ]
