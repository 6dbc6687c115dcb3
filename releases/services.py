"""Writes behind releases: create a release, build its files (in a Celery task)."""
import json
import logging
import queue
import re
import shutil
import uuid
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from django.conf import settings
from django.utils.module_loading import import_string
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from accounts.models import User
from annotation.models import Item
from dialtom_site import jobs
from dialtom_site.db.planner import jit_off
from dialtom_site.db.snapshot import SharedSnapshot
from verification.selectors import overlap_allocation
from review.selectors import adjudications_in_force

from . import export, selectors
from .models import VERSION_PATTERN, ManifestRow, Release, ReleaseItem, ReleaseStatus, manifest_rows, manifest_summary

logger = logging.getLogger(__name__)

MANIFEST_FORMAT = 3  # 2: results.csv, judgments.csv, warnings; 3: results.csv honours staff decisions (+ adjudication)


def release_root() -> Path:
    return Path(settings.RELEASE_ROOT)


class ReleaseWarnings(ValidationError):
    """The current results carry warnings (see `selectors.release_warnings`) and the caller did
    not acknowledge them: nothing was recorded."""

    def __init__(self, warnings: list[dict]):
        self.warnings = warnings
        super().__init__(
            {"acknowledge_warnings": [w["message"] for w in warnings] + ["acknowledge these warnings to create the release"]}
        )


def release_next_version() -> str:
    numbers = [int(v[1:]) for v in Release.objects.filter(version__regex=r"^v[0-9]+$").values_list("version", flat=True)]
    return f"v{max(numbers, default=0) + 1}"


@transaction.atomic
def release_create(
    *,
    version: str | None = None,
    created_by: User | None = None,
    trigger: str = "manual",
    build: bool = True,
    acknowledge_warnings: bool = False,
) -> Release:
    """Records a new release and queues its build (after commit). Versions are never reused.

    When the current results carry warnings (a flagged batch, items under their overlap) the
    release is refused with `ReleaseWarnings` unless `acknowledge_warnings`; the warnings are
    recorded on the release, in its manifest and shown wherever it is listed.

    With the broker down the release is kept, WAITING, and the jobs sweep queues its build
    once Redis is back: the version is never burned by an outage.
    """
    version = (version or "").strip() or release_next_version()
    if not re.match(VERSION_PATTERN, version):
        raise ValidationError({"version": "use 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit"})
    if Release.objects.filter(version=version).exists() or (release_root() / version).exists():
        raise ValidationError({"version": f"release {version} already exists; releases are immutable"})
    warnings = selectors.release_warnings()
    if warnings and not acknowledge_warnings:
        raise ReleaseWarnings(warnings)
    try:
        with transaction.atomic():
            release = Release.objects.create(
                version=version,
                created_by=created_by,
                trigger=trigger,
                status=ReleaseStatus.WAITING if build else ReleaseStatus.PENDING,  # waiting: for the task queue
                warnings=warnings,
                warnings_acknowledged=bool(warnings),
            )
    except IntegrityError as exc:
        raise ValidationError({"version": f"release {version} already exists; releases are immutable"}) from exc
    if build:
        jobs.job_queue_on_commit(Release, release.id)
    return release


def _release_claim(release_id: int) -> Release | None:
    """Moves a waiting/pending/failed release to building; None if someone else has it."""
    claimed = jobs.job_start(
        Release,
        release_id,
        running=ReleaseStatus.BUILDING,
        from_statuses=(ReleaseStatus.WAITING, ReleaseStatus.PENDING, ReleaseStatus.FAILED),
    )
    if not claimed:
        return None
    Release.objects.filter(pk=release_id).update(error="")
    return Release.objects.get(pk=release_id)


def _stale_builds_remove(root: Path, *, building: str) -> list[str]:
    """Remove the `.tmp-<version>-…` folders that killed builds left in the release root: those
    of the release being built (its build is ours now) and of every release no worker is
    building. Returns the names removed."""
    live = set(
        Release.objects.filter(status=ReleaseStatus.BUILDING).exclude(version=building).values_list("version", flat=True)
    )
    removed = []
    for path in sorted(root.glob(".tmp-*")):
        version = path.name.removeprefix(".tmp-").rpartition("-")[0]
        if path.is_dir() and version not in live:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    if removed:
        logger.warning("removed what killed release builds left: %s", ", ".join(removed))
    return removed


