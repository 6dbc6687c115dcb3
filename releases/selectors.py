"""Reads behind releases: the current aggregation results (`aggregation.current`) and the rows of a release."""
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db.models import F, Min, Q, QuerySet, Subquery, Sum

from aggregation.current import current_q, pairs_q
from aggregation.models import AggregationRun, BatchResult, ItemResult, ResultCell, ShortResults
from annotation.models import Batch, Domain
from dialtom_site.db.collation import code_points
from dialtom_site.paging import Page, page_bounds
from review.selectors import adjudicated, release_rows

from .models import ManifestRow, Release, ReleaseStatus


def current_batch_runs() -> dict[int, int]:
    """batch id -> id of the latest succeeded run that aggregated it (one query)."""
    return dict(BatchResult.objects.filter(is_current=True).order_by("batch_id").values_list("batch_id", "run_id"))


def current_item_results(*, pairs: dict[int, int] | None = None) -> QuerySet[ItemResult]:
    """ItemResults of the current run of every batch (gold items excluded: they are scored, not released)."""
    pairs = current_batch_runs() if pairs is None else pairs
    return ItemResult.objects.filter(pairs_q(pairs)).filter(item__is_gold=False)


def current_batch_results(*, pairs: dict[int, int] | None = None) -> QuerySet[BatchResult]:
    """The BatchResults of the pairs (default: the current ones), with their batch, by batch name:
    agreement and retention, without the JSON of their groups, details and timings (a release's
    manifest and the report read none; at 4M items, 7,937 of them took ~100 MB)."""
    pairs = current_batch_runs() if pairs is None else pairs
    return (BatchResult.objects.filter(pairs_q(pairs)).select_related("batch").defer("by_group", "details", "timings")
            .order_by("batch__name"))


RELEASE_VALUES = (
    "item__item_id",
    "item__context__context_id",
    "item__context__domain_id",
    "item__task",
    "item__attribute",
    "item__variant",
    "item__target_speaker",
    "item__question",
    "item__options",
    "item__answer",
    "item__context__turns",
    "item__profile",
    "item__metadata__state",
    "item__metadata__key",
    "item__retained_by_authors",
    "batch_id",
    "batch__name",
    "label",
    "posterior",
    "mv_label",
    "n_judgments",
)


def released_item_results(*, pairs: dict[int, int]) -> QuerySet[ItemResult]:
    """The current results of the items a release made now holds (`review.selectors.adjudicated`:
    retained and not dropped by staff, or kept by staff), unordered."""
    return adjudicated(current_item_results(pairs=pairs)).filter(released=True)


def release_source_rows(*, pairs: dict[int, int], chunk_size: int = 2000) -> Iterator[dict]:
    """The retained items of the current runs, as staff's adjudications amend them (kept in, dropped
    out: review.selectors.release_rows), ordered by item_id, as plain dicts (streamed)."""
    return release_rows(current_item_results(pairs=pairs), values=RELEASE_VALUES, chunk_size=chunk_size)


RESULT_VALUES = (
    "item_id",
    "item__item_id",
    "batch__name",
    "item__task",
    "item__attribute",
    "item__variant",
    "item__context__domain_id",
    "label",
    "posterior",
    "mv_label",
    "n_judgments",
    "released",
    "released_label",
    "adjudication",
)


def audited_item_results(*, pairs: dict[int, int]) -> QuerySet[ItemResult]:
    """The current result of every audited item (at least one judgment), retained or not,
    with staff's decisions applied (`released`, `released_label`, `adjudication`: review.selectors.adjudicated):
    what results.csv and the release's ReleaseItems hold, so they agree with its items files."""
    return adjudicated(current_item_results(pairs=pairs).filter(n_judgments__gt=0))


def release_result_rows(*, pairs: dict[int, int], chunk_size: int = 5000) -> Iterator[dict]:
    """`audited_item_results` as plain dicts for results.csv, by item_id (streamed)."""
    return audited_item_results(pairs=pairs).order_by(code_points("item__item_id")).values(*RESULT_VALUES).iterator(chunk_size=chunk_size)


