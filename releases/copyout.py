"""Release files written by PostgreSQL: the database makes every line, Python only writes them.

The portable path (`export.ReleaseWriter`, `export.write_csv`, used on SQLite and with
`release_build(portable=True)`) reads every row into Python and encodes it there; at 4M items
that is most of a build. Here the database builds each line of the items files, results.csv and
judgments.csv as text, byte for byte what Python's json and csv writers (`dialtom_site.csvfiles`)
make of the same row. results.csv and judgments.csv come as rows of one column, a few thousand
at a time, in binary (`stream_lines`: no row parsed in Python); the items files in a binary
`COPY … TO STDOUT`, which hands their lines over as they are beside the typed values the Parquet
file needs. They are streamed to the file and hashed as they are written. A test builds
one release both ways on awkward text (quotes, commas, newlines, carriage returns, control
characters, unicode) and compares every file.

Python's csv writer, as the studio uses it (QUOTE_MINIMAL, `\\n` line ends): a field holding
`,` `"` or a newline is quoted, quotes doubled; a row with a carriage return anywhere has every
field quoted (csvfiles.CsvWriter). Numbers: `export.release_round`, then Python's repr of a
float (`1.0`, `0.25`, `1e-05`): PostgreSQL's shortest float text with `.0` added to a whole
number.
"""
from __future__ import annotations

from pathlib import Path

import psycopg

from django.db import connection
from django.db.models import Func, TextField
from psycopg.rows import scalar_row
from psycopg.types.string import ByteaBinaryLoader

from dialtom_site.db.collation import code_points_sql

from . import export, selectors

class RoundedText(Func):
    """SQL: PostgreSQL's shortest text of `export.release_round(expr, digits)` (NULL stays NULL),
    `1` where Python writes `1.0`: made once a row in a query's select list, then turned into
    Python's text by `python_float` (cheap) wherever a line uses it."""

    template = "round((%(expressions)s)::float8::text::numeric, %(digits)s)::float8::text"
    output_field = TextField()

    def __init__(self, expression, *, digits: int):
        super().__init__(expression, digits=int(digits))


def python_float(text_sql: str) -> str:
    """SQL: Python's repr of a float from PostgreSQL's shortest text of it (`RoundedText`): a
    whole number gets its `.0`. No regular expression: at 4M items one a value cost ~70 s of a
    build's CPU."""
    return f"CASE WHEN translate({text_sql}, '-0123456789', '') = '' THEN {text_sql} || '.0' ELSE {text_sql} END"


# what a field of `csv_line` may hold: nothing to quote (a number, a flag), any text, or JSON text
# made a CSV field already (`export.csv_json_field`, kept in the items' records): quoted where it needs to be
PLAIN, TEXT, CSV = "plain", "text", "csv"


def csv_field(text_sql: str, kind) -> str:
    """SQL: a CSV field as Python's QUOTE_MINIMAL writes it."""
    if kind in (PLAIN, CSV):
        return text_sql
    assert kind == TEXT, kind
    needs = [f"strpos({text_sql}, ',') > 0", f"strpos({text_sql}, '\"') > 0", f"strpos({text_sql}, E'\\n') > 0"]
    return f"CASE WHEN {' OR '.join(needs)} THEN {_all_quoted(text_sql, TEXT)} ELSE {text_sql} END"


def _all_quoted(text_sql: str, kind) -> str:
    """SQL: a field quoted whatever it holds (a row with a carriage return). A CSV field that is
    not quoted holds no quote."""
    if kind == CSV:
        return f"CASE WHEN left({text_sql}, 1) = '\"' THEN {text_sql} ELSE '\"' || {text_sql} || '\"' END"
    return f"'\"' || replace({text_sql}, '\"', '\"\"') || '\"'"


def csv_line(fields: list[tuple[str, str]]) -> str:
    """SQL of one CSV line (without its `\\n`) from (SQL text expression never NULL, what it may
    hold: PLAIN, TEXT or CSV). A row with a carriage return in any field has every field quoted:
    only TEXT fields are searched for one; the CSV fields of JSON text (the long fields: a context's
    dialogue, an item's options, kept quoted in the records) never hold one."""
    texts = [sql for sql, kind in fields if kind == TEXT]
    # concat(): one string made, not one a `||` (a long line copied over and over)
    minimal = "concat(" + ", ',', ".join(csv_field(sql, kind) for sql, kind in fields) + ")"
    quoted = "concat(" + ", ',', ".join(_all_quoted(sql, kind) for sql, kind in fields) + ")"
    if not texts:
        return minimal
    carriage = " OR ".join(f"strpos({sql}, E'\\r') > 0" for sql in texts)
    return f"CASE WHEN {carriage} THEN {quoted} ELSE {minimal} END"