def release_records_refresh() -> int:
    """Make the release records (`records`) of every item and context that has none or an outdated
    one; returns how many were made. The follow-up of an import (`tasks.release_records_refresh_task`,
    queued by the importers), so the records are made as the items arrive and the first release
    after an import makes none (at 4M items they are most of a build's Python), and, until an item, a
    context or a domain changes, checks none (`records.records_current`). PostgreSQL only:
    elsewhere the files are written by Python, from no record (0)."""
    if connection.vendor != "postgresql":
        return 0
    from . import records  # noqa: PLC0415 - PostgreSQL only

    made = records.records_refresh(items_sql=f"SELECT id FROM {Item._meta.db_table}", params=[], whole=True)
    if made and not connection.in_atomic_block:
        records.records_vacuum()
    return made


def release_records_up_to_date() -> bool:
    """Every release record is known up to date, so a build checks none (`records.records_current`);
    False on SQLite, which keeps none."""
    if connection.vendor != "postgresql":
        return False
    from . import records  # noqa: PLC0415 - PostgreSQL only

    with connection.cursor() as cursor:
        return records.records_current(cursor)


def release_build(*, release_id: int, portable: bool = False) -> Release:
    """Builds the files of a release under RELEASE_ROOT/<version>/; safe to run twice.
    `portable`: every file written by Python, as on SQLite (the same bytes; tests compare).

    The files are written into a temporary folder that is renamed into place at the end,
    so a release folder is either complete or absent. A ready release is never rebuilt.
    """
    release = _release_claim(release_id)
    if release is None:
        return Release.objects.get(pk=release_id)
    root = release_root()
    root.mkdir(parents=True, exist_ok=True)
    _stale_builds_remove(root, building=release.version)
    final = root / release.version
    tmp = root / f".tmp-{release.version}-{uuid.uuid4().hex[:8]}"

    def publish(entries: int, manifest: dict) -> None:  # in the transaction that holds the release's items
        if entries != manifest["audited_items"]:  # pragma: no cover - the results of a succeeded run never change
            raise RuntimeError(f"{entries} release items for {manifest['audited_items']} rows of results.csv")
        files = {name: {**meta, "path": str(final / name)} for name, meta in manifest["files"].items()}
        files["manifest.json"] = {"path": str(final / "manifest.json"), "sha256": export.sha256_file(tmp / "manifest.json")}
        ours = Release.objects.filter(pk=release.pk, status=ReleaseStatus.BUILDING, attempts=release.attempts)
        if not ours.update(
            status=ReleaseStatus.READY,
            finished_at=timezone.now(),
            n_items=manifest["items"],
            files=files,
            manifest=manifest,
            summary=manifest_summary(manifest),
            warnings=manifest["warnings"],
        ):  # a worker taken for dead that comes back: a later attempt owns the release now
            raise RuntimeError(f"attempt {release.attempts} of release {release.version} was superseded")
        ManifestRow.objects.bulk_create(manifest_rows(release.pk, manifest), batch_size=2000)
        tmp.rename(final)

    try:
        if final.exists():
            raise FileExistsError(f"{final} exists already; releases are immutable")
        tmp.mkdir()
        with jobs.job_heartbeat(Release, release.pk):
            pairs = selectors.current_batch_runs()
            # the release's items, its READY status and its folder land together, in one transaction:
            # on a connection of its own, which inserts the items while the files are written
            with _ItemsBeside(release_id=release.pk, pairs=pairs) as items:
                manifest = _write_release(release=release, directory=tmp, portable=portable, pairs=pairs)
                items.publish(lambda entries: publish(entries, manifest))
    except Exception as exc:  # noqa: BLE001 - recorded on the release (unless a later attempt owns it), then re-raised
        shutil.rmtree(tmp, ignore_errors=True)
        Release.objects.filter(pk=release.pk, attempts=release.attempts).exclude(status=ReleaseStatus.READY).update(
            status=ReleaseStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
        )
        logger.exception("release %s failed", release.version)
        raise
    release.refresh_from_db()
    return release


