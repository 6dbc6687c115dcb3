"""The JSON a release holds of each context and item (`models.ContextRecord`, `models.ItemRecord`),
kept for PostgreSQL to write a release's items files (`copyout.write_items`) with no row passing
through Python.

A record is made by Python, by the functions the portable path writes the files with
(`export.context_turns`, `export.option_continuations`, `export.json_text`), and names the row
versions it was made from: the `xmin` and `ctid` of its rows (the context or item, and its domain,
whose role names it holds), which an update of a row always changes (a new version of the row
is written, by another transaction or at another place). `records_refresh` makes the records
of items and contexts that are missing or older than their rows: after every import that wrote
some (`services.release_records_refresh`, a worker's follow-up), and before a release is written,
for its own items (none, once the import's follow-up ran; else the first release pays for its
items once, later releases only for what changed). PostgreSQL only.

Checking 4M items' versions takes a build 20–40 s, so a build skips it when the records are
known up to date (`records_current`): the follow-up made every record (`whole`), and since then
no statement changed an item, a context or a domain (`RecordsChange`, logged by PostgreSQL's
triggers in the changing transaction), none of their tables was rewritten, and no one but a maker
wrote the records (a crash, which empties the UNLOGGED records, empties `RecordsWhole` too).
"""
from __future__ import annotations

import json
from collections.abc import Callable

from django.db import connection, transaction

from annotation.models import Context, Domain, Item

from . import export
from .models import ContextRecord, ItemRecord, RecordsChange, RecordsWhole

MAKER = "dialtom.records_maker"  # set, for its own transaction, by a maker: its writes keep the records whole (read by migration 0009's trigger)


def _contexts(rows):
    for pk, versions, turns, initiator, recipient in rows:
        roles = {"initiator": initiator, "recipient": recipient}
        yield pk, versions, export.json_text(export.context_turns(json.loads(turns), roles))


def _items(rows):
    continuations = {}  # a domain's: its roles looked up once, not an item at a time
    for pk, versions, domain, task, options, profile, initiator, recipient in rows:
        options = list(json.loads(options))
        if task == "retrospective":
            yield pk, versions, export.json_text(options), None, None
            continue
        if (domain, initiator, recipient) not in continuations:
            continuations[domain, initiator, recipient] = export.continuations_of(
                domain=domain, domain_roles={"initiator": initiator, "recipient": recipient})
        yield (pk, versions, export.json_text(options), export.json_text(json.loads(profile) or {}),
               export.json_text(continuations[domain, initiator, recipient](options)))


# model, what comes before the statement (a WITH), its rows' versions, what Python reads (pk, versions, …),
# from where, which rows, the maker, the columns it makes, and the columns derived from them: each JSON
# as a field of items.csv (export.csv_json_field), quoted here once, not in every release. An item's
# versions end with its context's and domain's, made once a context (`c`, a few hundred thousand rows
# hashed once): looked up item by item, the contexts took most of a check at 4M items, and the plan
# that comes with up-to-date statistics took twice as long (20 s against 10 s)
_CONTEXTS = ("c AS MATERIALIZED (SELECT c.id, c.domain_id, d.initiator_role, d.recipient_role, "
             "concat_ws(' ', c.xmin, c.ctid, d.xmin, d.ctid) AS versions "
             "FROM annotation_context c JOIN annotation_domain d ON d.code = c.domain_id)")
_KINDS: tuple[tuple[type, str, str, str, str, str, Callable, tuple[str, ...], dict[str, str]], ...] = (
    (ContextRecord, "", "concat_ws(' ', c.xmin, c.ctid, d.xmin, d.ctid)",
     "c.turns::text, d.initiator_role, d.recipient_role",
     "annotation_context c JOIN annotation_domain d ON d.code = c.domain_id",
     "c.id IN (SELECT context_id FROM annotation_item WHERE id IN ({items}))", _contexts,
     ("context_id", "versions", "turns"), {"turns_csv": "turns"}),
    (ItemRecord, f"WITH {_CONTEXTS} ", "concat_ws(' ', i.xmin, i.ctid, c.versions)",
     "c.domain_id, i.task, i.options::text, i.profile::text, c.initiator_role, c.recipient_role",
     "annotation_item i JOIN c ON c.id = i.context_id", "i.id IN ({items})", _items,
     ("item_id", "versions", "options", "profile", "continuations"),
     {"options_csv": "options", "profile_csv": "profile", "continuations_csv": "continuations"}),
)


def records_lock(cursor) -> None:
    """Hold the records tables until the transaction ends: one maker at a time (a release build, or
    `tasks.release_records_refresh_task` after an import), readers never wait. A build's REPEATABLE
    READ transaction takes it first, before its snapshot (LOCK TABLE takes none): records another
    maker committed meanwhile are then in its snapshot, never made again over a row the build
    cannot see (which PostgreSQL refuses: "could not serialize access due to concurrent update")."""
    cursor.execute(f"LOCK TABLE {_tables()} IN SHARE ROW EXCLUSIVE MODE")


def records_vacuum() -> None:
    """VACUUM (ANALYZE) the records tables, outside a transaction: what autovacuum does later, done
    once the records are made, so the next build's check reads rows already known committed and
    plans with their number (the first check after the making took 15.5 s at 4M items, 10.8 s
    after this; the VACUUM 4.8 s)."""
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {_tables()}")


