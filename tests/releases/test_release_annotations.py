"""Raw annotations leave with a release: judgments.csv (item, verifier pseudonym, original
letter, seconds) and results.csv (every audited item, retained or not), in the manifest with
their SHA-256, so a team can re-run the aggregation elsewhere (crowd-kit reads the CSV as it is)."""
import csv
import hashlib

import pandas as pd
import pytest

from releases import services
from releases.models import ReleaseItem

pytestmark = pytest.mark.django_db


def build(version):
    return services.release_build(release_id=services.release_create(version=version, build=False).pk)


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_results_hold_every_audited_item_retained_or_not(world, release_root):
    release = build("v1")
    rows = read(release_root / "v1" / "results.csv")
    assert [r["item_id"] for r in rows] == [
        "esc-desire", "esc-prospective-1", "esc-prospective-2", "mi-belief", "mi-emotion", "mi-trust"
    ]  # batch-b is not aggregated: its judged item is not a result yet
    emotion = next(r for r in rows if r["item_id"] == "mi-emotion")
    assert emotion == {
        "item_id": "mi-emotion", "batch": "batch-a", "task": "retrospective", "attribute": "emotion", "variant": "hard",
        "domain": "mi", "label": "NONE", "posterior": "0.4", "mv_label": "B", "n_judgments": "3", "retained": "false",
        "adjudication": "",
    }
    assert sum(r["retained"] == "true" for r in rows) == release.n_items == 4
    # The same results are the release's items in the database: what scoring reads
    entries = {e.item.item_id: e for e in ReleaseItem.objects.filter(release=release).select_related("item")}
    assert set(entries) == {r["item_id"] for r in rows}
    assert entries["mi-trust"].label == "C" and entries["mi-trust"].retained
    assert entries["mi-emotion"].label == "NONE" and not entries["mi-emotion"].retained


def test_judgments_use_pseudonyms_stable_within_a_release_only(world, release_root):
    build("v1")
    build("v2")
    v1 = read(release_root / "v1" / "judgments.csv")
    v2 = read(release_root / "v2" / "judgments.csv")
    assert list(v1[0]) == ["task", "worker", "label", "seconds"]
    assert len(v1) == 18  # batch-a's 6 items × 3 verifiers
    trust = [r for r in v1 if r["task"] == "mi-trust"]
    assert sorted(r["label"] for r in trust) == ["A", "C", "C"]  # original letters
    assert sorted(float(r["seconds"]) for r in trust) == [10.0, 20.0, 30.0]
    names_v1 = {r["worker"] for r in v1}
    names_v2 = {r["worker"] for r in v2}
    assert len(names_v1) == 3 and len(names_v2) == 3
    assert not names_v1 & {"verifier-1", "verifier-2", "verifier-3"}
    assert not names_v1 & names_v2  # not linkable across releases
    # stable within the release: the verifier who always says A has one name for all six answers
    [always_a] = {r["worker"] for r in v1 if r["task"] == "mi-trust" and r["label"] == "A"}
    assert [r["label"] for r in v1 if r["worker"] == always_a] == ["A"] * 6


def test_manifest_lists_the_new_files_with_their_sha256(world, release_root):
    release = build("v1")
    folder = release_root / "v1"
    for name, rows in (("results.csv", 6), ("judgments.csv", 18)):
        meta = release.manifest["files"][name]
        assert meta["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert meta["rows"] == rows and release.files[name]["sha256"] == meta["sha256"]
    assert release.manifest["audited_items"] == 6 and release.manifest["judgments"] == 18
    assert release.manifest["judgments_columns"] == ["task", "worker", "label", "seconds"]


def test_crowd_kit_fits_the_judgments_as_they_are(world, release_root):
    from crowdkit.aggregation import DawidSkene

    build("v1")
    frame = pd.read_csv(release_root / "v1" / "judgments.csv")
    labels = DawidSkene(n_iter=100).fit_predict(frame)
    assert len(labels) == 6
    # two of three verifiers give the key on every item but one: Dawid–Skene finds the key
    assert labels["mi-trust"] == "C" and labels["mi-belief"] == "A" and labels["esc-desire"] == "D"


def test_a_build_taken_for_dead_cannot_overwrite_a_later_attempt(world, release_root, monkeypatch):
    """The sweep gave the release to another worker while the first was frozen; when the first
    wakes up and finishes, it neither publishes nor fails the release: attempt 2 owns it."""
    from django.db.models import F

    from releases.models import Release, ReleaseStatus

    original = services._write_release

    def frozen_then_superseded(**kwargs):
        written = original(**kwargs)
        release = kwargs["release"]
        Release.objects.filter(pk=release.pk).update(attempts=F("attempts") + 1)  # the sweep's retry, claimed
        return written

    monkeypatch.setattr(services, "_write_release", frozen_then_superseded)
    release = services.release_create(version="v1", build=False)
    with pytest.raises(RuntimeError, match="attempt 1 of release v1 was superseded"):
        services.release_build(release_id=release.pk)
    release.refresh_from_db()
    assert release.status == ReleaseStatus.BUILDING and release.attempts == 2 and release.error == ""
    assert not ReleaseItem.objects.filter(release=release).exists() and not (release_root / "v1").exists()
    assert list(release_root.iterdir()) == []  # its temporary folder is gone too


# --- outside a transaction (as the worker builds): the items inserted on a connection of their own


@pytest.mark.django_db(transaction=True)
def test_a_worker_build_inserts_its_items_beside_the_files_and_publishes_them_together(world, release_root, monkeypatch):
    """The release's items are inserted on another connection while the files are written, in the
    transaction that marks the release READY: nobody sees them before, and all of them after."""
    import threading

    from releases.models import Release, ReleaseStatus

    seen = {}
    original_insert, original_write = services._release_items_insert, services._write_release

    def insert_noting_where(**kwargs):
        seen["insert"] = threading.current_thread().name
        return original_insert(**kwargs)

    def write_seeing_no_items(**kwargs):
        manifest = original_write(**kwargs)
        seen["items while writing"] = ReleaseItem.objects.filter(release=kwargs["release"]).count()
        return manifest

    monkeypatch.setattr(services, "_release_items_insert", insert_noting_where)
    monkeypatch.setattr(services, "_write_release", write_seeing_no_items)
    release = build("v1")
    assert release.status == ReleaseStatus.READY
    assert seen["insert"].startswith("release-items") and seen["items while writing"] == 0
    assert ReleaseItem.objects.filter(release=release).count() == release.manifest["audited_items"] == 6
    assert Release.objects.get(pk=release.pk).files["manifest.json"]["path"] == str(release_root / "v1" / "manifest.json")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["files", "superseded"])
def test_a_worker_build_that_fails_leaves_no_items(world, release_root, monkeypatch, where):
    """A build whose files fail, or whose attempt was taken over meanwhile, rolls its items back."""
    from django.db.models import F

    from releases.models import Release, ReleaseStatus

    original = services._write_release

    def failing(**kwargs):
        manifest = original(**kwargs)
        if where == "files":
            raise OSError("disk full")
        Release.objects.filter(pk=kwargs["release"].pk).update(attempts=F("attempts") + 1)
        return manifest

    monkeypatch.setattr(services, "_write_release", failing)
    release = services.release_create(version="v1", build=False)
    with pytest.raises((OSError, RuntimeError)):
        services.release_build(release_id=release.pk)
    release.refresh_from_db()
    assert release.status == (ReleaseStatus.FAILED if where == "files" else ReleaseStatus.BUILDING)
    assert not ReleaseItem.objects.exists() and not (release_root / "v1").exists()
