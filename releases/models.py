"""Releases: immutable, versioned snapshots of the retained items, written as files."""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from dialtom_site.jobs import JobFields

VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class ReleaseStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for the task queue"
    PENDING = "pending", "Pending"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class ReleaseManager(models.Manager):
    def get_queryset(self):
        # the manifest is read where asked for (`release.manifest`: one statement more), never with
        # a list of releases or a page: at 4M items it is 3.8 MB of JSON, ~85 ms to decode a release;
        # what the pages show of it is in `summary`
        return super().get_queryset().defer("manifest")


class Release(JobFields):
    """One published version of the benchmark.

    The files live under `settings.RELEASE_ROOT/<version>/` and never change once the
    release is ready; `manifest` is a copy of `manifest.json` (counts, retention,
    agreement, aggregation settings, SHA-256 of every file).
    """

    version = models.CharField(
        max_length=64, unique=True, validators=[RegexValidator(VERSION_PATTERN, "letters, digits, '.', '_' or '-'")]
    )
    status = models.CharField(max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.WAITING)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    trigger = models.CharField(max_length=20, default="manual", help_text="dashboard, api or command")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    files = models.JSONField(default=dict, blank=True, help_text="file name -> {path, sha256, bytes, rows}")
    manifest = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    warnings = models.JSONField(
        default=list, blank=True, help_text="what a reader should know about its data: [{code, batch, message}]"
    )
    warnings_acknowledged = models.BooleanField(default=False, help_text="its creator was shown the warnings and went on")
    summary = models.JSONField(
        default=dict, blank=True,
        help_text="what the release pages show of the manifest, small at any size (`manifest_summary`)",
    )

    objects = ReleaseManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ReleaseStatus.values), name="release_status_valid"),
        ]

    def __str__(self) -> str:
        return f"release {self.version} ({self.status})"

    @property
    def is_ready(self) -> bool:
        return self.status == ReleaseStatus.READY


# the manifest's lists that grow with the data (a row a batch, a row a staff decision): kept a row each
# (ManifestRow) for the release's page to show a page at a time
MANIFEST_LISTS = ("agreement", "adjudications")


def manifest_summary(manifest: dict) -> dict:
    """What the release pages show of a manifest, a few hundred bytes whatever its size (the manifest
    of a release of 4M items is 3.8 MB of JSON, ~85 ms to decode): its counts, overall retention, the
    files it lists (name → sha256, bytes, rows), and the length of each of MANIFEST_LISTS."""
    return {
        "counts": manifest.get("counts") or {},
        "retention_overall": (manifest.get("retention") or {}).get("overall"),
        "files": manifest.get("files") or {},
        **{name: len(manifest.get(name) or []) for name in MANIFEST_LISTS},
    }


