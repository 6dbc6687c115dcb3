"""Release files written by PostgreSQL: `COPY (SELECT <the file's line>) TO STDOUT`.

The portable path (`export.write_csv`, used on SQLite and with `release_build(portable=True)`)
reads every row into Python and encodes it there; at 4M items that is most of a build. Here
the database builds each line of results.csv and judgments.csv as text, byte for byte what
Python's csv writer (`dialtom_site.csvfiles`) makes of the same row, and the lines are
streamed to the file and hashed as they are written. A test builds one release both ways on
awkward text (quotes, commas, newlines, carriage returns, unicode) and compares every file.

How a line gets out unchanged: COPY's text format escapes backslashes and newlines, and its
CSV format quotes a value holding a newline. So the line is one CSV column whose quote is
\\x01 and delimiter \\x02: PostgreSQL wraps a line holding a newline (or \\x02) in \\x01 and
doubles a \\x01 of the data; the \\x01 are removed as the bytes arrive. A text holding \\x01
(seen as a doubled \\x01) stops the COPY with `CopyUnsafe`, and the file is written the
portable way.

Python's csv writer, as the studio uses it (QUOTE_MINIMAL, `\\n` line ends): a field holding
`,` `"` or a newline is quoted, quotes doubled; a row with a carriage return anywhere has every
field quoted (csvfiles.CsvWriter). Numbers: `export.release_round`, then Python's repr of a
float (`1.0`, `0.25`, `1e-05`): PostgreSQL's shortest float text with `.0` added to a whole
number.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from django.db import connection

from . import export, selectors

QUOTE, DELIMITER = b"\x01", b"\x02"
_COPY_OPTIONS = "(FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"


class CopyUnsafe(Exception):
    """The data holds the byte this module uses as COPY's quote: write the file the portable way."""


def float_text(expr: str, digits: int) -> str:
    """SQL: Python's repr of `export.release_round(expr, digits)` (NULL stays NULL)."""
    return (f"regexp_replace(round(({expr})::float8::text::numeric, {digits})::float8::text, "
            f"'^(-?[0-9]+)$', '\\1.0')")


def _minimal(text_sql: str) -> str:
    """SQL: a CSV field as Python's QUOTE_MINIMAL writes it."""
    return (f"CASE WHEN strpos({text_sql}, ',') > 0 OR strpos({text_sql}, '\"') > 0 "
            f"OR strpos({text_sql}, E'\\n') > 0 THEN '\"' || replace({text_sql}, '\"', '\"\"') || '\"' "
            f"ELSE {text_sql} END")


def _all_quoted(text_sql: str) -> str:
    return f"'\"' || replace({text_sql}, '\"', '\"\"') || '\"'"


def csv_line(fields: list[tuple[str, bool]]) -> str:
    """SQL of one CSV line (COPY adds its `\\n`) from (SQL text expression never NULL, may hold text
    that needs quoting). A row with a carriage return in any field has every field quoted."""
    texts = [sql for sql, free in fields if free]
    minimal = " || ',' || ".join(_minimal(sql) if free else sql for sql, free in fields)
    quoted = " || ',' || ".join(_all_quoted(sql) for sql, _ in fields)
    if not texts:
        return minimal
    carriage = " OR ".join(f"strpos({sql}, E'\\r') > 0" for sql in texts)
    return f"CASE WHEN {carriage} THEN {quoted} ELSE {minimal} END"


class HashingFile:
    """A file written in binary and hashed (sha256) as it is written."""

    def __init__(self, path: Path):
        self.path, self.sha256, self.bytes = path, hashlib.sha256(), 0
        self._handle = open(path, "wb")

    def write(self, data: bytes) -> None:
        self._handle.write(data)
        self.sha256.update(data)
        self.bytes += len(data)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def copy_lines(cursor, select_sql: str, params: list, out: HashingFile) -> int:
    """Stream the one-column rows of `select_sql` (each a whole line) into `out`; returns the rows."""
    last = b""
    with cursor.copy(f"COPY ({select_sql}) TO STDOUT {_COPY_OPTIONS}", params) as copy:
        for data in copy:
            data = bytes(data)
            if QUOTE + QUOTE in data or (last == QUOTE and data[:1] == QUOTE):
                raise CopyUnsafe("a text holds \\x01")
            last = data[-1:]
            out.write(data.replace(QUOTE, b""))
    return cursor.rowcount


def _subquery(queryset, names: tuple[str, ...]) -> tuple[str, list]:
    """`queryset.values_list(*names)` as SQL whose columns are named after `names` (dots for __)."""
    sql, params = queryset.order_by().values_list(*names).query.sql_with_params()
    # OFFSET 0: the subquery is not pulled up, so a column the line names several times (an
    # annotation with a subquery: the decision in force) is computed once a row
    return f"({sql} OFFSET 0) AS q ({', '.join(_column(n) for n in names)})", list(params)


def _column(name: str) -> str:
    return connection.ops.quote_name(name.replace("__", "."))


def _text(name: str) -> str:
    return f"coalesce({_column(name)}::text, '')"


def write_results(cursor, *, path: Path, pairs: dict[int, int]) -> HashingFile:
    """results.csv (export.RESULT_COLUMNS), as `export.write_csv(rows=result_values(...))` writes it."""
    names = ("item__item_id", "batch__name", "item__task", "item__attribute", "item__variant",
             "item__context__domain_id", "released_label", "posterior", "mv_label", "n_judgments", "released",
             "adjudication")
    source, params = _subquery(selectors.audited_item_results(pairs=pairs), names)
    line = csv_line([
        (_text("item__item_id"), True), (_text("batch__name"), True), (_text("item__task"), True),
        (_text("item__attribute"), True), (_text("item__variant"), True), (_text("item__context__domain_id"), True),
        (_text("released_label"), True), (float_text(_column("posterior"), 9), False), (_text("mv_label"), True),
        (f"{_column('n_judgments')}::text", False),
        (f"CASE WHEN {_column('released')} THEN 'true' ELSE 'false' END", False),
        (_text("adjudication"), True),
    ])
    out = HashingFile(path)
    with out:
        out.write(export.CsvLines().line(export.RESULT_COLUMNS))
        out.rows = copy_lines(cursor, f"SELECT {line} FROM {source} ORDER BY {_column('item__item_id')}", params, out)
    return out


def write_judgments(cursor, *, path: Path, pairs: dict[int, int], pseudonyms: dict[int, str]) -> HashingFile:
    """judgments.csv (export.JUDGMENT_COLUMNS): the verifiers' pseudonyms (made in Python, one per
    verifier) joined in SQL."""
    queryset = selectors.release_judgments(pairs=pairs)
    names = ("item__item_id", "verifier_id", "label", "seconds_spent")
    source, params = _subquery(queryset, names)
    seconds = _column("seconds_spent")
    line = csv_line([
        (_text("item__item_id"), True), ("p.name", True), (_text("label"), True),
        (f"coalesce({float_text(seconds, 3)}, '')", False),
    ])
    ids = sorted(pseudonyms)
    sql = (f"SELECT {line} FROM {source} JOIN unnest(%s::bigint[], %s::text[]) AS p (id, name) "
           f"ON p.id = {_column('verifier_id')} ORDER BY {_column('item__item_id')}, {_column('verifier_id')}")
    out = HashingFile(path)
    with out:
        out.write(export.CsvLines().line(export.JUDGMENT_COLUMNS))
        out.rows = copy_lines(cursor, sql, [*params, ids, [pseudonyms[i] for i in ids]], out)
    return out
