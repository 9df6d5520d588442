"""What every reader produces: a `Table` of header + lazily read rows, and the header search shared
by the CSV and XLSX readers (the header may sit below title rows and a merged group header)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bpsync.ingest.cells.dates import EXCEL_1900
from bpsync.ingest.cells.values import Header, dedupe_headers, is_blank, parse_header
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.guard import env_limit

# How many leading rows may hold titles, notes and group headers before the header row.
HEADER_SEARCH_ROWS = 30
# The widest row a file may have. The widest real layout is a day per row of 1-minute intervals
# (1,440 columns and a few more); a 50,000-column header took 61 s and 560 MB in the header search
# and template matching before failing (issue 33 item 7), and 2,048 columns take about a second.
# BPSYNC_MAX_COLUMNS changes it.
MAX_COLUMNS = 2_048
_NUMBERISH = re.compile(r"^[\s$£€(+-]*[\d.,\s']+[)%]?\s*$")
_TOTAL = re.compile(r"^(?:grand\s+|sub-?\s*)?totals?\s*:?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Row:
    """A data row: `number` is the row number the user sees in Excel (1-based, counting title rows
    and the header); `cells` are raw values (text for CSV; numbers, dates or text for XLSX)."""

    number: int
    cells: tuple[object, ...]


@dataclass
class Table:
    """A header and a re-iterable, lazy source of data rows.

    `rows()` opens the file again on every call and yields one row at a time, so a million-row
    file never sits in memory, and a pre-scan (date order) can read it twice."""

    file: str
    kind: str
    headers: list[Header]
    header_row: int
    _rows: Callable[[], Iterator[Row]]
    sheet: str | None = None
    other_sheets: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    date_epoch: dt.date = EXCEL_1900
    encoding: str | None = None
    delimiter: str | None = None
    # Problems the reader found itself (e.g. a Green Button period the intervals do not cover).
    problems: list[Problem] = field(default_factory=list)
    # The reader's own columnar chunks (cells.columnar.Chunk), when it reads faster that way than row by
    # row (CSV through pandas); otherwise the rows are transposed.
    chunks: Callable[[int], Iterator[Any]] | None = None
    # distinct_texts(index, fn, limit): the distinct fn(text) of one column's cells (None left
    # out), read without making cells of the other columns; it stops once there are more than
    # `limit`. None, or a call answering None, where the reader cannot read the file so: read
    # its chunks instead. A table derived from another (other headers) sets it None, as chunks.
    distinct_texts: Callable[[int, Callable[[str], Any], int], set[Any] | None] | None = None

    def rows(self) -> Iterator[Row]:
        return self._rows()

    def where(self, row: int | None = None, column: Header | None = None) -> Where:
        return Where(
            file=self.file,
            sheet=self.sheet,
            row=row,
            column=column.text if column else None,
            column_index=column.index if column else None,
        )

    @property
    def header_keys(self) -> tuple[str, ...]:
        return tuple(h.key for h in self.headers)

    def describe(self) -> str:
        """One line for the user: what was read and how."""
        bits = [self.file]
        if self.sheet:
            bits.append(f"sheet {self.sheet!r}")
        bits.append(f"header on row {self.header_row}")
        if self.encoding:
            bits.append(f"encoding {self.encoding}")
        if self.delimiter:
            bits.append(f"delimiter {self.delimiter!r}")
        text = ", ".join(bits)
        if self.other_sheets:
            text += "; other sheets: " + ", ".join(self.other_sheets)
        return text


def max_columns() -> int:
    return int(env_limit("BPSYNC_MAX_COLUMNS", MAX_COLUMNS))


def check_width(
    rows: Sequence[tuple[int, Sequence[object]]], file: str, sheet: str | None = None
) -> None:
    """Refuse at once a file whose row (among `rows`) is wider than the column limit, before
    the header search and template matching spend time on every one of its cells."""
    limit = max_columns()
    for number, cells in rows:
        if len(cells) > limit:
            raise too_wide(file, number, len(cells), limit, sheet)


def too_wide(file: str, row: int, width: int, limit: int, sheet: str | None = None) -> IngestError:
    return IngestError(
        f"row {row} has {width:,} columns, over the limit of {limit:,} (BPSYNC_MAX_COLUMNS). "
        "Nothing was imported from this file",
        where=Where(file, sheet=sheet, row=row),
        code="file_too_large",
    )


def is_textual(value: object) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return bool(text) and not _NUMBERISH.match(text)


def is_total_row(cells: Sequence[object]) -> bool:
    """A "Total"/"Grand total" row that spreadsheets put under the data."""
    for value in cells[:3]:
        if value is None or value == "":
            continue
        if type(value) is not str:
            return False
        text = value.strip()
        if not text or is_blank(text):
            continue
        return text[0] in "tTgGsS" and bool(_TOTAL.match(text))
    return False


def header_score(cells: Sequence[object], expected: Collection[str] | None) -> int:
    """How many of the cells name an expected column (by header key)."""
    if not expected:
        return 0
    score = 0
    for i, value in enumerate(cells):
        if is_textual(value):
            h = parse_header(value, i)
            if h.key in expected or h.text.casefold() in expected:
                score += 1
    return score


def find_header(
    rows: Sequence[tuple[int, Sequence[object]]], expected: Collection[str] | None = None
) -> int:
    """The position in `rows` of the header row.

    With `expected` header keys (from templates), the row naming most of them wins (at least 2).
    Otherwise the first row whose cells are mostly text and that spans at least half the width of
    the rows below it: a title row has one cell, a merged group header a few spread-out ones."""
    if expected:
        best, best_score = -1, 1
        for pos, (_, cells) in enumerate(rows):
            score = header_score(cells, expected)
            if score > best_score:
                best, best_score = pos, score
        if best >= 0:
            return best
    filled = [sum(1 for c in cells if not is_blank(c)) for _, cells in rows]
    for pos, (_, cells) in enumerate(rows):
        texts = sum(1 for c in cells if is_textual(c))
        if texts < 2 or texts < 0.6 * filled[pos]:
            continue
        below = [n for n in filled[pos + 1 : pos + 11] if n]
        width = max(below) if below else filled[pos]
        if filled[pos] >= max(2, width / 2):
            return pos
    raise IngestError(
        "no header row found in the first rows (a row naming the columns, such as "
        "'Meter', 'Start Date', 'Usage')",
        code="no_header",
    )


def make_headers(cells: Sequence[object]) -> list[Header]:
    headers = [parse_header(value, i) for i, value in enumerate(cells)]
    while headers and not headers[-1].key:  # trailing empty header cells
        headers.pop()
    return dedupe_headers(headers)
