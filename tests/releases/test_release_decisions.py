"""Issue 21 item 6: a release's items, its results.csv and its ReleaseItems (what runs are
scored on) hold the same items: staff's keep / drop are honoured in all three."""
import csv
import json

import pytest

from releases import services
from releases.models import ReleaseItem
from review.services import adjudication_record
from scoring.services import model_run_create, model_run_score
from tests.factories import StaffFactory

pytestmark = pytest.mark.django_db


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["item_id"]: row for row in csv.DictReader(handle)}


def test_kept_and_dropped_items_agree_across_files_release_items_and_scores(world, release_root):
    # Given: mi-emotion is not retained by Dawid–Skene (label NONE) and staff keep it;
    # mi-trust is retained and staff drop it.
    staff = StaffFactory(username="boss")
    adjudication_record(item_id="mi-emotion", decision="keep", reason="B is right", staff=staff)
    adjudication_record(item_id="mi-trust", decision="drop", reason="B and C overlap", staff=staff)

    # When the release is built
    release = services.release_build(release_id=services.release_create(version="v1", build=False).id)

    # Then the items file holds mi-emotion (its intended answer B), not mi-trust ...
    folder = release_root / "v1"
    items = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    released = {r["item_id"]: r["answer"] for r in items}
    assert released == {"esc-desire": "D", "esc-prospective-1": "A", "mi-belief": "A", "mi-emotion": "B"}
    # ... results.csv says the same ...
    results = _rows(folder / "results.csv")
    assert {k for k, r in results.items() if r["retained"] == "true"} == set(released)
    assert results["mi-emotion"]["label"] == "B" and results["mi-emotion"]["adjudication"] == "keep"
    assert results["mi-trust"]["retained"] == "false" and results["mi-trust"]["adjudication"] == "drop"
    assert release.manifest["results_columns"][-1] == "adjudication"
    # ... and so do the ReleaseItems runs are scored on
    entries = {e.item.item_id: e for e in ReleaseItem.objects.filter(release=release).select_related("item")}
    assert {k for k, e in entries.items() if e.retained} == set(released) and release.n_items == len(released)
    assert entries["mi-emotion"].label == "B"

    # A run answering every audited item right is scored on exactly the release's items.
    lines = [json.dumps({"item_id": item_id, "prediction": row["label"] if row["label"] in "ABCD" else "A"})
             for item_id, row in results.items()]
    run = model_run_create(name="all-right", model_name="m", lines=lines, source="p.jsonl", release="v1")
    run = model_run_score(run_id=run.pk)
    assert run.scores["overall"]["n"] == release.n_items == 4
    assert run.scores["overall"]["rate"] == 1.0


def test_the_migration_applies_a_built_releases_decisions_to_its_release_items(world):
    # Given a release built before the fix: its ReleaseItems ignored the decisions its manifest lists
    import importlib

    from django.apps import apps

    from releases.models import Release, ReleaseStatus

    release = Release.objects.create(version="old", status=ReleaseStatus.READY, manifest={"adjudications": [
        {"item_id": "mi-emotion", "decision": "keep"}, {"item_id": "mi-trust", "decision": "drop"},
    ]})
    for key, label, retained in (("mi-emotion", "NONE", False), ("mi-trust", "C", True), ("mi-belief", "A", True)):
        ReleaseItem.objects.create(release=release, item=world.items[key], label=label, posterior=0.9, n_judgments=3,
                                   retained=retained)

    # When the data migration runs
    migration = importlib.import_module("releases.migrations.0003_release_items_honour_decisions")
    migration.honour_decisions(apps, None)

    # Then the kept item is retained with its intended answer, the dropped one is not, the rest unchanged
    entries = {e.item.item_id: (e.label, e.retained) for e in ReleaseItem.objects.filter(release=release).select_related("item")}
    assert entries == {"mi-emotion": ("B", True), "mi-trust": ("C", False), "mi-belief": ("A", True)}