def release_judgment_rows(*, pairs: dict[int, int], chunk_size: int = 5000) -> Iterator[tuple]:
    """(item_id, verifier pk, label, seconds) of every judgment the current runs fitted: the
    batches' usable judgments (`aggregation.selectors.usable_judgments`), gold items included
    (they are fitted too), by item_id then verifier (streamed)."""
    return (
        release_judgments(pairs=pairs)
        .order_by(code_points("item__item_id"), "verifier_id")
        .values_list("item__item_id", "verifier_id", "label", "seconds_spent")
        .iterator(chunk_size=chunk_size)
    )


def release_judgments(*, pairs: dict[int, int]):
    """The judgments a release's judgments.csv holds (see release_judgment_rows), unordered."""
    from aggregation.selectors import usable_judgments

    return usable_judgments().filter(item__batch_id__in=list(pairs))


def domain_roles() -> dict[str, dict[str, str]]:
    return {d.code: {"initiator": d.initiator_role, "recipient": d.recipient_role} for d in Domain.objects.all()}


# a retention table's name → the item's field it is per (the keys of `retention_cells`); the batches' table
# is summed on its own (`retention_counts`)
RETENTION_GROUPS = (
    ("task", "item__task"),
    ("domain", "item__context__domain_id"),
    ("attribute", "item__attribute"),
)


def retention_cells(*, pairs: dict[int, int]) -> list[dict]:
    """Retained / total audited items of the given runs per (task, domain, attribute), summed from
    the aggregation job's `ResultCell`s (a few a batch, written with the run's results:
    `aggregation.summaries`), not a pass over the results: every retention table but the
    batches' is a sum of these few dozen cells. Keys as the item's fields (RETENTION_GROUPS)."""
    names = [name for name, _ in RETENTION_GROUPS]  # ResultCell's columns are named as the tables
    rows = (ResultCell.objects.filter(pairs_q(pairs)).values(*names)
            .annotate(n_total=Sum("total"), n_retained=Sum("retained")).order_by(*names))
    return [{**{field: row[name] for name, field in RETENTION_GROUPS}, "total": row["n_total"], "retained": row["n_retained"]}
            for row in rows]


def _rate(retained: int, total: int) -> float | None:
    return round(retained / total, 6) if total else None


