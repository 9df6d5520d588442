"""Limits checked before a workbook is parsed, so a hostile or broken file fails fast instead of
filling memory (issue 14 item 7; docs/security.md).

An .xlsx is a zip: a 1.2 MB file can carry shared strings that expand to 510 MB, which openpyxl
loads whole. Before any parser sees the file, `check_workbook` reads the zip's directory: each
member's declared size and compression ratio, and their total. The declared sizes are a true bound:
Python's zipfile (which openpyxl reads through) never returns more than a member's declared size,
and a member holding more fails its CRC check as damaged. Sheets are then streamed with a cap on
rows and cells (`RowCap`).

The ratio alone does not bound memory: a 1.9 MB workbook whose shared strings inflate 160 times
to 304 MB passed it and took 3 GB in calamine (issue 33 item 7). So the shared strings part has
a size limit of its own, and before calamine parses a sheet its extent (last row x last column,
from the cell references in the sheet's XML) is checked against the cell limit: calamine holds a
sheet as a dense grid, and two cells at A1 and XFD1048576 in a 2 KB file would ask it for 550 GB.

The limits can be changed through the environment (for the watcher under a service manager as for
the CLI): BPSYNC_XLSX_MAX_BYTES, BPSYNC_XLSX_MAX_RATIO, BPSYNC_XLSX_MAX_SHARED_STRINGS_BYTES,
BPSYNC_SHEET_MAX_ROWS, BPSYNC_SHEET_MAX_CELLS.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bpsync.ingest.problems import IngestError, Where

# Members smaller than this may compress by any ratio (an empty sheet's XML compresses 100:1).
_RATIO_FLOOR_BYTES = 8 << 20


@dataclass(frozen=True)
class WorkbookLimits:
    """What a workbook may expand to. The defaults admit a full 1,048,576-row sheet of bills
    (a few hundred MB of XML) and refuse the ratios only crafted files reach."""

    max_uncompressed_bytes: int = 1 << 30  # all members together, inflated
    max_ratio: float = 200.0  # inflated / compressed, for members above 8 MB
    # The shared strings part, inflated. calamine keeps every string as its own object, about 5
    # bytes of memory per byte of XML for short strings: 64 MB of it costs about 350 MB. Real
    # exports hold well under 1 MB (the 25 real files: at most 0.19 MB); a full-height sheet
    # with a distinct 20-character note on every row is about 36 MB.
    max_shared_strings_bytes: int = 64 << 20
    max_rows: int = 1_048_576  # Excel's own sheet limit
    # Cells of a sheet, counted as calamine holds them (a dense grid: last row x last column,
    # about 32 bytes each before any value): 12 million is a full-height sheet of 11 columns and
    # about 400 MB; was 50 million (1.6 GB) before issue 33 item 7.
    max_cells: int = 12_000_000

    @classmethod
    def from_env(cls) -> WorkbookLimits:
        d = cls()
        return cls(
            max_uncompressed_bytes=int(
                env_limit("BPSYNC_XLSX_MAX_BYTES", d.max_uncompressed_bytes)
            ),
            max_ratio=env_limit("BPSYNC_XLSX_MAX_RATIO", d.max_ratio),
            max_shared_strings_bytes=int(
                env_limit("BPSYNC_XLSX_MAX_SHARED_STRINGS_BYTES", d.max_shared_strings_bytes)
            ),
            max_rows=int(env_limit("BPSYNC_SHEET_MAX_ROWS", d.max_rows)),
            max_cells=int(env_limit("BPSYNC_SHEET_MAX_CELLS", d.max_cells)),
        )


def env_limit(name: str, default: float) -> float:
    """A limit from the environment (`1_000_000` and `1000000` alike), else `default`."""
    raw = os.environ.get(name, "").replace("_", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise IngestError(f"{name}={raw!r} is not a number", code="bad_limit") from None
    if value <= 0:
        raise IngestError(f"{name} must be above 0", code="bad_limit")
    return value


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _refuse(name: str, reason: str) -> IngestError:
    return IngestError(
        f"refused before reading: {reason}. Nothing was imported from this file; if it is a "
        "genuine workbook, raise the limit (docs/security.md)",
        where=Where(name),
        code="file_too_large",
    )


def check_workbook(path: Path, name: str, limits: WorkbookLimits | None = None) -> None:
    """Refuse a zip-based workbook whose members would inflate beyond the limits."""
    limits = limits or WorkbookLimits.from_env()
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            declared = sum(m.file_size for m in members)
            if declared > limits.max_uncompressed_bytes:
                raise _refuse(
                    name,
                    f"it would expand to {_mb(declared)}, over the limit of "
                    f"{_mb(limits.max_uncompressed_bytes)} (BPSYNC_XLSX_MAX_BYTES)",
                )
            for m in members:
                _check_ratio(name, m.filename, m.file_size, m.compress_size, limits)
                if _is_shared_strings(m.filename) and m.file_size > limits.max_shared_strings_bytes:
                    raise _refuse(
                        name,
                        f"its shared strings part {m.filename!r} would expand to "
                        f"{_mb(m.file_size)}, over the limit of "
                        f"{_mb(limits.max_shared_strings_bytes)} "
                        "(BPSYNC_XLSX_MAX_SHARED_STRINGS_BYTES)",
                    )
    except IngestError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError):
        return  # not a readable zip: the reader says so in its own words


def _check_ratio(name: str, member: str, size: int, packed: int, limits: WorkbookLimits) -> None:
    if size > _RATIO_FLOOR_BYTES and size > limits.max_ratio * max(packed, 1):
        raise _refuse(
            name,
            f"its part {member!r} expands {size / max(packed, 1):,.0f} times "
            f"({_mb(packed)} to {_mb(size)}), over the limit of {limits.max_ratio:g} "
            "(BPSYNC_XLSX_MAX_RATIO); workbooks of bills expand far less",
        )


def _is_shared_strings(member: str) -> bool:
    # xl/sharedStrings.xml, whatever the case or folder an exporter gives it (the content types
    # name it; the file name is the convention every writer follows).
    return member.rsplit("/", 1)[-1].casefold() == "sharedstrings.xml"


# Quick searches bound a sheet's extent without reading every cell reference: whether any
# reference has 6 or 7 digits (row 100,000 or 1,000,000 and beyond), 2 or 3 letters, or 2 letters
# from DA on. Most bills have fewer than 100,000 rows and 104 columns: at most 10.4 million cells.
# They look for ' r="' (a literal, several times faster than any whitespace); a reference after
# a tab or line break (XML allows it, no writer does it) sends the sheet to the exact read.
_DIGITS6 = re.compile(rb' r="[A-Z]*\d{6}')
_DIGITS7 = re.compile(rb' r="[A-Z]*\d{7}')
_LETTERS2 = re.compile(rb' r="[A-Z]{2}')
_LETTERS3 = re.compile(rb' r="[A-Z]{3}')
_FROM_DA = re.compile(rb' r="[D-Z][A-Z]')
_ODD_SPACE = (b'\tr="', b'\nr="', b'\rr="')
# A row or cell without its reference (`<row>`, `<c t="n">`: allowed, and placed after the one
# before it) says nothing about the extent by itself: 100 such cells in a row and one cell at row
# 900,000 made calamine a grid of 90 million cells (2.8 GB from 2 KB). Such a sheet is walked.
_NO_REF = re.compile(rb'<(?:[A-Za-z_][\w.-]*:)?(?:c|row)(?=[\s>/])(?![^>]*\sr=")')
_TAG_ODD_SPACE = re.compile(rb"<(?:c|row)[\t\n\r]")
_TOKEN = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(row|c)(?=[\s>/])([^>]*)>")
_REF_ATTR = re.compile(rb'\sr="([A-Z]*)(\d*)"')
_MAX_CARRY = 1 << 20  # an unfinished tag longer than this is not a row or a cell of ours
_ROW6 = re.compile(rb' r="[A-Z]*(\d{6})"')
_SCAN_BYTES = 4 << 20


def check_sheet_extent(
    archive: zipfile.ZipFile,
    member: str,
    name: str,
    sheet: str,
    limits: WorkbookLimits | None = None,
) -> bool:
    """Refuse a sheet whose extent (last row x last column, from the cell and row references in
    its XML) is over the cell limit, before calamine makes a dense grid of it. One read bounds
    the extent with quick searches (rows by their digits, the last of 100,000 to 999,999 exactly;
    columns by their letters); only a sheet over the limit by that bound is read again for every
    reference (about 0.04 s a MB) to know its exact extent. Returns whether the sheet may hold
    error cells (`t="e"` seen, or not every piece looked at): most hold none, and then nothing
    need read its XML again to find them."""
    limits = limits or WorkbookLimits.from_env()
    seen = {"d6": False, "d7": False, "l2": False, "l3": False, "da": False, "odd": False}
    seen["errors"] = False
    last6 = 0  # the last row among references of 6 digits

    def quick(data: bytes) -> bool:
        nonlocal last6
        seen["errors"] = seen["errors"] or b't="e"' in data
        seen["odd"] = (
            seen["odd"]
            or (_spaced(data) and any(odd in data for odd in _ODD_SPACE))
            or _references_missing(data)
        )
        if _DIGITS6.search(data):  # rows 100,000 and beyond: few pieces of most sheets
            seen["d6"] = True
            last6 = max(last6, max(map(int, _ROW6.findall(data)), default=0))
            seen["d7"] = seen["d7"] or bool(_DIGITS7.search(data))
        for key, pattern, needs in (
            ("l2", _LETTERS2, None),
            ("l3", _LETTERS3, "l2"),
            ("da", _FROM_DA, "l2"),
        ):
            if not seen[key] and (needs is None or seen[needs]) and pattern.search(data):
                seen[key] = True
        return seen["odd"] or (seen["d7"] and seen["l3"])  # the exact read is needed

    stopped = _scan(archive, member, quick)
    columns = 16_384 if seen["l3"] else 702 if seen["da"] else 104 if seen["l2"] else 26
    rows = 99_999 if not seen["d6"] else last6 if not seen["d7"] else 0
    if seen["odd"] or not rows or rows * columns > limits.max_cells:
        last_row, last_col = walk_extent(archive, member)
        refuse_extent(name, sheet, last_row, last_col, limits)
    return stopped or seen["errors"]


def refuse_extent(
    name: str,
    sheet: str,
    rows: int,
    columns: int,
    limits: WorkbookLimits | None = None,
    *,
    spans: bool = False,
) -> None:
    """Raise when a sheet reaching row `rows` and column `columns` (`spans`: whose values span
    that many rows and columns) is over the cell limit."""
    limits = limits or WorkbookLimits.from_env()
    cells = rows * max(columns, 1)
    if cells > limits.max_cells:
        reach = (
            f"holds values across {rows:,} rows and {columns:,} columns"
            if spans
            else f"reaches row {rows:,} and column {columns:,}"
        )
        raise IngestError(
            f"refused before reading: sheet {sheet!r} {reach}, a grid of {cells:,} cells, "
            f"more than {limits.max_cells:,} cells "
            "(BPSYNC_SHEET_MAX_CELLS). Nothing was imported from this file",
            where=Where(name, sheet=sheet),
            code="file_too_large",
        )


def walk_extent(archive: zipfile.ZipFile, member: str) -> tuple[int, int]:
    """The last row and column of a sheet's XML, tag by tag: a row or cell with its reference
    is where it says, one without is after the one before it (as calamine places it)."""
    row = col = last_row = last_col = 0
    carry = b""
    try:
        with archive.open(member) as fh:
            while piece := fh.read(_SCAN_BYTES):
                data, carry = carry + piece, b""
                cut = data.rfind(b"<")
                if cut != -1 and data.find(b">", cut) == -1:  # a tag cut between two pieces
                    data, carry = data[:cut], data[cut:]
                    if len(carry) > _MAX_CARRY:
                        carry = b""
                for kind, attrs in _TOKEN.findall(data):
                    ref = _REF_ATTR.search(attrs)
                    letters, digits = ref.groups() if ref else (b"", b"")
                    if kind == b"row":
                        row, col = (int(digits) if digits else row + 1), 0
                        last_row = max(last_row, row)
                    else:
                        col = _column_number(letters) if letters else col + 1
                        last_col = max(last_col, col)
                        last_row = max(last_row, int(digits) if digits else row)
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, zlib.error):
        pass  # damaged: the parser says so in its own words
    return last_row, last_col


_ODS_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_ODS_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_ODS_CELLS = (f"{_ODS_TABLE}table-cell", f"{_ODS_TABLE}covered-table-cell")


def check_ods_extent(path: Path, name: str, limits: WorkbookLimits | None = None) -> None:
    """Refuse an OpenDocument workbook with a sheet whose extent is over the cell limit, before
    calamine (which parses every sheet of an .ods when it opens it) makes dense grids of them.
    Rows and cells carry repeat counts (`number-rows-repeated`), so a 1.6 KB file can ask for
    20 million cells (1.3 GB): the extent is counted from them, as calamine counts it (cells with
    a value type; trailing empty repeats, which every .ods has, are not)."""
    limits = limits or WorkbookLimits.from_env()
    try:
        with zipfile.ZipFile(path) as archive, archive.open("content.xml") as fh:
            extents = ods_extents(fh)
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, zlib.error, SyntaxError):
        return  # damaged or not an .ods: calamine says so in its own words
    for sheet, (rows, columns) in extents.items():
        refuse_extent(name, sheet, rows, columns, limits, spans=True)


def ods_extents(source: IO[bytes]) -> dict[str, tuple[int, int]]:
    """Each sheet of content.xml: (last row, last column) holding a value. Streamed: each row is
    dropped from the tree once counted."""
    from xml.etree.ElementTree import iterparse

    extents: dict[str, tuple[int, int]] = {}
    sheet = ""
    depth = 0  # tables open: 1 is a sheet, more are tables inside its cells (not its cells)
    row = col = last_row = last_col = row_last_col = 0
    row_repeat = 1
    stack: list[Any] = []
    for event, el in iterparse(source, events=("start", "end")):
        if event == "start":
            stack.append(el)
            if el.tag == f"{_ODS_TABLE}table":
                depth += 1
                if depth == 1:
                    sheet = el.get(f"{_ODS_TABLE}name", "")
                    row = last_row = last_col = 0
            elif depth == 1 and el.tag == f"{_ODS_TABLE}table-row":
                row_repeat = int(el.get(f"{_ODS_TABLE}number-rows-repeated", "1") or 1)
                col = row_last_col = 0
            elif depth == 1 and el.tag in _ODS_CELLS and _in_row(stack):
                col += int(el.get(f"{_ODS_TABLE}number-columns-repeated", "1") or 1)
                if el.get(f"{_ODS_OFFICE}value-type"):
                    row_last_col = col
            continue
        stack.pop()
        if el.tag == f"{_ODS_TABLE}table":
            depth -= 1
            if not depth:
                extents[sheet] = (last_row, last_col)
        elif depth == 1 and el.tag == f"{_ODS_TABLE}table-row":
            row += row_repeat
            if row_last_col:
                last_row, last_col = row, max(last_col, row_last_col)
        if stack and el.tag in (f"{_ODS_TABLE}table-row", *_ODS_CELLS):
            stack[-1].remove(el)  # counted: keep the tree from growing with the sheet
    return extents


def _in_row(stack: list[Any]) -> bool:
    """The cell just opened belongs to a row directly (not to a table inside another cell)."""
    return len(stack) >= 2 and stack[-2].tag == f"{_ODS_TABLE}table-row"


def _scan(archive: zipfile.ZipFile, member: str, look: Callable[[bytes], bool]) -> bool:
    """Feed the member's inflated bytes to `look` in pieces cut before a tag, so that no tag is
    cut in two or seen in two pieces; True when `look` says so."""
    carry = b""
    try:
        with archive.open(member) as fh:
            while piece := fh.read(_SCAN_BYTES):
                data = carry + piece
                cut = data.rfind(b"<")
                if cut <= 0 or len(data) - cut > _MAX_CARRY:
                    cut = len(data)
                data, carry = data[:cut], data[cut:]
                if data and look(data):
                    return True
            return bool(carry) and look(carry)
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, zlib.error):
        return False  # damaged: the parser says so in its own words


def _spaced(data: bytes) -> bool:
    """Whether the piece holds a tab or a line break at all (one byte each, found at memory
    speed): only then can a reference or a tag name be followed by one. A sheet's XML mostly
    has a single line break, after its declaration; the searches for where they stand took
    half of the extent check (0.15 s of 0.34 s for a 25 MB sheet)."""
    return b"\n" in data or b"\r" in data or b"\t" in data


def _references_missing(data: bytes) -> bool:
    """Whether some cell or row of these whole tags has no `r`. Counted, not searched tag by tag
    (a search per tag took 1 s for a 29 MB sheet of 100,000 rows): within a sheet only rows and
    cells carry ` r="`, so every one has its reference when the counts agree. A tag without
    attributes, with other whitespace after its name, or with a namespace prefix (not counted
    as a tag) makes them differ or is found directly: the sheet is then walked exactly."""
    if b"<c>" in data or b"<row>" in data or (_spaced(data) and _TAG_ODD_SPACE.search(data)):
        return True
    return data.count(b' r="') != data.count(b"<c ") + data.count(b"<row ")


def _column_number(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n


class RowCap:
    """Counts a sheet's rows and cells as they stream; raises past the limits."""

    def __init__(self, name: str, sheet: str, limits: WorkbookLimits | None = None) -> None:
        self.limits = limits or WorkbookLimits.from_env()
        self.name, self.sheet = name, sheet
        self.cells = 0

    def count(self, number: int, width: int) -> None:
        self.cells += width
        if number > self.limits.max_rows:
            raise IngestError(
                f"sheet {self.sheet!r} has more than {self.limits.max_rows:,} rows "
                "(BPSYNC_SHEET_MAX_ROWS); nothing was imported from this file",
                where=Where(self.name, sheet=self.sheet, row=number),
                code="file_too_large",
            )
        if self.cells > self.limits.max_cells:
            raise IngestError(
                f"sheet {self.sheet!r} has more than {self.limits.max_cells:,} cells "
                "(BPSYNC_SHEET_MAX_CELLS); nothing was imported from this file",
                where=Where(self.name, sheet=self.sheet, row=number),
                code="file_too_large",
            )
