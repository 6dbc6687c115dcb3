"""Releases built before issue 21 (item 6) stored the aggregate's `retained` on their
ReleaseItems, ignoring staff's keep / drop that their items files honoured: runs were
scored on other items than the release holds. Each release's manifest lists the decisions
in force when it was built (`adjudications`); this applies them to its ReleaseItems, so
scoring (rescore the runs) uses exactly the release's items. The files are not touched
(releases are immutable, checksummed): their results.csv keeps its old `retained`."""
from django.db import migrations


def honour_decisions(apps, schema_editor):
    Release = apps.get_model("releases", "Release")
    ReleaseItem = apps.get_model("releases", "ReleaseItem")
    Item = apps.get_model("annotation", "Item")
    for release in Release.objects.exclude(manifest={}).order_by("pk").iterator():
        decisions = {a["item_id"]: a["decision"] for a in release.manifest.get("adjudications") or []}
        if not decisions:
            continue
        found = Item.objects.filter(item_id__in=list(decisions)).values_list("item_id", "pk", "answer")
        for item_id, pk, answer in found:
            decision = decisions[item_id]
            entries = ReleaseItem.objects.filter(release=release, item_id=pk)
            if decision == "keep":
                entries.update(retained=True, label=answer)
            elif decision == "drop":
                entries.update(retained=False)


class Migration(migrations.Migration):
    dependencies = [("releases", "0002_jobs_warnings_release_items")]

    operations = [migrations.RunPython(honour_decisions, migrations.RunPython.noop)]