class ManifestRow(models.Model):
    """One entry of one of a release's MANIFEST_LISTS, as the manifest holds it, at its position
    there (from 0): written with the release, so its page reads a page of them by index."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="manifest_rows",
                                db_index=False)  # the unique (release, kind, position) index serves it
    kind = models.CharField(max_length=20, choices=[(name, name) for name in MANIFEST_LISTS], help_text="which list")
    position = models.PositiveIntegerField()
    row = models.JSONField()

    class Meta:
        ordering = ["release", "kind", "position"]
        constraints = [models.UniqueConstraint(fields=["release", "kind", "position"], name="manifestrow_unique")]

    def __str__(self) -> str:
        return f"{self.release_id}: {self.kind}[{self.position}]"


def manifest_rows(release_id: int, manifest: dict):
    """The ManifestRows of a manifest (unsaved), every list in order."""
    for name in MANIFEST_LISTS:
        for position, row in enumerate(manifest.get(name) or []):
            yield ManifestRow(release_id=release_id, kind=name, position=position, row=row)


class ReleaseItem(models.Model):
    """The aggregated result of one audited item in one release, retained or not.

    What a release scores against: a model run or a human baseline names a release and is
    scored on its retained items, against `label`; an item the release does not hold was
    never audited for it and cannot be scored.
    """

    # No foreign-key constraints in the database (db_constraint=False): a release writes its rows in
    # one INSERT … SELECT from the current results, whose own constraints hold the items, and the
    # two checks a row, deferred to the commit, took ~110 of a 4M-item build's ~450 s. Django still
    # cascades and protects (on_delete). `item` has an index of its own; `release` is the first
    # column of the unique (release, item) index, which serves it: a second index on it was one
    # more to write for each of a release's millions of rows.
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="items", db_constraint=False,
                                db_index=False)
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="release_entries",
                             db_constraint=False)
    label = models.CharField(max_length=10, blank=True, help_text="the Dawid–Skene label, in the item's original letters")
    posterior = models.FloatField()
    n_judgments = models.PositiveIntegerField()
    retained = models.BooleanField()

    class Meta:
        ordering = ["release", "item"]
        constraints = [models.UniqueConstraint(fields=["release", "item"], name="releaseitem_unique")]

    def __str__(self) -> str:
        return f"{self.release_id}: {self.item_id} → {self.label or '-'}"


class ContextRecord(models.Model):
    """A context's dialogue as a release holds it (JSON, each turn with its domain role:
    `export.context_turns`), made by Python once and put together with each release's values by
    PostgreSQL (`releases.copyout.write_items`), so a release's items files need no Python a row.
    `versions` names the rows it was made from (`records`): one that changed is made again.

    A cache of what the contexts and items hold, so on PostgreSQL both records tables are UNLOGGED
    (migration 0008): no WAL is written for them, and after a crash PostgreSQL empties them and
    the next build (or `tasks.release_records_refresh_task`) makes them again. Their keys have no foreign-key
    constraint in the database, as ReleaseItem's: the check, deferred to the commit, took a key-share
    lock on every item (4.3 of 8.6 s of the records' insert at 400k items); Django still cascades."""

    context = models.OneToOneField("annotation.Context", on_delete=models.CASCADE, primary_key=True, related_name="record",
                                   db_constraint=False)
    versions = models.TextField()
    turns = models.TextField()
    turns_csv = models.TextField(default="", help_text="`turns` as a field of items.csv (quoted as the CSV writer quotes it)")

    def __str__(self) -> str:
        return f"record of context {self.context_id}"


class ItemRecord(models.Model):
    """An item's JSON a release holds (`export.release_record`): its options, and for a prospective
    item its profile and continuations (each option split into turns). As ContextRecord."""

    item = models.OneToOneField("annotation.Item", on_delete=models.CASCADE, primary_key=True, related_name="record",
                                db_constraint=False)
    versions = models.TextField()
    options = models.TextField()
    profile = models.TextField(null=True, blank=True)
    continuations = models.TextField(null=True, blank=True)
    # the JSON above as fields of items.csv, quoted once when the record is made, not in every release
    options_csv = models.TextField(default="")
    profile_csv = models.TextField(null=True, blank=True)
    continuations_csv = models.TextField(null=True, blank=True)

    def __str__(self) -> str:
        return f"record of item {self.item_id}"


class RecordsChange(models.Model):
    """A statement that changed what the records are made of: an item, a context or a domain
    (inserted, updated, deleted, truncated). Written by PostgreSQL's statement triggers on those
    tables (migration 0009), in the transaction of the change, so it lands with it or not at all.
    Emptied by the making of every record (`records.records_refresh(whole=True)`), which deletes
    those its snapshot sees before it reads a row: one committed later stays. None left and
    `RecordsWhole` there: every record is up to date (`records.records_current`), and a build needs
    no check of the 4M items' versions."""

    source = models.CharField(max_length=63, help_text="the table the statement changed")
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.source} changed at {self.at:%Y-%m-%d %H:%M:%S}"


class RecordsWhole(models.Model):
    """There: the last making of every record (`records.records_refresh(whole=True)`) committed, and
    no one but a maker wrote the records since (a statement trigger on both records tables deletes
    this row; a maker tells it apart by a setting of its own transaction). UNLOGGED, as the records
    (migration 0009): a crash that empties them empties this too."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    made_at = models.DateTimeField()
    files = models.CharField(max_length=100, help_text="the files of the item, context and domain tables then: a table "
                             "rewritten (ALTER … TYPE, VACUUM FULL, CLUSTER), which fires no trigger, has another")

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="records_whole_one_row")]

    def __str__(self) -> str:
        return f"records whole since {self.made_at:%Y-%m-%d %H:%M:%S}"
