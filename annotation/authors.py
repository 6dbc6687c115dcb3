"""Importing the DialToM authors' files (the pool, the verified release, the counterfactuals):
staged in SQL, compared with what is stored, written once; re-running changes nothing."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from dialtom_site import jobs

from . import dialtom
from .models import Batch, Context, Domain, Item, Task, Variant
from .parsers import InputError, count_words
from .bulk import bulk_insert, chunked
from .imported import already_imported, file_hashes, imported_record
from .services import CHUNK_SIZE, RELEASE_RECORDS_TASK, continuation_reveals_refresh, domains_ensure


def _kind(item) -> str:
    task, variant = (item["task"], item["variant"]) if isinstance(item, dict) else item
    if task == Task.RETROSPECTIVE:
        return "retrospective"
    return {Variant.EASY: "easy", Variant.COUNTERFACTUAL: "counterfactual"}.get(variant, "prospective")


KINDS = ("retrospective", "prospective", "easy", "counterfactual")
_KIND_SQL = ("CASE WHEN task = 'retrospective' THEN 'retrospective' WHEN variant = 'easy' THEN 'easy' "
             "WHEN variant = 'counterfactual' THEN 'counterfactual' ELSE 'prospective' END")
# What the first pass learns, in temporary tables of this transaction (dropped at its end),
# so that memory does not grow with the number of records: a row per context or item met.
# On SQLite (`make demo`) the same tables and queries, in its dialect: `_staging_sql` says
# where the two differ (one statement an execute, no ON COMMIT DROP, no DISTINCT ON, no COPY).
_STAGING_TABLES = ("dialtom_seen", "dialtom_bad", "dialtom_first")
_STAGING_SQL = """
CREATE TEMP TABLE dialtom_seen (
    seq {serial} PRIMARY KEY, kind text NOT NULL, id text NOT NULL, digest bytea NOT NULL,
    file integer NOT NULL, line integer NOT NULL, key text NOT NULL, field text NOT NULL,
    context_id text NOT NULL, task text NOT NULL, attribute text NOT NULL, variant text NOT NULL,
    batch text NOT NULL, release jsonb
){on_commit_drop};
CREATE TEMP TABLE dialtom_bad (kind text NOT NULL, id text NOT NULL, reason text NOT NULL,
                               PRIMARY KEY (kind, id)){on_commit_drop}