HashingFile = export.HashingFile

LINES_AT_ONCE = 4096  # rows a result chunk holds (libpq's chunked rows mode), and lines written at once


def _utf8_connection(cursor) -> psycopg.Connection:
    """`cursor`'s psycopg connection, which must be UTF-8 (Django's are: client_encoding=UTF8): the
    files take the text PostgreSQL sends in binary as their bytes, never decoded in Python."""
    raw = cursor.connection
    if raw.info.encoding != "utf-8":
        raise RuntimeError(f"a release's files need a UTF-8 connection, not {raw.info.encoding}")
    return raw


def _lines_cursor(cursor) -> psycopg.Cursor:
    """A cursor on `cursor`'s connection (same transaction, same snapshot) whose rows are their
    one column's value, results in binary and text as bytes (`_utf8_connection`), nothing decoded
    or parsed in Python."""
    lines = psycopg.Cursor(_utf8_connection(cursor), row_factory=scalar_row)
    lines.adapters.register_loader("text", ByteaBinaryLoader)
    return lines


def stream_lines(cursor, select_sql: str, params: list, out: HashingFile) -> int:
    """Stream the one-column rows of `select_sql` (each a whole line, without its newline, never
    NULL) into `out`; returns the rows.

    The rows arrive a few thousand at a time (`LINES_AT_ONCE`, libpq's chunked rows mode; one at
    a time before libpq 17), in binary: a line is its bytes, joined with the next ones and written
    at once. A `COPY … TO STDOUT` hands over one message a row, and the Python around each took
    most of a judgments.csv (3.0 of 3.4 s of the process's CPU at 400k items), on the thread the
    items files need."""
    size = LINES_AT_ONCE if psycopg.pq.version() >= 170000 else 1
    rows, pending = 0, []
    with _lines_cursor(cursor) as lines:
        for line in lines.stream(select_sql, params, binary=True, size=size):
            pending.append(line)
            if len(pending) >= LINES_AT_ONCE:
                rows += _write_lines(pending, out)
    return rows + _write_lines(pending, out)


def _write_lines(pending: list[bytes], out: HashingFile) -> int:
    """Write the pending lines, each with its newline, in one go; empties `pending`, returns how many."""
    n = len(pending)
    if n:
        pending.append(b"")
        out.write(b"\n".join(pending))
        pending.clear()
    return n


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
             "item__context__domain_id", "released_label", "mv_label", "n_judgments", "released",
             "adjudication", "posterior_text")
    queryset = selectors.audited_item_results(pairs=pairs).annotate(posterior_text=RoundedText("posterior", digits=9))
    source, params = _subquery(queryset, names)
    line = csv_line([
        (_text("item__item_id"), TEXT), (_text("batch__name"), TEXT), (_text("item__task"), TEXT),
        (_text("item__attribute"), TEXT), (_text("item__variant"), TEXT), (_text("item__context__domain_id"), TEXT),
        (_text("released_label"), TEXT), (python_float(_column("posterior_text")), PLAIN), (_text("mv_label"), TEXT),
        (f"{_column('n_judgments')}::text", PLAIN),
        (f"CASE WHEN {_column('released')} THEN 'true' ELSE 'false' END", PLAIN),
        (_text("adjudication"), TEXT),
    ])
    out = HashingFile(path)
    with out:
        out.write(export.CsvLines().line(export.RESULT_COLUMNS))
        out.rows = stream_lines(cursor, f"SELECT {line} FROM {source} ORDER BY {code_points_sql(_column('item__item_id'))}",
                                 params, out)
    return out


def write_judgments(cursor, *, path: Path, pairs: dict[int, int], pseudonyms: dict[int, str]) -> HashingFile:
    """judgments.csv (export.JUDGMENT_COLUMNS): the verifiers' pseudonyms (made in Python, one per
    verifier) joined in SQL."""
    queryset = selectors.release_judgments(pairs=pairs).annotate(seconds_text=RoundedText("seconds_spent", digits=3))
    names = ("item__item_id", "verifier_id", "label", "seconds_text")
    source, params = _subquery(queryset, names)
    seconds = _column("seconds_text")
    line = csv_line([
        (_text("item__item_id"), TEXT), ("p.name", TEXT), (_text("label"), TEXT),
        (f"coalesce({python_float(seconds)}, '')", PLAIN),
    ])
    ids = sorted(pseudonyms)
    sql = (f"SELECT {line} FROM {source} JOIN unnest(%s::bigint[], %s::text[]) AS p (id, name) "
           f"ON p.id = {_column('verifier_id')} ORDER BY {code_points_sql(_column('item__item_id'))}, {_column('verifier_id')}")
    out = HashingFile(path)
    with out:
        out.write(export.CsvLines().line(export.JUDGMENT_COLUMNS))
        out.rows = stream_lines(cursor, sql, [*params, ids, [pseudonyms[i] for i in ids]], out)
    return out


