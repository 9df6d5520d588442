"""XLSX workbooks through openpyxl's read-only mode (cached formula values, one row at a time):
sheet choice, hidden sheets, a header below title rows, and early stop in the blank rows that
formatted-but-empty ranges leave at the bottom of a sheet."""

from __future__ import annotations

import itertools
import zipfile
import zlib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import ParseError

from bpsync.ingest.dates import EXCEL_1900, EXCEL_1904
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import (
    HEADER_SEARCH_ROWS,
    Row,
    Table,
    find_header,
    header_score,
    make_headers,
)
from bpsync.ingest.readers.guard import RowCap, check_workbook
from bpsync.ingest.values import is_blank

# Stop a sheet after this many consecutive blank rows: data never resumes after a gap this long,
# while formatted empty ranges can run to row 1,048,576.
BLANK_RUN_LIMIT = 1000


def _open(path: Path, name: str) -> Any:
    import openpyxl

    check_workbook(path, name)  # sizes and ratios first: a zip bomb never reaches the parser
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise IngestError(f"not a readable .xlsx workbook ({exc})", where=Where(name)) from None


# What a damaged workbook raises while a sheet is streamed (cut-off XML, a broken zip member).
_DAMAGE = (ParseError, zipfile.BadZipFile, zlib.error, EOFError, KeyError, OSError, ValueError)


def _sheet_rows(ws: Any, name: str) -> Iterator[tuple[int, tuple[object, ...]]]:
    """(row number, values) with trailing empty cells trimmed; stops in a long blank run."""
    try:
        yield from _trimmed_rows(ws, RowCap(name, ws.title))
    except _DAMAGE as exc:
        raise IngestError(
            f"sheet {ws.title!r} could not be read: the workbook is damaged ({exc})",
            where=Where(name, sheet=ws.title),
            code="damaged_file",
        ) from None


def _trimmed_rows(ws: Any, cap: RowCap) -> Iterator[tuple[int, tuple[object, ...]]]:
    ws.reset_dimensions()  # exporters often write a wrong <dimension>; read what is there
    blank_run = 0
    for number, values in enumerate(ws.iter_rows(values_only=True), start=1):
        values = tuple(values)
        cap.count(number, len(values))
        end = len(values)
        while end and is_blank(values[end - 1]):
            end -= 1
        if not end:
            blank_run += 1
            if blank_run >= BLANK_RUN_LIMIT:
                return
            continue
        blank_run = 0
        yield number, values[:end]


def list_sheets(path: str | Path) -> list[tuple[str, str]]:
    """(name, state) of every sheet; state is visible, hidden or veryHidden."""
    path = Path(path)
    wb = _open(path, path.name)
    try:
        return [(ws.title, ws.sheet_state) for ws in wb.worksheets]
    finally:
        wb.close()


def read_xlsx(
    path: str | Path,
    *,
    sheet: str | None = None,
    expected: Collection[str] | None = None,
    include_hidden: bool = False,
    skip_rows: int = 0,
    display_name: str | None = None,
) -> Table:
    """Open a workbook and choose the sheet: the one named (`sheet`, case-insensitive), else the
    first visible sheet whose header names `expected` columns, else the first sheet with a header.
    Hidden sheets are skipped unless `include_hidden` or named explicitly."""
    path = Path(path)
    name = display_name or path.name
    wb = _open(path, name)
    try:
        epoch = EXCEL_1904 if wb.epoch.date() == EXCEL_1904 else EXCEL_1900
        sheets = [(ws.title, ws.sheet_state) for ws in wb.worksheets]
        if sheet is not None:
            wanted = [t for t, _ in sheets if t.casefold() == sheet.strip().casefold()]
            if not wanted:
                raise IngestError(
                    f"no sheet named {sheet!r}; sheets: " + ", ".join(t for t, _ in sheets),
                    where=Where(name),
                    code="no_such_sheet",
                )
            candidates = wanted
        else:
            candidates = [t for t, state in sheets if include_hidden or state == "visible"]
        chosen: tuple[str, int, list[Any]] | None = None
        best = 0
        scored: list[tuple[str, int]] = []
        fallback: tuple[str, int, list[Any]] | None = None
        for title in candidates:
            head = list(
                itertools.islice(
                    _sheet_rows(wb[title], name), skip_rows, skip_rows + HEADER_SEARCH_ROWS
                )
            )
            if not head:
                continue
            try:
                pos = find_header(head, expected)
            except IngestError:
                continue
            number, cells = head[pos]
            found = (title, number, list(cells))
            if sheet is not None or not expected:
                chosen = found
                break
            # Score every visible sheet and keep the best (issue 11 item 6): a PM workbook's
            # "Meters" sheet names a few expected columns, its "Meter Entries" sheet more.
            score = header_score(cells, expected)
            scored.append((title, score))
            if score >= 2 and score > best:
                chosen, best = found, score
            fallback = fallback or found
        chosen = chosen or fallback
    finally:
        wb.close()
    if chosen is None:
        raise IngestError(
            "no sheet with a header row naming the columns was found"
            + ("" if include_hidden else " (hidden sheets were not searched)"),
            where=Where(name),
            code="no_header",
        )
    title, header_row, header_cells = chosen
    headers = make_headers(header_cells)
    width = len(headers)
    others = [
        f"{t} (hidden, ignored)" if state != "visible" and not include_hidden else t
        for t, state in sheets
        if t != title
    ]

    def rows() -> Iterator[Row]:
        book = _open(path, name)
        try:
            for number, values in _sheet_rows(book[title], name):
                if number <= header_row:
                    continue
                if len(values) < width:
                    values = values + (None,) * (width - len(values))
                yield Row(number, values)
        finally:
            book.close()

    return Table(
        file=name,
        kind="xlsx",
        headers=headers,
        header_row=header_row,
        _rows=rows,
        sheet=title,
        other_sheets=others,
        notes=[f"read sheet {title!r} (header on row {header_row})"]
        + (
            [
                "sheets scored by the columns they name: "
                + ", ".join(f"{t!r} {n}" for t, n in scored)
            ]
            if len(scored) > 1
            else []
        ),
        date_epoch=epoch,
    )
