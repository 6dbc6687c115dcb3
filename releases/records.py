"""The JSON a release holds of each context and item (`models.ContextRecord`, `models.ItemRecord`),
kept for PostgreSQL to write a release's items files (`copyout.write_items`) with no row passing
through Python.

A record is made by Python, by the functions the portable path writes the files with
(`export.context_turns`, `export.option_continuations`, `export.json_text`), and names the row
versions it was made from: the `xmin` and `ctid` of its rows (the context or item, and its domain,
whose role names it holds), which an update of a row always changes (a new version of the row
is written, by another transaction or at another place). Before a release is written,
`records_refresh` makes again the records of its items and contexts that are missing or older
than their rows: the first release after an import pays for its items once, later releases only
for what changed. PostgreSQL only.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from django.db import connection, transaction

from . import copyout, export
from .models import ContextRecord, ItemRecord


def _contexts(rows):
    for pk, versions, turns, initiator, recipient in rows:
        roles = {"initiator": initiator, "recipient": recipient}
        yield pk, versions, export.json_text(export.context_turns(json.loads(turns), roles))


def _items(rows):
    for pk, versions, domain, task, options, profile, initiator, recipient in rows:
        options = list(json.loads(options))
        if task == "retrospective":
            yield pk, versions, export.json_text(options), None, None
            continue
        roles = {"initiator": initiator, "recipient": recipient}
        yield (pk, versions, export.json_text(options), export.json_text(json.loads(profile) or {}),
               export.json_text(export.option_continuations(options, domain=domain, domain_roles=roles)))


# model, what comes before the statement (a WITH), its rows' versions, what Python reads (pk, versions, …),
# from where, which rows, the maker, the columns it makes, and the columns PostgreSQL derives from them:
# each JSON as a field of items.csv (copyout.csv_field), quoted here once, not in every release. An item's
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


def records_refresh(*, items_sql: str, params: list, chunk_size: int = 2000) -> int:
    """Make the records of the items `items_sql` selects (one column: item pks) and of their
    contexts that are missing or stale; returns how many were made. One transaction (a release
    build's own, in the snapshot its files are written from, or one of its own): the items are
    selected once (into a temporary table), the stale rows read with a server-side cursor, their
    records written with COPY into a temporary table, then upserted."""
    quote = connection.ops.quote_name
    made = 0
    with transaction.atomic():
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TEMPORARY TABLE release_records_items (item_id) ON COMMIT DROP AS {items_sql}", params)
            cursor.execute("ANALYZE release_records_items")
            for model, before, versions, reads, source, which, make, made_columns, derived in _KINDS:
                table = quote(model._meta.db_table)
                key = model._meta.pk.column
                columns = [*made_columns, *derived]
                assert set(columns) == {f.column for f in model._meta.concrete_fields}, model
                alias = source.split()[1]
                cursor.execute(f"CREATE TEMPORARY TABLE release_records_made ON COMMIT DROP AS "
                               f"SELECT {', '.join(made_columns)} FROM {table} WITH NO DATA")
                stale = connection.connection.cursor(name="release_records_stale")
                stale.execute(
                    f"""{before}SELECT {alias}.id, {versions} AS versions, {reads}
                        FROM {source}
                        LEFT JOIN {table} r ON r.{key} = {alias}.id
                        WHERE {which.replace('{items}', 'SELECT item_id FROM release_records_items')}
                          AND (r.{key} IS NULL OR r.versions <> {versions})"""
                )
                n = 0
                while rows := stale.fetchmany(chunk_size):
                    with cursor.copy(f"COPY release_records_made ({', '.join(made_columns)}) FROM STDIN") as copy:
                        for row in make(rows):
                            copy.write_row(row)
                    n += len(rows)
                stale.close()
                if n:
                    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != key)
                    values = [*made_columns, *(copyout.csv_field(json, copyout.JSON) for json in derived.values())]
                    cursor.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} "
                                   f"FROM release_records_made ON CONFLICT ({key}) DO UPDATE SET {updates}")
                cursor.execute("DROP TABLE release_records_made")
                made += n
            cursor.execute("DROP TABLE release_records_items")
    return made