# --- the items files: items.jsonl, items.csv and items.parquet --------------------------------

_RELEASED = ("item_id", "item__context_id", "item__item_id", "item__context__context_id", "item__context__domain_id",
             "item__task", "item__attribute", "item__variant", "item__target_speaker", "item__question",
             "item__metadata__state", "item__metadata__key", "item__retained_by_authors",
             "released_label", "batch_id", "batch__name", "n_judgments", "posterior_text", "mv_label")


def _released_rows(*, pairs: dict[int, int], agreement: dict[int, float | None], version: str) -> tuple[str, list]:
    """SQL of the released items in item_id order, with their records' JSON (`records`), their
    batch's AC1 (`ac1`, rounded as the release rounds it, and `ac1_text`, its text: both made by
    Python, a batch each) and the release's version, as `s`.

    The rows are sorted while narrow, then each takes its records by a lookup (a nested loop keeps
    the order: the ORDER BY of the statements reading `s` sorts nothing): sorting whole lines of
    2–3 KB spilled to disk. A record's long text is read once a row (`|| ''`), so the line's many
    uses of it do not each unpack it."""
    queryset = selectors.released_item_results(pairs=pairs).annotate(posterior_text=RoundedText("posterior", digits=9))
    source, params = _subquery(queryset, _RELEASED)
    batches = sorted(b for b, ac1 in agreement.items() if ac1 is not None)
    rounded = [export.release_round(agreement[b], 9) for b in batches]
    sql = (f"(SELECT o.*, ir.options, cr.context, ir.profile, ir.continuations, ir.options_csv, cr.context_csv, "
           f"ir.profile_csv, ir.continuations_csv, %s::text AS version "
           f"FROM (SELECT q.*, a.ac1, a.ac1_text FROM {source} "
           f"LEFT JOIN unnest(%s::bigint[], %s::float8[], %s::text[]) AS a (batch, ac1, ac1_text) "
           f"ON a.batch = q.{_column('batch_id')} "
           f"ORDER BY {code_points_sql('q.' + _column('item__item_id'))} OFFSET 0) AS o "
           f"CROSS JOIN LATERAL (SELECT r.options || '' AS options, r.profile || '' AS profile, "
           f"r.continuations || '' AS continuations, r.options_csv || '' AS options_csv, r.profile_csv || '' AS profile_csv, "
           f"r.continuations_csv || '' AS continuations_csv "
           f"FROM releases_itemrecord r WHERE r.item_id = o.{_column('item_id')} OFFSET 0) ir "
           f"CROSS JOIN LATERAL (SELECT r.turns || '' AS context, r.turns_csv || '' AS context_csv FROM releases_contextrecord r "
           f"WHERE r.context_id = o.{_column('item__context_id')} OFFSET 0) cr) AS s")
    return sql, [version, *params, batches, rounded, [repr(value) for value in rounded]]


def _json(sql: str) -> str:
    """SQL: a text as a JSON string, escaped as Python's json.dumps(ensure_ascii=False) escapes it; null for NULL."""
    return f"coalesce(to_json(({sql})::text)::text, 'null')"