class _ItemsBeside:
    """`with _ItemsBeside(release_id=…, pairs=…) as items: …; items.publish(fn)`: the release's
    ReleaseItems inserted (`_release_items_insert`) and `fn(rows inserted)` run in one transaction.

    Outside a transaction, on PostgreSQL, that transaction is on a connection of its own, on a
    thread: the insert (4M rows, three indexes: ~35 s) runs while the files are written, and the
    transaction waits, open, for `publish`; leaving the block without it rolls the insert back.
    Inside one (tests, a caller's atomic block) or on SQLite: both run in line at `publish`."""

    def __init__(self, *, release_id: int, pairs: dict[int, int]):
        self.release_id, self.pairs = release_id, pairs
        self.beside = not connection.in_atomic_block and connection.vendor == "postgresql"
        self._then: queue.Queue = queue.Queue(maxsize=1)
        self._pool = self._future = None

    def __enter__(self) -> "_ItemsBeside":
        if self.beside:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="release-items")
            self._future = self._pool.submit(self._run)
        return self

    def _run(self) -> None:
        try:
            with transaction.atomic():
                entries = _release_items_insert(release_id=self.release_id, pairs=self.pairs)
                then = self._then.get()
                if then is None:  # the build failed before publishing
                    transaction.set_rollback(True)
                else:
                    then(entries)
        finally:
            connection.close()  # this thread's own connection

    def publish(self, then: Callable[[int], None]) -> None:
        if not self.beside:
            with transaction.atomic():
                then(_release_items_insert(release_id=self.release_id, pairs=self.pairs))
            return
        self._then.put(then)
        self._future.result()  # its exception, if any, is the build's

    def __exit__(self, *exc) -> bool:
        if self._pool is not None:
            if not self._future.done() and self._then.empty():
                self._then.put(None)  # left without publishing: roll the insert back
            self._pool.shutdown(wait=True)
        return False


def _release_items_insert(*, release_id: int, pairs: dict[int, int]) -> int:
    """The audited items' current results become the release's ReleaseItems in one
    INSERT … SELECT: no row goes through Python, so memory stays flat at any size."""
    select, params = (
        selectors.audited_item_results(pairs=pairs)
        .order_by()
        .values_list("item_id", "released_label", "posterior", "n_judgments", "released")
        .query.sql_with_params()
    )
    quote = connection.ops.quote_name
    columns = ", ".join(
        quote(ReleaseItem._meta.get_field(name).column)
        for name in ("release", "item", "label", "posterior", "n_judgments", "retained")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(ReleaseItem._meta.db_table)} ({columns}) SELECT %s, audited.* FROM ({select}) audited",
            [release_id, *params],
        )
        return cursor.rowcount


def _references_rows():
    """Accepted crowd references ({context_id, worker, attribute, text}), from the references app."""
    try:
        from references.selectors import references_export_rows  # noqa: PLC0415
    except ImportError:
        return None
    return references_export_rows()


def _report_files(*, directory: Path, release: Release, pairs: dict[int, int]) -> dict[str, int]:
    """Files frozen with the release by the apps above this one (the study report's
    report.json and report.tex), named as strings in DIALTOM_RELEASE_FILE_WRITERS: each
    writes into `directory` and returns file name → rows."""
    rows: dict[str, int] = {}
    for dotted in settings.DIALTOM_RELEASE_FILE_WRITERS:
        rows.update(import_string(dotted)(directory=directory, release=release, pairs=pairs))
    return rows


