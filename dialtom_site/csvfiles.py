"""The one way the studio writes CSV (dashboard tables, release files).

Spreadsheets run a cell that starts with `= + - @` (or a tab or carriage return, which
some of them skip first) as a formula: a verifier named `=HYPERLINK(...)` would run in
staff's spreadsheet (issue 12, break 10). `csv_writer(..., for_spreadsheets=True)` prefixes
such text cells with an apostrophe (OWASP's advice); numbers stay numbers, negative ones too.

Release files are written with `for_spreadsheets=False`: a release is data for programs,
published as JSONL, CSV and Parquet that hold the same values byte for byte (and are
checksummed), so a text that starts with `-` must stay exactly that text (RELIABILITY.md,
"Attacks and faults tried", says so for whoever opens one in a spreadsheet).
"""
from __future__ import annotations

import csv
from collections.abc import Iterable
from decimal import Decimal

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value):
    """The value, or a text that no spreadsheet runs as a formula."""
    if isinstance(value, (bool, int, float, Decimal)) or value is None:
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class CsvWriter:
    """csv.writer with `\n` line ends. Python's writer (3.11) quotes a field holding the line
    terminator but not one holding a lone `\r`, which readers take for a line break: a row
    with one is written with every field quoted (the same values, read back)."""

    def __init__(self, stream, *, for_spreadsheets: bool):
        self._writer = csv.writer(stream, lineterminator="\n")
        self._quoted = csv.writer(stream, lineterminator="\n", quoting=csv.QUOTE_ALL)
        self._for_spreadsheets = for_spreadsheets

    def writerow(self, row: Iterable) -> None:
        if self._for_spreadsheets:
            row = [spreadsheet_cell(value) for value in row]
        row = list(row)
        carriage_return = any(isinstance(value, str) and "\r" in value for value in row)
        (self._quoted if carriage_return else self._writer).writerow(row)

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream, *, for_spreadsheets: bool) -> CsvWriter:
    """A csv writer (one row a line, `\\n`); say whether people open the file in a spreadsheet."""
    return CsvWriter(stream, for_spreadsheets=for_spreadsheets)