def _fields() -> dict[str, dict]:
    """`export.COLUMNS` → SQL of the release record's value, in the three shapes of the files:
    JSON text (`json`), the CSV field's text (`csv`, never NULL) and a typed value (`typed`, NULL
    for None), from the columns of `_released_rows`."""
    s = {name: f"s.{_column(name)}" for name in _RELEASED}
    nested = {name: f"s.{name}" for name in ("options", "context", "profile", "continuations")}
    nested_csv = {name: f"s.{name}_csv" for name in nested}  # the records' CSV fields of the same JSON
    texts = {  # text columns, None where the record holds None
        "release": "s.version", "item_id": s["item__item_id"], "context_id": s["item__context__context_id"],
        "domain": s["item__context__domain_id"], "task": s["item__task"],
        "attribute": f"nullif({s['item__attribute']}, '')", "variant": s["item__variant"],
        "target_speaker": f"nullif({s['item__target_speaker']}, '')", "question": s["item__question"],
        "answer": s["released_label"], "batch": s["batch__name"], "mv_label": f"nullif({s['mv_label']}, '')",
    }
    state = {"state": s["item__metadata__state"], "source_key": s["item__metadata__key"]}  # JSON values (jsonb)
    numbers = {"n_judgments": (f"{s['n_judgments']}::text", f"{s['n_judgments']}::int8"),
               "ds_posterior": (python_float(s["posterior_text"]), f"{s['posterior_text']}::float8"),
               "agreement": ("s.ac1_text", "s.ac1")}
    authors = f"CASE WHEN {s['item__retained_by_authors']} THEN %s ELSE %s END"
    out = {}
    for name in export.COLUMNS:
        if name in texts:
            out[name] = {"json": _json(texts[name]), "csv": (f"coalesce({texts[name]}, '')", TEXT), "typed": texts[name]}
        elif name in nested:
            out[name] = {"json": nested[name], "csv": (f"coalesce({nested_csv[name]}, '')", CSV), "typed": nested[name]}
        elif name in state:
            out[name] = {"json": f"coalesce(({state[name]})::text, 'null')",
                         "csv": (f"coalesce({state[name]} #>> '{{}}', '')", TEXT), "typed": f"{state[name]} #>> '{{}}'"}
        elif name in numbers:
            text, typed = numbers[name]
            out[name] = {"json": f"coalesce({text}, 'null')", "csv": (f"coalesce({text}, '')", PLAIN), "typed": typed}
        else:
            assert name == "retained_by_authors", name
            out[name] = {"json": authors % ("'true'", "'false'"), "csv": (authors % ("'True'", "'False'"), PLAIN),
                         "typed": s["item__retained_by_authors"]}
    return out


def write_items(cursor, *, directory: Path, pairs: dict[int, int], agreement: dict[int, float | None],
                version: str) -> dict:
    """items.jsonl, items.csv and items.parquet, byte for byte as `export.ReleaseWriter` writes the
    `export.release_record`s of the portable path: one statement makes each record's JSONL and CSV
    lines and its flat values, the JSON of contexts and items from their records; a binary COPY
    (no text escaped, whatever it holds) hands them to the same ReleaseWriter, which writes the
    lines as they are and the values in Parquet row groups. Returns {rows, counts, digests}."""
    source, params = _released_rows(pairs=pairs, agreement=agreement, version=version)
    fields = _fields()
    parts = []  # a record's keys: profile and continuations only where the item has them
    for n, name in enumerate(export.COLUMNS):
        key = ("{" if n == 0 else ",") + export.json_text(name) + ":"
        if name in ("profile", "continuations"):
            parts.append(f"{_literal(key)} || s.{name}")  # NULL (left out by concat) for a retrospective item
        else:
            parts += [_literal(key), fields[name]["json"]]
    jsonl = f"concat({', '.join(parts)}, '}}', E'\\n')"  # one string made, not one a `||`
    csv = f"concat({csv_line([fields[name]['csv'] for name in export.COLUMNS])}, E'\\n')"
    typed = [fields[name]["typed"] for name in export.COLUMNS]
    types = [PARQUET_TYPES[str(field.type)] for field in export.PARQUET_SCHEMA]
    # the lines as text read as bytea: in a binary COPY a text value is its bytes in the client's
    # encoding, UTF-8 on Django's connections (client_encoding=UTF8), so nothing is decoded in
    # Python and the server makes no copy of the longest values of the row (convert_to did)
    sql = (f"COPY (SELECT {jsonl}, {csv}, {', '.join(typed)} "
           f"FROM {source} ORDER BY {code_points_sql('s.' + _column('item__item_id'))}) TO STDOUT (FORMAT binary)")
    _utf8_connection(cursor)
    writer = export.ReleaseWriter(directory)
    try:
        with cursor.copy(sql, params) as copy:
            copy.set_types(["bytea", "bytea", *types])
            for jsonl_line, csv_line_bytes, *flat in copy.rows():
                writer.add_lines(jsonl_line, csv_line_bytes, flat)
    finally:
        writer.close()
    return {"rows": writer.rows, "counts": writer.counts, "digests": writer.digests}


# how the binary COPY's values of each Parquet column are read: text as its UTF-8 bytes (read as bytea:
# Arrow takes them for a string column as they are, no Python string made), numbers and flags typed
PARQUET_TYPES = {"string": "bytea", "int64": "int8", "double": "float8", "bool": "bool"}


def _literal(text: str) -> str:
    """SQL: a string literal (the JSON keys of a record: no quote, no backslash)."""
    assert "'" not in text and "\\" not in text and "%" not in text, text
    return f"'{text}'"