"""
_FIRST_SQL = {
    # one row per valid id, where it is first met
    "postgresql": """
            CREATE TEMP TABLE dialtom_first ON COMMIT DROP AS
            SELECT DISTINCT ON (s.kind, s.id) {columns}
            FROM dialtom_seen s
            WHERE NOT EXISTS (SELECT 1 FROM dialtom_bad b WHERE b.kind = s.kind AND b.id = s.id)
            ORDER BY s.kind, s.id, s.seq""",
    "sqlite": """
            CREATE TEMP TABLE dialtom_first AS
            SELECT {columns}
            FROM dialtom_seen s
            WHERE NOT EXISTS (SELECT 1 FROM dialtom_bad b WHERE b.kind = s.kind AND b.id = s.id)
              AND s.seq = (SELECT min(f.seq) FROM dialtom_seen f WHERE f.kind = s.kind AND f.id = s.id)""",
}
_PREFIX_SQL = {"postgresql": "split_part(id, '-', 1)", "sqlite": "substr(id, 1, instr(id, '-') - 1)"}


def _staging_sql(statement: str | dict) -> list[str]:
    """The statements of `statement` (a dict: one per database) for this connection, one an item."""
    postgres = connection.vendor == "postgresql"
    if isinstance(statement, dict):
        statement = statement["postgresql" if postgres else "sqlite"]
    statement = statement.replace("{serial}", "serial" if postgres else "integer")
    statement = statement.replace("{on_commit_drop}", " ON COMMIT DROP" if postgres else "")
    return [s for s in statement.split(";") if s.strip()]


def _staging_run(cursor, statement: str | dict) -> None:
    for sql in _staging_sql(statement):
        cursor.execute(sql)


class _RowsIn:
    """Rows into a staging table: COPY on PostgreSQL, executemany elsewhere."""

    def __init__(self, cursor, table: str, columns: tuple[str, ...]):
        self.cursor, self.table, self.columns, self.rows = cursor, table, columns, []

    def __enter__(self):
        if connection.vendor == "postgresql":
            self._copy = self.cursor.copy(f"COPY {self.table} ({', '.join(self.columns)}) FROM STDIN")
            self.write_row = self._copy.__enter__().write_row
        else:
            self.write_row = self.rows.append
        return self

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            return self._copy.__exit__(*exc)
        if exc[0] is None and self.rows:
            marks = ", ".join(["%s"] * len(self.columns))
            self.cursor.executemany(f"INSERT INTO {self.table} ({', '.join(self.columns)}) VALUES ({marks})", self.rows)
        return False


def _rows_streamed(name: str, sql: str):
    """The rows of a query, streamed by a server-side cursor on PostgreSQL; a plain cursor elsewhere."""
    if connection.vendor == "postgresql":
        with connection.connection.cursor(name=name) as rows:
            rows.itersize = 2000
            rows.execute(sql)
            yield from rows
        return
    with connection.cursor() as rows:
        rows.execute(sql)
        yield from rows
JSON_COLUMNS = {"context": {1}, "item": {1 + dialtom.ITEM_COMPARED.index(c) for c in ("options", "profile")}}
_SEEN_COLUMNS = ("kind", "id", "digest", "file", "line", "key", "field", "context_id", "task", "attribute", "variant",
                 "batch", "release")


def _where(place: tuple) -> str:
    return f"{place[0]}:{place[1]} ({place[2]!r})"


def _problem(file_name: str, line: int, key: str, field: str, reason: str) -> dialtom.Problem:
    return dialtom.Problem(file_name, line, key, field, reason)


@transaction.atomic
def dialtom_import(*, directory: str | Path, seed: int | None = None, batch: str | None = None,
                   strict: bool = False, force: bool = False) -> dict:
    """Import every file of the DialToM authors in a directory (docs/data.md): the unverified
    pool, the verified release and the counterfactuals, whatever mix it holds.

    One item per (context, task, attribute, variant), whichever files give it: an item in
    the pool and in the release is one item, marked `retained_by_authors`. A part that
    cannot be a valid item (two equal options, continuations missing for a state, a key
    given twice with different content, already in the database with other content, ...)
    is skipped and listed in the report's `skipped` (file, line, key, field, reason);
    `strict=True` refuses the import instead, writing nothing. NUL characters are removed
    and listed in `warnings`. A file none of whose records is valid is refused.

    Two passes over the files, one file in memory at a time: the first fingerprints every
    context and item into a temporary table (`dialtom_seen`), where SQL finds the ids given
    twice with other content or clashing with the database; the second re-reads each file
    and streams what is new into the tables (COPY). One transaction; a second run creates
    nothing. Context ids come from the record id "session, window": "5, 2" in MI ->
    `mi-s0005-w02`. Items go to one batch per file (pool items to their pool file's,
    `dialtom-mi-data-0-50`; release-only items to `dialtom-mi-retrospective`, ...) unless
    `batch` is given.

    A file whose content (sha256) was imported before with the same seed and batch, none of
    its records skipped, is skipped and named in the report's `unchanged`
    (`annotation.imported`); `force` reads it again.
    """
    domains_ensure()
    seed = settings.DIALTOM_SEED if seed is None else seed
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "-", "directory", "not a directory")
    files = dialtom.source_files(directory)
    if not files:
        raise InputError(directory, "-", "files", "no DialToM files here ({MI,ESC,PFG}_data_{start}_{count}.json, "
                                                  "{MI,ESC,PFG}_{retrospective,prospective,prospective-easy}"
                                                  "_verified.json, {MI,ESC,PFG}_counterfact.json)")
    hashes = file_hashes(f.path for f in files)
    options = {"seed": seed, "batch": batch}
    unchanged = set() if force else already_imported("dialtom", options, hashes)
    files = [f for f in files if f.path not in unchanged]
    if not files:
        return _nothing_imported(directory, sorted(p.name for p in unchanged))
    domains = {d.code: d for d in Domain.objects.all()}
    names = [f.path.name for f in files]
    skipped: list[dialtom.Problem] = []
    warnings: list[dialtom.Problem] = []
    counterfactuals: dict[str, tuple[dict, tuple]] = {}  # a few hundred: kept in memory

    with connection.cursor() as cursor:
        for table in _STAGING_TABLES:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        _staging_run(cursor, _STAGING_SQL)

        # Pass 1: problems of single records into the report, fingerprints into dialtom_seen.
        for index, file in enumerate(files):
            n_records = n_valid = 0
            first_problem = None
            with _RowsIn(cursor, "dialtom_seen", _SEEN_COLUMNS) as copy:
                for parsed in dialtom.read(file, domain=domains[file.domain], seed=seed):
                    n_records += 1
                    warnings.extend(parsed.warnings)
                    skipped.extend(parsed.skipped)
                    first_problem = first_problem or (parsed.skipped[0] if parsed.skipped else None)
                    place = (file.path.name, parsed.line, parsed.key)
                    if parsed.counterfactual is not None:
                        n_valid += 1
                        cf = parsed.counterfactual
                        item_id = f"{cf['parent_id']}-counterfactual"
                        before = counterfactuals.get(item_id)
                        if before is None:
                            counterfactuals[item_id] = (cf, place)
                        elif before[0]["profile"] != cf["profile"]:
                            counterfactuals[item_id] = ({**before[0], "conflict": place}, before[1])
                        continue
                    if parsed.context is None:
                        continue
                    n_valid += 1
                    context = parsed.context
                    copy.write_row(("context", context["context_id"], dialtom.context_digest(context["turns"]), index,
                                    parsed.line, parsed.key, "ctx", context["context_id"], "", "", "", "", None))
                    for item in parsed.items:
                        copy.write_row(("item", item["item_id"], dialtom.item_digest(item), index, parsed.line,
                                        parsed.key, item["field"], context["context_id"], item["task"],
                                        item["attribute"], item["variant"], batch or file.batch,
                                        json.dumps(item["release"]) if "release" in item else None))
            if n_records and not n_valid:
                raise InputError(file.path, first_problem.line, first_problem.field,
                                 f"{first_problem.reason} (no record of this file is valid)")
        _staging_run(cursor, "CREATE INDEX dialtom_seen_kind_id ON dialtom_seen (kind, id, seq); ANALYZE dialtom_seen")

        # An id given twice with other content: every version is skipped.
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT s.kind, s.id, 'other ' || CASE s.kind WHEN 'context' THEN 'turns' ELSE 'content' END || ' in ' ||
                   (SELECT f.file || ':' || f.line || ':' || f.key FROM dialtom_seen f
                    WHERE f.kind = s.kind AND f.id = s.id ORDER BY f.seq LIMIT 1)
            FROM dialtom_seen s GROUP BY s.kind, s.id HAVING count(DISTINCT s.digest) > 1""")
        # ... or already in the database with other content (compared here, by fingerprint).
        for kind, sql in (
            ("context", "SELECT c.context_id, c.turns, s.digest FROM annotation_context c JOIN "
                        "(SELECT DISTINCT id, digest FROM dialtom_seen WHERE kind = 'context') s ON s.id = c.context_id"),
            ("item", f"SELECT i.item_id, i.{', i.'.join(dialtom.ITEM_COMPARED)}, s.digest FROM annotation_item i JOIN "
                     "(SELECT DISTINCT id, digest FROM dialtom_seen WHERE kind = 'item') s ON s.id = i.item_id"),
        ):
            differ = []
            for row in _rows_streamed(f"dialtom_{kind}_check", sql):
                # Django reads jsonb as text on this connection: decode it as JSONField would
                row = [json.loads(v) if isinstance(v, str) and n in JSON_COLUMNS[kind] else v for n, v in enumerate(row)]
                mine = bytes(row[-1])
                if kind == "context":
                    theirs = dialtom.context_digest(row[1])
                else:
                    theirs = dialtom.item_digest(dict(zip(dialtom.ITEM_COMPARED, row[1:-1], strict=True)))
                if theirs != mine:
                    differ.append((kind, row[0], f"already in the database with other "
                                                 f"{'turns' if kind == 'context' else 'content'}"))
            for chunk in chunked(differ, 5000):
                cursor.executemany("INSERT INTO dialtom_bad (kind, id, reason) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                                   chunk)
        # ... or whose slot (context, task, attribute, variant) is another item's in the database.
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT DISTINCT 'item', s.id, 'its slot (' || s.task || ' ' || s.attribute || ' ' || s.variant ||
                   ') is taken by item ' || i.item_id || ' in the database'
            FROM dialtom_seen s JOIN annotation_context c ON c.context_id = s.context_id
            JOIN annotation_item i ON i.context_id = c.id AND i.task = s.task AND i.attribute = s.attribute
                                  AND i.variant = s.variant AND i.item_id <> s.id
            WHERE s.kind = 'item' ON CONFLICT DO NOTHING""")
        # The places of what is skipped go to the report (the items of a skipped context
        # are not listed one by one: the context's line says it).
        cursor.execute("""
            SELECT s.file, s.line, s.key, s.field, s.kind, s.id, b.reason FROM dialtom_seen s
            JOIN dialtom_bad b ON b.kind = s.kind AND b.id = s.id ORDER BY s.seq""")
        for file_index, line, key, field_name, kind, id_, reason in cursor.fetchall():
            where, _, rest = reason.partition(" in ")
            if rest and ":" in rest:  # "other content in <file index>:<line>:<key>"
                f, ln, k = rest.split(":", 2)
                reason = f"{where} in {_where((names[int(f)], int(ln), k))}"
            what = f"context {id_} has {reason}" if kind == "context" else f"item {id_}: {reason}"
            skipped.append(_problem(names[file_index], line, key, field_name, f"{what}; not imported"
                                    if kind == "item" else f"{what}; none of its versions is imported"))
        cursor.execute("""
            INSERT INTO dialtom_bad (kind, id, reason)
            SELECT DISTINCT 'item', s.id, 'its context is skipped' FROM dialtom_seen s
            JOIN dialtom_bad b ON b.kind = 'context' AND b.id = s.context_id WHERE s.kind = 'item'
            ON CONFLICT DO NOTHING""")
        for item_id, (cf, place) in counterfactuals.items():
            if "conflict" in cf:
                skipped.extend(_problem(*p, "profile", f"item {item_id}: other profiles in {_where(place)} and "
                                                       f"{_where(cf['conflict'])}; not imported")
                               for p in (place, cf["conflict"]))
        if strict and skipped:
            first = skipped[0]
            raise InputError(first.file, first.line, first.field,
                             first.reason + (f" (and {len(skipped) - 1} more problem(s))" if len(skipped) > 1 else ""))

        # One row per valid id: where it is first met, its batch, the release's word on it.
        columns = """s.kind, s.id, s.file, s.batch, s.task, s.variant,
                   (SELECT r.release FROM dialtom_seen r WHERE r.kind = s.kind AND r.id = s.id AND r.release IS NOT NULL
                    ORDER BY r.seq LIMIT 1) AS release,
                   EXISTS (SELECT 1 FROM annotation_item i WHERE s.kind = 'item' AND i.item_id = s.id)
                   OR EXISTS (SELECT 1 FROM annotation_context c WHERE s.kind = 'context' AND c.context_id = s.id)
                   AS existing"""
        _staging_run(cursor, {vendor: sql.replace("{columns}", columns) for vendor, sql in _FIRST_SQL.items()})
        _staging_run(cursor, "CREATE INDEX dialtom_first_file ON dialtom_first (file, kind); ANALYZE dialtom_first")
        # An item already there that the release now holds is marked as retained by the authors.
        cursor.execute("""
            UPDATE annotation_item AS i SET retained_by_authors = true FROM dialtom_first f
            WHERE f.kind = 'item' AND f.id = i.item_id AND f.release IS NOT NULL AND NOT i.retained_by_authors""")
        n_marked = cursor.rowcount

        # Pass 2: each file again; what is new and first met in it is written (COPY).
        batch_pks: dict[str, int] = {}

        def batch_pk(name: str) -> int:
            if name not in batch_pks:
                batch_pks[name] = Batch.objects.get_or_create(
                    name=name, defaults={"overlap": settings.DIALTOM_DEFAULT_OVERLAP,
                                         "lease_minutes": settings.DIALTOM_LEASE_MINUTES})[0].pk
            return batch_pks[name]

        created: Counter = Counter()
        touched: set[str] = set()  # sessions with new contexts or items: their reveals are found again
        for index, file in enumerate(files):
            if file.kind == "counterfact":
                continue
            cursor.execute("SELECT kind, id, batch, release FROM dialtom_first WHERE file = %s AND NOT existing", [index])
            todo = {(kind, id_): (batch_name, json.loads(release) if isinstance(release, str) else release)
                    for kind, id_, batch_name, release in cursor.fetchall()}
            if not todo:
                continue
            new_contexts, new_items = [], []
            for parsed in dialtom.read(file, domain=domains[file.domain], seed=seed):
                context = parsed.context
                if context is None:
                    continue
                if todo.pop(("context", context["context_id"]), None) is not None:
                    touched.add(context["session_key"])
                    new_contexts.append({
                        "context_id": context["context_id"], "domain_id": context["domain"],
                        "session_key": context["session_key"], "window_index": context["window_index"],
                        "turns": context["turns"], "n_words": sum(count_words(t["text"]) for t in context["turns"]),
                        "metadata": {**context["metadata"], "file": file.path.name}})
                for item in parsed.items:
                    first = todo.pop(("item", item["item_id"]), None)
                    if first is None:
                        continue
                    touched.add(context["session_key"])
                    batch_name, release = first
                    metadata = {"source": "dialtom-pool" if file.kind == "pool" else "dialtom-release",
                                "file": file.path.name, "key": parsed.key.partition("_")[0],
                                "state": (release or {}).get("state") or item["field"].rpartition(".")[2]}
                    if release:
                        metadata["release"] = release
                    new_items.append({
                        **{k: item[k] for k in ("item_id", "task", "attribute", "variant", "target_speaker",
                                                "question", "options", "answer", "profile")},
                        "context_id": context["context_id"], "batch_id": batch_pk(batch_name),
                        "retained_by_authors": bool(release), "metadata": metadata})
            for chunk in chunked(new_contexts, CHUNK_SIZE):
                bulk_insert(Context, chunk)
            created["contexts"] += len(new_contexts)
            context_pks = dict(Context.objects.filter(
                context_id__in={row["context_id"] for row in new_items}).order_by().values_list("context_id", "pk"))
            for row in new_items:
                row["context_id"] = context_pks[row["context_id"]]
                created[_kind(row)] += 1
            for chunk in chunked(new_items, CHUNK_SIZE):
                bulk_insert(Item, chunk)

        # Totals over the valid ids (created now or there before).
        cursor.execute(f"""
            SELECT kind, {_staging_sql(_PREFIX_SQL)[0]}, {_KIND_SQL}, count(*), count(*) FILTER (WHERE release IS NOT NULL),
                   count(*) FILTER (WHERE existing)
            FROM dialtom_first GROUP BY 1, 2, 3""")
        totals: Counter = Counter()
        by_domain: dict[str, Counter] = defaultdict(Counter)
        existing: Counter = Counter()
        n_retained = 0
        for kind, domain_code, item_kind, n, n_release, n_existing in cursor.fetchall():
            if kind == "context":
                totals["contexts"] += n
                existing["contexts"] += n_existing
                continue
            totals[item_kind] += n
            by_domain[domain_code][item_kind] += n
            existing["items"] += n_existing
            n_retained += n_release
        # ON COMMIT DROP does not fire when the caller's transaction goes on (a savepoint here)
        for table in _STAGING_TABLES:
            cursor.execute(f"DROP TABLE {table}")

    # Counterfactuals: the prospective item of (context, state), now in the database.
    counterfactual_ok: list[str] = []
    wanted = {cf["parent_id"]: item_id for item_id, (cf, _) in counterfactuals.items() if "conflict" not in cf}
    parents = {row["item_id"]: row for row in Item.objects.filter(
        item_id__in=list(wanted), task=Task.PROSPECTIVE, variant=Variant.HARD).order_by().values(
        "pk", "item_id", "task", "attribute", "target_speaker", "question", "options", "context_id")}
    existing_cf = {row["item_id"]: row for row in Item.objects.filter(item_id__in=list(wanted.values())).order_by().values(
        "item_id", *dialtom.ITEM_COMPARED)}
    new_cf, cf_problems = [], []
    for parent_id, item_id in wanted.items():
        cf, place = counterfactuals[item_id]
        parent = parents.get(parent_id)
        if parent is None:
            cf_problems.append(_problem(*place, "key", f"no prospective item {parent_id} (its context and state) "
                                                       "in this directory or the database; not imported"))
            continue
        item = dialtom.counterfactual_item(parent=parent, profile=cf["profile"])
        before = existing_cf.get(item_id)
        if before is not None and dialtom.item_digest(before) != dialtom.item_digest(item):
            cf_problems.append(_problem(*place, "profile", f"item {item_id}: already in the database with other "
                                                           "content; not imported"))
            continue
        counterfactual_ok.append(item_id)
        if before is not None:
            existing["items"] += 1
            continue
        file = files[names.index(place[0])]
        new_cf.append({**{k: item[k] for k in ("item_id", "task", "attribute", "variant", "target_speaker", "question",
                                               "options", "answer", "profile")},
                       "context_id": parent["context_id"], "parent_id": parent["pk"],
                       "batch_id": batch_pk(batch or file.batch),
                       "metadata": {"source": "dialtom-counterfact", "file": place[0], "key": place[2]}})
    if strict and cf_problems:
        raise cf_problems[0].error()
    skipped.extend(cf_problems)
    bulk_insert(Item, new_cf)
    created["counterfactual"] += len(new_cf)
    reveals = continuation_reveals_refresh(session_keys=touched) if touched else 0
    if touched or new_cf:  # what a release will hold of them, made once this commits (releases.records)
        jobs.follow_up_on_commit(RELEASE_RECORDS_TASK)
    totals["counterfactual"] = len(counterfactual_ok)
    for item_id in counterfactual_ok:
        by_domain[item_id.split("-", 1)[0]]["counterfactual"] += 1

    report = {
        "directory": str(directory),
        "files": names,
        "unchanged": sorted(p.name for p in unchanged),
        "contexts": totals["contexts"],
        **{k: totals[k] for k in KINDS},
        "references": 0,  # the written inferences: import_dialtom adds them (references.services)
        "retained_by_authors": n_retained,
        "created": {"contexts": created["contexts"], "items": sum(created[k] for k in KINDS),
                    **{k: created[k] for k in KINDS}, "references": 0, "marked_retained": n_marked},
        "existing": {"contexts": existing["contexts"], "items": existing["items"]},
        "skipped": [p.as_dict() for p in skipped],
        "warnings": [p.as_dict() for p in warnings],
        "by_domain": {d: {k: c[k] for k in KINDS} for d, c in sorted(by_domain.items())},
        "continuation_reveals": reveals,
    }
    # a file with a record skipped is read again next time (its problems listed again)
    dirty = {p.file for p in skipped}
    imported_record("dialtom", options, {f.path: hashes[f.path] for f in files if f.path.name not in dirty},
                    counts=report["created"])
    return report


def _nothing_imported(directory: Path, unchanged: list[str]) -> dict:
    """The report of an import whose files were all imported before, unchanged."""
    return {"directory": str(directory), "files": [], "unchanged": unchanged, "contexts": 0, **dict.fromkeys(KINDS, 0),
            "references": 0, "retained_by_authors": 0,
            "created": {"contexts": 0, "items": 0, **dict.fromkeys(KINDS, 0), "references": 0, "marked_retained": 0},
            "existing": {"contexts": 0, "items": 0}, "skipped": [], "warnings": [], "by_domain": {},
            "continuation_reveals": 0}


def contexts_ensure(contexts: dict[str, tuple[dict, dict]]) -> tuple[dict[str, int], int]:
    """Create the contexts not in the database yet, from `context_id -> (fields as made by
    dialtom.context_of, where)`; one already there with other turns raises InputError at its
    `where` ({"file", "line", "field"}). Returns (context_id -> pk, how many were created)."""
    existing = {}
    for chunk in chunked(contexts, 5000):
        for context_id, pk, turns in Context.objects.filter(context_id__in=chunk).order_by().values_list(
                "context_id", "pk", "turns"):
            context, where = contexts[context_id]
            if dialtom.context_digest(turns) != dialtom.context_digest(context["turns"]):
                raise InputError(where["file"], where["line"], "ctx",
                                 f"context {context_id} is already in the database with other turns")
            existing[context_id] = pk
    new = Context.objects.bulk_create([
        Context(context_id=c["context_id"], domain_id=c["domain"], session_key=c["session_key"],
                window_index=c["window_index"], turns=c["turns"],
                n_words=sum(count_words(t["text"]) for t in c["turns"]), metadata=c["metadata"])
        for context_id, (c, _) in contexts.items() if context_id not in existing
    ])
    return {**existing, **{c.context_id: c.pk for c in new}}, len(new)
