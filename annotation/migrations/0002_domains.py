from django.db import migrations

DOMAINS = [
    ("mi", "Motivational interviewing", "AnnoMI", "counselor", "client"),
    ("esc", "Emotional support", "ESConv", "supporter", "seeker"),
    ("pfg", "Persuasion", "PersuasionForGood", "persuader", "persuadee"),
]


def create_domains(apps, schema_editor):
    Domain = apps.get_model("annotation", "Domain")
    for code, name, corpus, initiator, recipient in DOMAINS:
        Domain.objects.update_or_create(
            code=code, defaults={"name": name, "corpus": corpus, "initiator_role": initiator, "recipient_role": recipient}
        )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(create_domains, migrations.RunPython.noop)]
