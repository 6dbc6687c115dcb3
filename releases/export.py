"""Release rows and their three file formats (JSONL, CSV, Parquet).

One function turns a source row into a release record; JSONL, CSV and Parquet are written
from those records in one pass, so the three files always carry the same rows in the same
order (item_id). Nested values (options, context, profile) are JSON in JSONL, and JSON
strings in CSV and Parquet (spec section 4). Everything is deterministic: the same
snapshot gives the same bytes.
"""
import hashlib
import hmac
import io
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.dialtom import continuation_turns, roles_for
from dialtom_site.csvfiles import csv_writer

COLUMNS = (
    "release",
    "item_id",
    "context_id",
    "domain",
    "task",
    "attribute",
    "variant",
    "target_speaker",
    "question",
    "options",
    "answer",
    "context",
    "profile",
    "batch",
    "n_judgments",
    "ds_posterior",
    "mv_label",
    "agreement",
    "state",
    "source_key",
    "retained_by_authors",
    "continuations",
)
NESTED = ("options", "context", "profile", "continuations")
FILTERS = ("task", "domain", "attribute", "variant")
FORMATS = {
    "jsonl": ("items.jsonl", "application/jsonl"),
    "csv": ("items.csv", "text/csv; charset=utf-8"),
    "parquet": ("items.parquet", "application/vnd.apache.parquet"),
}
PARQUET_SCHEMA = pa.schema(
    [
        (name, pa.int64() if name == "n_judgments" else pa.float64() if name in ("ds_posterior", "agreement")
         else pa.bool_() if name == "retained_by_authors" else pa.string())
        for name in COLUMNS
    ]
)