def _retention_table(sums: dict) -> dict[str, dict]:
    return {
        (value or "(none)"): {"total": total, "retained": retained, "rate": _rate(retained, total)}
        for value, (retained, total) in sorted(sums.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
    }


def retention_counts(*, pairs: dict[int, int]) -> dict[str, dict[str, dict]]:
    """Retained / total audited items per task, domain, attribute and batch of the current runs
    (2 queries: `retention_cells`, and the batches' sums): an item without a judgment is not part
    of any retention figure."""
    cells = retention_cells(pairs=pairs)
    out: dict[str, dict[str, dict]] = {}
    for key, field in RETENTION_GROUPS:
        sums: dict = {}
        for cell in cells:
            retained, total = sums.get(cell[field], (0, 0))
            sums[cell[field]] = (retained + cell["retained"], total + cell["total"])
        out[key] = _retention_table(sums)
    batches = (ResultCell.objects.filter(pairs_q(pairs)).values_list("batch__name").order_by()
               .annotate(n_retained=Sum("retained"), n_total=Sum("total")))
    out["batch"] = _retention_table({name: (retained, total) for name, retained, total in batches})
    total = sum(v["total"] for v in out["task"].values())
    retained = sum(v["retained"] for v in out["task"].values())
    out["overall"] = {"total": total, "retained": retained, "rate": _rate(retained, total)}
    return out


def release_warnings(*, pairs: dict[int, int] | None = None) -> list[dict]:
    """What a release built from the current results should warn about, per batch (2 queries):

    - `low_agreement`: the batch's AC1 is under DIALTOM_AC1_FLAG_THRESHOLD (flagged on the dashboard);
    - `under_overlap`: some of its items hold fewer judgments than the batch's overlap.
    """
    # without `pairs`: each batch's current run by a correlated lookup (issue 23), not arrays of every pair
    current = current_q() if pairs is None else (pairs_q(pairs) if pairs else Q(pk__in=[]))
    threshold = settings.DIALTOM_AC1_FLAG_THRESHOLD
    warnings = []
    current_results = Q(is_current=True) if pairs is None else current  # the partial index on the current AC1s
    low = BatchResult.objects.filter(current_results, ac1__lt=threshold).select_related("batch").only("ac1", "batch__name")
    for br in low:
        if br.ac1 is not None and br.ac1 < threshold:
            warnings.append(
                {
                    "code": "low_agreement",
                    "batch": br.batch.name,
                    "message": f"batch {br.batch.name}: AC1 {br.ac1:.2f} is under the flag threshold {threshold:g}",
                    "ac1": br.ac1,
                }
            )
    # issue 23: from the aggregation job's summary of each run (`ShortResults`), not a pass over the results
    # only the rows under the largest overlap (an index range; none, mostly), then each against its batch's
    largest = Subquery(Batch.objects.order_by("-overlap").values("overlap")[:1])
    short = (
        ShortResults.objects.filter(current, n_judgments__lt=largest).filter(n_judgments__lt=F("batch__overlap"))
        .values("batch__name", "batch__overlap").annotate(items=Sum("items"), fewest=Min("n_judgments")).order_by("batch__name")
    )
    for row in short:
        warnings.append(
            {
                "code": "under_overlap",
                "batch": row["batch__name"],
                "message": (
                    f"batch {row['batch__name']}: {row['items']} item(s) hold fewer judgments than its overlap "
                    f"{row['batch__overlap']} (fewest: {row['fewest']})"
                ),
                "items": row["items"],
                "overlap": row["batch__overlap"],
                "fewest": row["fewest"],
            }
        )
    return sorted(warnings, key=lambda w: (w["batch"], w["code"]))


def runs_for(*, run_ids) -> list[AggregationRun]:
    return list(AggregationRun.objects.filter(id__in=set(run_ids)).order_by("id"))


def releases_list() -> QuerySet[Release]:
    return Release.objects.select_related("created_by").order_by("-created_at", "-id")


def release_get(*, version: str) -> Release:
    return Release.objects.get(version=version)


def release_ready_get(*, version: str) -> Release:
    return Release.objects.get(version=version, status=ReleaseStatus.READY)


def manifest_rows_page(*, release: Release, kind: str, page=1) -> tuple[Page, list[dict]]:
    """A page of one of a release's MANIFEST_LISTS (its per-batch agreement, its staff decisions),
    as the manifest holds them: one statement on an index, whatever the size of the list."""
    pager, lo, hi = page_bounds(page, int(release.summary.get(kind) or 0))
    rows = ManifestRow.objects.filter(release=release, kind=kind, position__gte=lo, position__lt=hi)
    return pager, list(rows.order_by("position").values_list("row", flat=True)) if pager.total else []


def release_files(*, release: Release) -> list[tuple[str, dict]]:
    """Every file of a ready release, as its manifest lists them (name, {sha256, bytes, rows}),
    manifest.json last (its own checksum is in `Release.files`, not in itself)."""
    listed = dict(release.summary.get("files") or {})
    if "manifest.json" in release.files:
        listed["manifest.json"] = {"sha256": release.files["manifest.json"].get("sha256")}
    return sorted(listed.items(), key=lambda kv: (kv[0] == "manifest.json", kv[0]))


def release_file(*, release: Release, name: str) -> tuple[Path, str]:
    """(path, SHA-256) of one file of a ready release; KeyError for a name its manifest does not
    list. The path is built from the release folder and a listed name only, and must stay inside it."""
    checksums = dict(release_files(release=release))
    if name not in checksums or not checksums[name].get("sha256"):
        raise KeyError(name)
    folder = (Path(settings.RELEASE_ROOT) / release.version).resolve()
    path = (folder / name).resolve()
    if path.parent != folder or not path.is_file():
        raise KeyError(name)
    return path, checksums[name]["sha256"]