def _copy_out(*, directory: Path, release: Release, pairs: dict[int, int], agreement: dict[int, float | None],
              digests: dict, beside: Callable[[], dict[str, int]]) -> tuple[dict, dict[str, int], dict[str, int]]:
    """The files PostgreSQL writes (releases.copyout), hashed as they are written, in one snapshot:
    the items files from the items' records (`records.records_ensure` makes the missing and stale
    ones first, in the same transaction: records of the rows the files are made of; it checks
    none when the import's follow-up made them all and nothing changed since), results.csv
    and judgments.csv, and the files `beside` writes (the report's), which read the database too.
    When this opens the transaction, results.csv, judgments.csv and `beside` are written on a
    second connection in the same snapshot (`SharedSnapshot`), from the start, while this one
    makes the records and writes the items files: most of their work is the database's, and each
    side keeps a core busy (the records and the items files take about as long as the three others
    together; 4M items: 135 and 137 s).
    Returns (the items files' {rows, counts}, rows of results.csv and judgments.csv, what `beside`
    returns)."""
    from . import copyout, records  # noqa: PLC0415 - PostgreSQL only

    items_sql, items_params = (selectors.released_item_results(pairs=pairs).order_by().values("item_id")
                               .query.sql_with_params())
    # a pseudonym for every account (an HMAC each, microseconds; those who judged nothing go unused): finding
    # the release's verifiers among its judgments took a pass over all of them (5 s at 4M items)
    pseudonyms = {pk: export.pseudonym(secret=settings.SECRET_KEY, version=release.version, verifier_id=pk)
                  for pk in User.objects.values_list("pk", flat=True)}

    def the_rest() -> tuple[dict[str, int], dict[str, int]]:  # on this connection or, in the shared snapshot, another's
        with connection.cursor() as cursor:
            files = {
                "results.csv": copyout.write_results(cursor, path=directory / "results.csv", pairs=pairs),
                "judgments.csv": copyout.write_judgments(cursor, path=directory / "judgments.csv", pairs=pairs,
                                                         pseudonyms=pseudonyms),
            }
        digests.update({name: file.sha256.hexdigest() for name, file in files.items()})
        return {name: file.rows for name, file in files.items()}, beside()

    snapshot = not connection.in_atomic_block  # the files of one state of the data, if this opens the transaction
    with transaction.atomic(), connection.cursor() as cursor, ExitStack() as stack:
        if snapshot:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            records.records_lock(cursor)  # before the snapshot is taken
        _copy_settings(cursor)
        later = None
        if snapshot:
            later = stack.enter_context(SharedSnapshot(cursor, prepare=_copy_settings)).submit(the_rest)
        # the records the items files are made of, made here while the other connection writes (it reads none)
        made = records.records_ensure(items_sql=items_sql, params=list(items_params))
        if made:
            logger.info("release %s: %d item records made", release.version, made)
        written = copyout.write_items(cursor, directory=directory, pairs=pairs, agreement=agreement, version=release.version)
        digests.update(written["digests"])
        rows, beside_rows = later.result() if later is not None else the_rest()
    return {"rows": written["rows"], "counts": written["counts"]}, rows, beside_rows


def _copy_settings(cursor) -> None:
    """What every transaction writing a release's files sets for itself."""
    cursor.execute("SET LOCAL extra_float_digits = 1")  # shortest float text, as Python's repr
    jit_off(cursor)


def _write_items(*, directory: Path, release: Release, pairs: dict[int, int], agreement: dict[int, float | None],
                 digests: dict) -> dict:
    """items.jsonl, items.csv and items.parquet written by Python (export.ReleaseWriter): {rows, counts}."""
    roles = selectors.domain_roles()
    writer = export.ReleaseWriter(directory)
    try:
        with transaction.atomic():  # one transaction: the server-side cursor sees one snapshot
            for row in selectors.release_source_rows(pairs=pairs):
                writer.add(export.release_record(row, version=release.version, roles=roles, agreement=agreement))
    finally:
        writer.close()
    digests.update(writer.digests)
    return {"rows": writer.rows, "counts": writer.counts}


def _write_results(*, directory: Path, release: Release, pairs: dict[int, int]) -> dict[str, int]:
    """results.csv and judgments.csv written by Python: every audited item's result, retained or
    not, and the judgments fitted (enough to re-run the aggregation elsewhere). Returns their rows."""
    def result_rows():
        for row in selectors.release_result_rows(pairs=pairs):
            yield export.result_values(row)

    def judgment_rows():
        for item_id, verifier_id, label, seconds in selectors.release_judgment_rows(pairs=pairs):
            name = export.pseudonym(secret=settings.SECRET_KEY, version=release.version, verifier_id=verifier_id)
            yield item_id, name, label, None if seconds is None else export.release_round(seconds, 3)

    with transaction.atomic():
        return {
            "results.csv": export.write_csv(directory / "results.csv", header=export.RESULT_COLUMNS, rows=result_rows()),
            "judgments.csv": export.write_csv(directory / "judgments.csv", header=export.JUDGMENT_COLUMNS,
                                              rows=judgment_rows()),
        }


