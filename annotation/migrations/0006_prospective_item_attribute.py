"""Every item has an attribute: a prospective item belongs to (context, attribute, variant).

Before, a prospective item had no attribute (one per context and variant). Existing
prospective rows get one, in this order:

1. the state recorded in their metadata (`metadata.state`, as the release import keeps it:
   "Knowledge" -> knowledge, "Desires" -> desire, ...);
2. else their parent's attribute (an easy or counterfactual item derived from a hard one);
3. else `belief`, the first attribute in the canonical order (belief, desire, intention,
   emotion, knowledge, trust): a deterministic choice, recorded in
   `metadata.attribute_assigned = "migration 0006 default"` so it can be found and fixed.

No clash is possible: there was at most one prospective item per (context, variant).
Ids made by the studio's own scheme (`<context>-prospective`, `…-prospective-easy`,
`…-prospective-counterfactual`) are renamed to the new one (`<context>-prospective-<attribute>`,
`…-prospective-<attribute>-easy`, …), so a re-import of the same release finds its items;
other ids are kept. Judgments and results point at items by primary key and are untouched.
The reverse migration clears the attribute of prospective items and restores the old ids
(it fails, changing nothing, once a context has several prospective items of one variant).
"""
from django.db import migrations, models
from django.db.models import Q

ATTRIBUTES = ["belief", "desire", "intention", "emotion", "knowledge", "trust"]
STATES = {
    "belief": "belief", "beliefs": "belief", "desire": "desire", "desires": "desire",
    "intention": "intention", "intentions": "intention", "emotion": "emotion", "emotions": "emotion",
    "knowledge": "knowledge", "trust": "trust",
}
DEFAULT = "belief"
SUFFIXES = {"hard": "", "easy": "-easy", "counterfactual": "-counterfactual"}


def _new_id(item, attribute: str) -> str:
    # the release import's ids, and scoring's `<parent id>-easy` / `-counterfactual` of them
    context_id, suffix = item.context.context_id, SUFFIXES.get(item.variant, "")
    if item.item_id == f"{context_id}-prospective{suffix}":
        return f"{context_id}-prospective-{attribute}{suffix}"
    return item.item_id


def forwards(apps, schema_editor):
    Item = apps.get_model("annotation", "Item")
    todo = Item.objects.filter(task="prospective", attribute="").select_related("context").order_by("pk")
    assigned: dict[int, str] = {}
    # hard items first, so a derived item can take its parent's attribute
    for item in sorted(todo, key=lambda i: (i.parent_id is not None, i.pk)):
        metadata = dict(item.metadata or {})
        attribute = STATES.get(str(metadata.get("state", "")).strip().lower())
        if attribute is None and item.parent_id is not None:
            attribute = assigned.get(item.parent_id) or Item.objects.filter(pk=item.parent_id).values_list(
                "attribute", flat=True).first() or None
            attribute = attribute if attribute in ATTRIBUTES else None
        if attribute is None:
            attribute = DEFAULT
            metadata["attribute_assigned"] = "migration 0006 default"
        assigned[item.pk] = attribute
        Item.objects.filter(pk=item.pk).update(attribute=attribute, item_id=_new_id(item, attribute), metadata=metadata)


def backwards(apps, schema_editor):
    Item = apps.get_model("annotation", "Item")
    for item in Item.objects.filter(task="prospective").select_related("context").order_by("pk"):
        suffix = SUFFIXES.get(item.variant, "")
        item_id = item.item_id
        if item_id == f"{item.context.context_id}-prospective-{item.attribute}{suffix}":
            item_id = f"{item.context.context_id}-prospective{suffix}"
        metadata = {k: v for k, v in (item.metadata or {}).items() if k != "attribute_assigned"}
        Item.objects.filter(pk=item.pk).update(attribute="", item_id=item_id, metadata=metadata)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0005_references_moved_out"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="item", name="item_attribute_matches_task"),
        migrations.RunPython(forwards, backwards),
        migrations.AlterField(
            model_name="item",
            name="attribute",
            field=models.CharField(
                choices=[("belief", "Belief"), ("desire", "Desire"), ("intention", "Intention"),
                         ("emotion", "Emotion"), ("knowledge", "Knowledge"), ("trust", "Trust")],
                help_text="retrospective: the state asked about; prospective: the state its distractors were made for",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="item",
            constraint=models.CheckConstraint(condition=Q(attribute__in=ATTRIBUTES), name="item_attribute_valid"),
        ),
    ]