def _tables() -> str:
    return ", ".join(connection.ops.quote_name(m._meta.db_table) for m in (ContextRecord, ItemRecord))


def _source_files() -> str:
    """SQL: the files of the tables the records are made of (item, context, domain): a rewrite of
    one (ALTER … TYPE, VACUUM FULL, CLUSTER) fires no trigger but gives it another file."""
    return "concat_ws(' ', " + ", ".join(f"pg_relation_filenode('{model._meta.db_table}'::regclass)"
                                        for model in (Item, Context, Domain)) + ")"


def records_current(cursor) -> bool:
    """Every record is up to date, in this transaction's snapshot: the last making of them all
    committed (`RecordsWhole`), on the tables' files of now, and no change was logged since
    (`RecordsChange`)."""
    quote = connection.ops.quote_name
    cursor.execute(f"SELECT EXISTS (SELECT FROM {quote(RecordsWhole._meta.db_table)} WHERE files = {_source_files()}) "
                   f"AND NOT EXISTS (SELECT FROM {quote(RecordsChange._meta.db_table)})")
    return cursor.fetchone()[0]


def records_ensure(*, items_sql: str, params: list) -> int:
    """The records of these items up to date in this transaction, made where they are not
    (`records_refresh`) unless all are known to be (`records_current`); returns how many were made."""
    with connection.cursor() as cursor:
        if records_current(cursor):
            return 0
    return records_refresh(items_sql=items_sql, params=params)


def records_refresh(*, items_sql: str, params: list, chunk_size: int = 2000, whole: bool = False) -> int:
    """Make the records of the items `items_sql` selects (one column: item pks) and of their
    contexts that are missing or stale; returns how many were made. One transaction (a release
    build's own, in the snapshot its files are written from, or one of its own), holding the
    records (`records_lock`): the items are selected once (into a temporary table), the stale ones
    found (into another), their rows read with a server-side cursor (its snapshot is its own: what
    is written meanwhile is not in it), a chunk's old records deleted, and its new ones written
    with COPY, each JSON beside its CSV field: no record is written twice (first into a temporary
    table) nor quoted by PostgreSQL.

    `whole`: `items_sql` selects every item, and the records are then known up to date
    (`records_current`): the changes logged so far are deleted first, before any row is read,
    so one committed while this runs stays logged; `RecordsWhole` is written last."""
    quote = connection.ops.quote_name
    made = 0
    with transaction.atomic():
        connection.ensure_connection()
        with connection.cursor() as cursor:
            records_lock(cursor)
            cursor.execute("SELECT set_config(%s, 'on', true)", [MAKER])  # what this writes keeps them whole
            if whole:
                cursor.execute(f"DELETE FROM {quote(RecordsChange._meta.db_table)}")
            cursor.execute(f"CREATE TEMPORARY TABLE release_records_items (item_id) ON COMMIT DROP AS {items_sql}", params)
            cursor.execute("ANALYZE release_records_items")
            for model, before, versions, reads, source, which, make, made_columns, derived in _KINDS:
                table = quote(model._meta.db_table)
                key = model._meta.pk.column
                columns = [*made_columns, *derived]
                assert set(columns) == {f.column for f in model._meta.concrete_fields}, model
                of_json = [made_columns.index(column) for column in derived.values()]
                alias = source.split()[1]
                # which are stale, from narrow rows only: carried through the joins, the items' JSON made
                # them spill to disk (8 GB of temporary files at 4M items, when nothing was stale)
                cursor.execute(
                    f"""CREATE TEMPORARY TABLE release_records_stale ON COMMIT DROP AS
                        {before}SELECT {alias}.id, r.{key} IS NOT NULL AS old
                        FROM {source}
                        LEFT JOIN {table} r ON r.{key} = {alias}.id
                        WHERE {which.replace('{items}', 'SELECT item_id FROM release_records_items')}
                          AND (r.{key} IS NULL OR r.versions <> {versions})"""
                )
                if cursor.rowcount:
                    cursor.execute("ANALYZE release_records_stale")
                    stale = connection.connection.cursor(name="release_records_stale")
                    stale.execute(f"{before}SELECT {alias}.id, s.old, {versions} AS versions, {reads} "
                                  f"FROM {source} JOIN release_records_stale s ON s.id = {alias}.id")
                    while rows := stale.fetchmany(chunk_size):
                        if old := [row[0] for row in rows if row[1]]:  # made again
                            cursor.execute(f"DELETE FROM {table} WHERE {key} = ANY(%s)", [old])
                        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                            for row in make((row[0], *row[2:]) for row in rows):
                                copy.write_row((*row, *(export.csv_json_field(row[i]) for i in of_json)))
                        made += len(rows)
                    stale.close()
                cursor.execute("DROP TABLE release_records_stale")
            cursor.execute("DROP TABLE release_records_items")
            if whole:
                cursor.execute(f"INSERT INTO {quote(RecordsWhole._meta.db_table)} (id, made_at, files) "
                               f"VALUES (1, now(), {_source_files()}) "
                               "ON CONFLICT (id) DO UPDATE SET made_at = excluded.made_at, files = excluded.files")
            cursor.execute("SELECT set_config(%s, '', true)", [MAKER])  # later writes, in the same transaction, do not
    return made