def _write_release(*, release: Release, directory: Path, portable: bool = False,
                   pairs: dict[int, int] | None = None) -> dict:
    """Writes every file of a release and its manifest into `directory`, from the results of the
    (batch → run) `pairs` (default: the current ones); returns the manifest. On PostgreSQL the
    database writes the data files (releases.copyout) unless `portable`: the same bytes either
    way. The results are also the release's items in the database (ReleaseItem, written by
    `release_build`), what model runs and baselines are scored against."""
    pairs = selectors.current_batch_runs() if pairs is None else pairs
    batch_results = list(selectors.current_batch_results(pairs=pairs))
    agreement = {br.batch_id: br.ac1 for br in batch_results}
    digests: dict[str, str] = {}  # files hashed as they were written

    def report() -> dict[str, int]:
        return _report_files(directory=directory, release=release, pairs=pairs)

    if not portable and connection.vendor == "postgresql":
        items, rows, report_rows = _copy_out(directory=directory, release=release, pairs=pairs, agreement=agreement,
                                             digests=digests, beside=report)
    else:
        items = _write_items(directory=directory, release=release, pairs=pairs, agreement=agreement, digests=digests)
        rows = _write_results(directory=directory, release=release, pairs=pairs)
        report_rows = report()
    counts = items["counts"]
    file_names = ["items.jsonl", "items.csv", "items.parquet", "results.csv", "judgments.csv"]
    rows.update({name: items["rows"] for name in file_names[:3]})

    references = _references_rows()
    n_references = None
    if references is not None:
        n_references = 0
        with open(directory / "references.jsonl", "wb") as handle:
            for row in references:
                handle.write(export.jsonl_line(dict(row)))
                n_references += 1
        file_names.append("references.jsonl")
        rows["references.jsonl"] = n_references

    file_names += list(report_rows)
    rows.update(report_rows)

    runs = selectors.runs_for(run_ids=pairs.values())
    batches_of_run = defaultdict(list)  # one pass: a run a batch at 4M items is 7,938 runs
    for br in batch_results:
        batches_of_run[br.run_id].append(br.batch.name)
    warnings = selectors.release_warnings(pairs=pairs)
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": release.version,
        "created_at": timezone.now().isoformat(),
        "items": items["rows"],
        "audited_items": rows["results.csv"],
        "judgments": rows["judgments.csv"],
        "references": n_references,
        "warnings": warnings,
        "warnings_acknowledged": release.warnings_acknowledged,
        "columns": list(export.COLUMNS),
        "results_columns": list(export.RESULT_COLUMNS),
        "judgments_columns": list(export.JUDGMENT_COLUMNS),
        "judgments_note": (
            "task = item_id, worker = a pseudonym of the verifier, the same within this release only; label in the "
            "item's original letters; every judgment the aggregation fitted (gold items included, verifiers excluded "
            "from aggregation left out); crowd-kit reads the file as it is"
        ),
        "counts": {key: dict(sorted(counter.items())) for key, counter in counts.items()},
        "retention": selectors.retention_counts(pairs=pairs),
        "adjudications": adjudications_in_force(),
        "agreement": [
            {
                "batch": br.batch.name,
                "run": br.run_id,
                "items": br.items,
                "judgments": br.judgments,
                "retained": br.retained,
                "ac1": br.ac1,
                "ac1_se": br.ac1_se,
                "ac1_ci": [br.ac1_ci_low, br.ac1_ci_high],
                "kappa": br.kappa,
                "alpha": br.alpha,
            }
            for br in batch_results
        ],
        # how each batch's judgments were allocated: fixed k or adaptive overlap (its policy)
        "overlap": overlap_allocation(batch_ids=[br.batch_id for br in batch_results]),
        "aggregation": {
            "retention_threshold": settings.DIALTOM_RETENTION_THRESHOLD,
            "runs": [
                {
                    "id": run.id,
                    "settings": run.settings,
                    "versions": run.versions,
                    "finished_at": run.finished_at.isoformat() if run.finished_at else None,
                    "batches": sorted(batches_of_run[run.id]),
                }
                for run in runs
            ],
        },
        "files": {
            name: {
                "sha256": digests.get(name) or export.sha256_file(directory / name),
                "bytes": (directory / name).stat().st_size,
                "rows": rows[name],
            }
            for name in file_names
        },
    }
    with open(directory / "manifest.json", "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, ensure_ascii=False, indent=2, sort_keys=False)
        handle.write("\n")
    return manifest