def release_round(value, digits: int) -> float:
    """A float of a release rounded to `digits` decimals: its shortest text (repr) rounded half
    away from zero, as PostgreSQL's `round(x::text::numeric, digits)` does, so that the files
    PostgreSQL writes (releases.copyout) and those Python writes hold the same text."""
    return float(Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # one, not one a value (json.dumps')


def json_text(value) -> str:
    """Compact JSON, unicode as it is: the text of every JSON value in a release's files."""
    return _JSON.encode(value)


def csv_json_field(text: str | None) -> str | None:
    """JSON text (`json_text`) as a field of a CSV line, as the csv module's QUOTE_MINIMAL writes
    it: quoted where it holds a comma or a quote (JSON text holds no raw line end). None stays
    None. What a record keeps (`records`), and `copyout.csv_line` writes as it is (kind CSV)."""
    if text is None or ("," not in text and '"' not in text):
        return text
    return '"' + text.replace('"', '""') + '"'


def context_turns(turns: list, domain_roles: dict[str, str]) -> list[dict]:
    """A context's dialogue as a release holds it: each turn with its domain role."""
    return [{"speaker": t.get("speaker"), "role": domain_roles.get(t.get("speaker"), ""), "text": t.get("text", "")}
            for t in turns]


def option_continuations(options: list[str], *, domain: str, domain_roles: dict[str, str]) -> list[list[dict]]:
    """A prospective item's options, each split into turns with speaker and role."""
    return continuations_of(domain=domain, domain_roles=domain_roles)(options)


def continuations_of(*, domain: str, domain_roles: dict[str, str]) -> Callable[[list[str]], list[list[dict]]]:
    """`option_continuations` of one domain, its roles looked up once: for many items."""
    speakers = roles_for(domain, initiator=domain_roles.get("initiator", ""), recipient=domain_roles.get("recipient", ""))

    def continuations(options: list[str]) -> list[list[dict]]:
        return [
            [{"speaker": t["speaker"], "role": domain_roles.get(t["speaker"], t["role"]), "text": t["text"]}
             for t in continuation_turns(option, speakers)]
            for option in options
        ]

    return continuations


def release_record(row: dict, *, version: str, roles: dict[str, dict[str, str]], agreement: dict[int, float | None]) -> dict:
    """A release record (ordered like COLUMNS) from a `selectors.release_source_rows` row.

    `context` is the dialogue window, each turn with its domain role; `profile` and
    `continuations` (each option split into turns, with speaker and role) are for prospective
    items only. A prospective row keeps its context (what the continuation follows, never
    shown to verifiers), `state` (the authors' name of its attribute) and `source_key`
    (the authors' "session, window"), so it can be traced back to their files.

    releases.copyout writes the same records in SQL, from the JSON of `context`, `options`,
    `profile` and `continuations` kept per context and item (releases.records).
    """
    domain = row["item__context__domain_id"]
    domain_roles = roles.get(domain, {})
    prospective = row["item__task"] != "retrospective"
    ac1 = agreement.get(row["batch_id"])
    values = {
        "release": version,
        "item_id": row["item__item_id"],
        "context_id": row["item__context__context_id"],
        "domain": domain,
        "task": row["item__task"],
        "attribute": row["item__attribute"] or None,
        "variant": row["item__variant"],
        "target_speaker": row["item__target_speaker"] or None,
        "question": row["item__question"],
        "options": list(row["item__options"]),
        "answer": row["label"],
        "context": context_turns(row["item__context__turns"], domain_roles),
        "batch": row["batch__name"],
        "n_judgments": row["n_judgments"],
        "ds_posterior": release_round(row["posterior"], 9),
        "mv_label": row["mv_label"] or None,
        "agreement": None if ac1 is None else release_round(ac1, 9),
        "state": row.get("item__metadata__state"),
        "source_key": row.get("item__metadata__key"),
        "retained_by_authors": bool(row.get("item__retained_by_authors")),
    }
    if prospective:
        values["profile"] = row["item__profile"] or {}
        values["continuations"] = option_continuations(values["options"], domain=domain, domain_roles=domain_roles)
    return {name: values[name] for name in COLUMNS if name in values}


def jsonl_line(record: dict) -> bytes:
    return (json_text(record) + "\n").encode("utf-8")


def flat_values(record: dict) -> list:
    """The record as a flat row in COLUMNS order (nested values as JSON strings, absent = None)."""
    out = []
    for name in COLUMNS:
        value = record.get(name)
        if name in NESTED and value is not None:
            value = json_text(value)
        out.append(value)
    return out


class CsvLines:
    """Encodes flat rows to CSV bytes, one row at a time (header first)."""

    def __init__(self):
        self._buffer = io.StringIO()
        # Faithful data, not neutralised for spreadsheets: see dialtom_site/csvfiles.py.
        self._writer = csv_writer(self._buffer, for_spreadsheets=False)

    def line(self, values: Iterable) -> bytes:
        self._writer.writerow(["" if v is None else v for v in values])
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode("utf-8")

    def header(self) -> bytes:
        return self.line(COLUMNS)


RESULT_COLUMNS = (
    "item_id", "batch", "task", "attribute", "variant", "domain", "label", "posterior", "mv_label", "n_judgments", "retained",
    "adjudication",
)
# crowd-kit's column names (task = the item, worker = the verifier): `DawidSkene().fit(pd.read_csv(...))` reads it as it is.
JUDGMENT_COLUMNS = ("task", "worker", "label", "seconds")


def result_values(row: dict) -> list:
    """A `selectors.release_result_rows` row as a results.csv row (RESULT_COLUMNS order): `label`
    and `retained` as the release holds the item (staff's keep / drop honoured), as in its
    items files and ReleaseItems; `adjudication` the decision in force (keep, drop or empty)."""
    return [
        row["item__item_id"],
        row["batch__name"],
        row["item__task"],
        row["item__attribute"] or "",
        row["item__variant"],
        row["item__context__domain_id"],
        row["released_label"],
        release_round(row["posterior"], 9),
        row["mv_label"],
        row["n_judgments"],
        "true" if row["released"] else "false",
        row["adjudication"] or "",
    ]


def pseudonym(*, secret: str, version: str, verifier_id: int) -> str:
    """A verifier's name in one release: the same for all their judgments in it, unlinkable
    to their account or to their name in another release without the server's secret."""
    digest = hmac.new(secret.encode(), f"release:{version}:verifier:{verifier_id}".encode(), hashlib.sha256).hexdigest()
    return f"w{digest[:12]}"


def write_csv(path: Path, *, header: Iterable[str], rows: Iterable[Iterable]) -> int:
    """Writes a CSV file (header, then rows); returns the number of rows."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv_writer(handle, for_spreadsheets=False)  # release data: see dialtom_site/csvfiles.py
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
            n += 1
    return n


def record_matches(record: dict, filters: dict[str, str]) -> bool:
    return all((record.get(key) or "") == value for key, value in filters.items())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


ROW_GROUP = 10_000  # rows of a Parquet row group


class HashingFile:
    """A file written in binary and hashed (sha256) as it is written, a megabyte at a time (a
    write a line, millions of them, cost more in calls than in bytes)."""

    BUFFER = 1 << 20

    def __init__(self, path: Path):
        self.path, self.sha256, self.bytes, self.rows = path, hashlib.sha256(), 0, 0
        self._handle = open(path, "wb")
        self._buffer = bytearray()

    def write(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= self.BUFFER:
            self._flush()

    def _flush(self) -> None:
        self._handle.write(self._buffer)
        self.sha256.update(self._buffer)
        self.bytes += len(self._buffer)
        self._buffer.clear()

    def close(self) -> None:
        self._flush()
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class ReleaseWriter:
    """Writes items.jsonl, items.csv and items.parquet side by side from one stream of records
    (`add`), or of their lines and flat values made elsewhere (`add_lines`: PostgreSQL's, in
    releases.copyout), hashing the text files as it writes and counting the records per filter
    (the manifest's counts)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.rows = 0
        self.counts = {key: Counter() for key in FILTERS}
        self._jsonl = HashingFile(directory / "items.jsonl")
        self._csv_file = HashingFile(directory / "items.csv")
        self._csv = CsvLines()
        self._csv_file.write(self._csv.header())
        self._parquet = pq.ParquetWriter(directory / "items.parquet", PARQUET_SCHEMA, compression="zstd")
        self._pending: list[list] = []

    def add(self, record: dict) -> None:
        flat = flat_values(record)
        self.add_lines(jsonl_line(record), self._csv.line(flat), flat)

    def add_lines(self, jsonl: bytes, csv: bytes, flat: list) -> None:
        """One record as its JSONL and CSV lines (newline included) and its flat values (`flat_values`)."""
        self._jsonl.write(jsonl)
        self._csv_file.write(csv)
        self._pending.append(flat)
        self.rows += 1
        if len(self._pending) >= ROW_GROUP:
            self._flush()

    @property
    def digests(self) -> dict[str, str]:
        return {"items.jsonl": self._jsonl.sha256.hexdigest(), "items.csv": self._csv_file.sha256.hexdigest()}

    def _flush(self) -> None:
        if not self._pending:
            return
        columns = list(zip(*self._pending))
        table = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, PARQUET_SCHEMA)], schema=PARQUET_SCHEMA)
        self._parquet.write_table(table)
        for key in FILTERS:  # counted by Arrow, a row group at a time, not a row at a time in Python
            for entry in table.column(key).value_counts().to_pylist():
                self.counts[key][entry["values"] or "(none)"] += entry["counts"]
        self._pending = []

    def close(self) -> None:
        self._flush()
        if self.rows == 0:
            # An empty release still has a valid Parquet file with the schema.
            self._parquet.write_table(PARQUET_SCHEMA.empty_table())
        self._parquet.close()
        self._jsonl.close()
        self._csv_file.close()


def stream_filtered(path: Path, *, fmt: str, filters: dict[str, str], chunk_rows: int = 500) -> Iterator[bytes]:
    """Streams the rows of a release's items.jsonl that match `filters`, as JSONL or CSV bytes.

    JSONL lines are passed through unchanged, so a filtered download is byte for byte a
    subset of the full file; CSV rows are encoded exactly as in items.csv.
    """
    encoder = CsvLines() if fmt == "csv" else None
    buffer: list[bytes] = [encoder.header()] if encoder else []
    with open(path, "rb") as handle:
        for line in handle:
            record = json.loads(line)
            if not record_matches(record, filters):
                continue
            buffer.append(encoder.line(flat_values(record)) if encoder else line)
            if len(buffer) >= chunk_rows:
                yield b"".join(buffer)
                buffer = []
    if buffer:
        yield b"".join(buffer)


def parquet_filtered(path: Path, *, filters: dict[str, str]) -> bytes:
    table = pq.read_table(path, filters=[(k, "==", v) for k, v in filters.items()] or None, schema=PARQUET_SCHEMA)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()
