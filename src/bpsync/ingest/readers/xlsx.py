"""Workbooks (.xlsx, .xlsm, .xlsb, .xls, .ods) through python-calamine: a file is parsed once
(in Rust), kept while an import reads it (header search, pre-scans, rows) and streamed a row at a
time into Python. Sheet choice, hidden sheets, a header below title rows, cached formula values,
true Excel row numbers, and an early stop in the blank rows that formatted-but-empty ranges leave
at the bottom of a sheet.

Two things calamine does not give are filled in here: error cells (`#DIV/0!`, `#N/A`) come back
as empty strings, so an .xlsx sheet's XML is scanned for them (only when it holds any) and they
keep their text as Excel shows it; and the 1904 date system flag is read from workbook.xml, for
serial numbers typed into general cells. openpyxl is the fallback for an .xlsx or .xlsm that
calamine cannot open (docs/decisions.md F12)."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import zipfile
import zlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import ParseError

from bpsync.ingest.cells.columnar import Chunk, blank_mask
from bpsync.ingest.cells.dates import EXCEL_1900, EXCEL_1904
from bpsync.ingest.cells.values import is_blank
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers import sheet_precheck
from bpsync.ingest.readers.base import (
    HEADER_SEARCH_ROWS,
    Row,
    Table,
    check_width,
    find_header,
    header_score,
    make_headers,
)
from bpsync.ingest.readers.binary_extent import xls_extents, xlsb_extents
from bpsync.ingest.readers.chunks import chunks_of_rows
from bpsync.ingest.readers.guard import (
    RowCap,
    WorkbookLimits,
    check_ods_extent,
    check_sheet_extent,
    check_workbook,
    refuse_extent,
)

# Stop a sheet after this many consecutive blank rows: data never resumes after a gap this long,
# while formatted empty ranges can run to row 1,048,576.
BLANK_RUN_LIMIT = 1000
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xlsb", ".xls", ".ods")
_ZIPPED = (".xlsx", ".xlsm", ".xlsb", ".ods")
_STATES = {"Visible": "visible", "Hidden": "hidden", "VeryHidden": "veryHidden"}

# What a damaged workbook raises while a sheet is read (cut-off XML, a broken zip member).
_DAMAGE = (ParseError, zipfile.BadZipFile, zlib.error, EOFError, KeyError, OSError, ValueError)


class Book:
    """An open workbook: its sheets (title, state), date system, and rows by sheet."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        suffix = path.suffix.casefold()
        if suffix in _ZIPPED or suffix not in WORKBOOK_SUFFIXES:
            check_workbook(path, name)  # sizes and ratios first: a zip bomb never reaches a parser
        if suffix == ".ods":
            check_ods_extent(path, name)  # calamine parses every sheet of an .ods on opening
        elif suffix == ".xls":  # and of an .xls
            for sheet, (rows, columns) in xls_extents(path).items():
                refuse_extent(name, sheet, rows, columns, spans=True)
        self._calamine: Any = None
        self._openpyxl: Any = None
        self._sheets: dict[str, Any] = {}
        self._errors: dict[str, dict[int, list[tuple[int, str]]]] = {}
        self._lock = threading.Lock()
        self.fallback: str | None = None
        try:
            import python_calamine

            self._calamine = python_calamine.CalamineWorkbook.from_path(str(path))
            self.sheets = [
                (m.name, _STATES.get(_enum_name(m.visible), "visible"))
                for m in self._calamine.sheets_metadata
                if _enum_name(m.typ) == "WorkSheet"
            ]
        except Exception as exc:  # calamine raises its own error types for a file it cannot read
            if suffix not in (".xlsx", ".xlsm", "") and not zipfile.is_zipfile(path):
                kind = f"{suffix} workbook" if suffix in WORKBOOK_SUFFIXES else "workbook"
                raise IngestError(f"not a readable {kind} ({exc})", where=Where(name)) from None
            self._open_openpyxl()
            self.fallback = f"read with openpyxl (calamine could not open it: {exc})"
        self.epoch = self._epoch()
        # Error cells keep their text with openpyxl, or with calamine for an .xlsx (the sheet XML
        # is scanned for them); .xls, .xlsb and .ods give them as empty cells (F12).
        self.keeps_errors = self._openpyxl is not None or _is_xlsx(path)

    def _open_openpyxl(self) -> None:
        import openpyxl

        try:
            self._openpyxl = openpyxl.load_workbook(self.path, read_only=True, data_only=True)
        except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
            raise IngestError(
                f"not a readable .xlsx workbook ({exc})", where=Where(self.name)
            ) from None
        self._calamine = None
        self.sheets = [(ws.title, ws.sheet_state) for ws in self._openpyxl.worksheets]

    def _epoch(self) -> Any:
        if self._openpyxl is not None:
            return EXCEL_1904 if self._openpyxl.epoch.date() == EXCEL_1904 else EXCEL_1900
        if self.path.suffix.casefold() in (".xlsx", ".xlsm", ""):
            try:
                with zipfile.ZipFile(self.path) as z:
                    head = z.read("xl/workbook.xml")[:4096]
            except (KeyError, zipfile.BadZipFile, OSError):
                return EXCEL_1900
            if re.search(rb'date1904="(?:1|true)"', head):
                return EXCEL_1904
        return EXCEL_1900

    def close(self) -> None:
        if self._openpyxl is not None:
            self._openpyxl.close()
        self._sheets.clear()

    def rows(self, title: str) -> Iterator[tuple[int, tuple[object, ...]]]:
        """(Excel row number, values) with trailing empty cells trimmed; stops in a long blank
        run. Empty cells are None, whatever the engine."""
        try:
            source = self._raw_rows(title)
            yield from _trimmed(source, RowCap(self.name, title))
        except _DAMAGE as exc:
            raise self._damaged(title, exc) from None

    def _damaged(self, title: str, exc: BaseException) -> IngestError:
        return IngestError(
            f"sheet {title!r} could not be read: the workbook is damaged ({exc})",
            where=Where(self.name, sheet=title),
            code="damaged_file",
        )

    def _raw_rows(self, title: str) -> Iterator[tuple[int, tuple[object, ...]]]:
        if self._openpyxl is not None:
            ws = self._openpyxl[title]
            ws.reset_dimensions()  # exporters often write a wrong <dimension>; read what is there
            yield from enumerate(ws.iter_rows(values_only=True), start=1)
            return
        sheet = self._sheet(title)
        errors = self._error_cells(title)
        # calamine's rows start at the sheet's first row but its first used column.
        pad = (None,) * sheet.start[1] if sheet.start else ()
        for number, values in enumerate(sheet.iter_rows(), start=1):
            row = pad + tuple(None if v == "" else v for v in values)
            if number in errors:
                row = _with_errors(row, errors[number])
            yield number, row

    def chunks(self, title: str, header_row: int, width: int, size: int) -> Iterator[Any] | None:
        """The data rows below `header_row` as Chunks, straight from calamine's rows (the
        same cells, numbers and trimming as `rows`); None when openpyxl reads this workbook."""
        if self._calamine is None:
            return None
        return self._chunks(title, header_row, width, size)

    def _chunks(self, title: str, header_row: int, width: int, size: int) -> Iterator[Any]:
        import numpy as np

        try:
            sheet = self._sheet(title)
            errors = self._error_cells(title)
            pad = [None] * (sheet.start[1] if sheet.start else 0)
            limits = WorkbookLimits.from_env()
            number, cells_seen, blank_run = 0, 0, 0
            source = iter(sheet.iter_rows())
            while True:
                first = number + 1
                batch = list(itertools.islice(source, size))
                if pad:
                    batch = [pad + values for values in batch]
                if not batch:
                    return
                number += len(batch)
                full = len(batch[0])
                cells_seen += full * len(batch)
                if number > limits.max_rows or cells_seen > limits.max_cells:
                    cap = RowCap(self.name, title, limits)
                    cap.cells = cells_seen - full * len(batch)
                    for n in range(first, number + 1):
                        cap.count(n, full)
                grid = np.empty((len(batch), full), dtype=object)
                grid[:] = batch
                grid[grid == ""] = None
                numbers = np.arange(first, number + 1, dtype=np.int64)
                for n in sorted(n for n in errors if first <= n <= number):
                    for column, text in errors[n]:
                        if column >= grid.shape[1]:
                            grown = np.full((grid.shape[0], column + 1), None, dtype=object)
                            grown[:, : grid.shape[1]] = grid
                            grid = grown
                        grid[n - first, column] = text
                filled = (
                    np.column_stack([~blank_mask(grid[:, j], False) for j in range(grid.shape[1])])
                    if grid.shape[1]
                    else np.zeros((len(batch), 0), dtype=bool)
                )
                any_filled = filled.any(axis=1)
                # A run of BLANK_RUN_LIMIT blank rows ends the sheet, as in `rows`.
                positions = np.arange(len(batch))
                last_filled = np.maximum.accumulate(np.where(any_filled, positions, -1))
                run = np.where(last_filled >= 0, positions - last_filled, positions + 1 + blank_run)
                stop = np.flatnonzero(run >= BLANK_RUN_LIMIT)
                end = int(stop[0]) if len(stop) else len(batch)
                blank_run = int(run[end - 1]) if end and not any_filled[end - 1] else 0
                keep = np.flatnonzero(any_filled[:end] & (numbers[:end] > header_row))
                if len(keep):
                    lengths = (grid.shape[1] - np.argmax(filled[keep][:, ::-1], axis=1)).astype(
                        np.int64
                    )
                    rows = grid[keep]
                    # Trailing blank cells (placeholders too) are trimmed, as `rows` does.
                    beyond = np.arange(rows.shape[1])[None, :] >= lengths[:, None]
                    rows[beyond] = None
                    columns = [rows[:, j] for j in range(rows.shape[1])]
                    yield Chunk(numbers[keep], columns, lengths, text=False)
                if len(stop):
                    return
        except _DAMAGE as exc:
            raise self._damaged(title, exc) from None

    def _sheet(self, title: str) -> Any:
        with self._lock:
            sheet = self._sheets.get(title)
            if sheet is None:
                # Before calamine makes a dense grid of it; that read also says whether the
                # sheet holds error cells at all (most hold none: nothing reads it again).
                if not self._check_extent(title):
                    self._errors.setdefault(title, {})
                # The error-cell scan (a second pass over the sheet's XML) runs beside the
                # parse instead of after it.
                scan = None
                if title not in self._errors:
                    scan = threading.Thread(target=self._scan, args=(title,), daemon=True)
                    scan.start()
                try:
                    sheet = self._sheets[title] = self._calamine.get_sheet_by_name(title)
                except Exception as exc:  # calamine's XML or zip errors: a damaged sheet
                    raise ValueError(str(exc)) from None
                finally:
                    if scan is not None:
                        scan.join()
            return sheet

    def _check_extent(self, title: str) -> bool:
        """Refuses a sheet over the cell limit; returns whether it may hold error cells."""
        suffix = self.path.suffix.casefold()
        if suffix == ".xlsb":
            extents = xlsb_extents(self.path)
            if title in extents:
                refuse_extent(self.name, title, *extents[title], spans=True)
            return True
        if not _is_xlsx(self.path):  # .ods, .xls: checked on opening
            return True
        try:
            with zipfile.ZipFile(self.path) as z:
                member = _sheet_member(z, title)
                if member is not None:
                    checked = sheet_precheck.verdict(self.path, member)
                    if checked is not None and checked[0]:  # a child found it within limits
                        return checked[1]
                    return check_sheet_extent(z, member, self.name, title)
        except (zipfile.BadZipFile, KeyError, OSError):
            pass  # calamine says what is wrong with it
        return True

    def _scan(self, title: str) -> None:
        with contextlib.suppress(Exception):  # `_error_cells` scans again and raises it there
            self._errors[title] = _scan_error_cells(self.path, title)

    def _error_cells(self, title: str) -> dict[int, list[tuple[int, str]]]:
        with self._lock:
            if title not in self._errors:
                self._errors[title] = _scan_error_cells(self.path, title)
            return self._errors[title]


def distinct_texts(
    book: Book, title: str, header_row: int, index: int, fn: Callable[[Any], Any], limit: int
) -> set[Any] | None:
    """The distinct fn(value) of column `index` below `header_row` (None left out), straight
    from calamine's rows, no Chunk made of the other cells: a tenth of a full read. Error
    cells count as their text, as in `rows`. Rows past a long blank run (which `rows` does
    not read) are read too: what it finds is never less than the rows give. None when
    openpyxl reads this workbook."""
    if book._calamine is None:
        return None
    found: set[Any] = set()
    seen: set[Any] = {(str, "")}

    def add(value: Any) -> bool:
        """False once more than `limit` are found."""
        key = (value.__class__, value)  # False, 0 and 0.0 are one set member, not one cell
        if key not in seen:
            seen.add(key)
            name = fn(value)
            if name is not None:
                found.add(name)
        return len(found) <= limit

    try:
        sheet = book._sheet(title)
        errors = book._error_cells(title)
        column = index - (sheet.start[1] if sheet.start else 0)
        for number, cells in errors.items():
            if number > header_row and not all(add(t) for at, t in cells if at == index):
                return found
        if column >= 0:
            for row in itertools.islice(sheet.iter_rows(), header_row, None):
                if len(row) > column and not add(row[column]):
                    break
    except _DAMAGE as exc:
        raise book._damaged(title, exc) from None
    return found


def _is_xlsx(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return "xl/workbook.xml" in z.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


def _enum_name(value: object) -> str:
    return str(value).rsplit(".", 1)[-1]  # SheetVisibleEnum.Hidden -> Hidden


def _with_errors(row: tuple[object, ...], errors: list[tuple[int, str]]) -> tuple[object, ...]:
    cells = list(row)
    for column, text in errors:
        cells.extend([None] * (column + 1 - len(cells)))
        cells[column] = text
    return tuple(cells)


def _trimmed(
    source: Iterator[tuple[int, tuple[object, ...]]], cap: RowCap
) -> Iterator[tuple[int, tuple[object, ...]]]:
    blank_run = 0
    for number, values in source:
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
        yield number, tuple(values[:end])


_SHEET_TAG = re.compile(rb"<(?:\w+:)?sheet\b[^>]*>")
_ATTR = re.compile(rb'([\w:]+)="([^"]*)"')
# An error cell: <c r="D7" t="e"><f>B7/C7</f><v>#DIV/0!</v></c> (attributes in either order).
_CELL_TAIL = rb"[^>]*>(?:<f[^>]*>.*?</f>|<f[^>]*/>)?<v>([^<]*)</v>"
_ERROR_CELLS = (
    re.compile(rb'<c\b[^>]*?\br="([A-Z]+)(\d+)"[^>]*?\bt="e"' + _CELL_TAIL),
    re.compile(rb'<c\b[^>]*?\bt="e"[^>]*?\br="([A-Z]+)(\d+)"' + _CELL_TAIL),
)


def _scan_error_cells(path: Path, title: str) -> dict[int, list[tuple[int, str]]]:
    """row → [(column index, the error's text such as `#DIV/0!`)], for one .xlsx sheet. Reads the sheet's
    XML in chunks and only looks closer when a chunk holds an error cell (most sheets hold none)."""
    if not _is_xlsx(path):  # by content: an .xlsx saved under another name too
        return {}
    try:
        with zipfile.ZipFile(path) as z:
            member = _sheet_member(z, title)
            if member is None:
                return {}
            found: dict[tuple[int, int], str] = {}
            carry = b""
            with z.open(member) as fh:
                while chunk := fh.read(4 << 20):
                    data = carry + chunk
                    if b't="e"' in data:
                        for pattern in _ERROR_CELLS:
                            for m in pattern.finditer(data):
                                col = _column_index(m.group(1).decode())
                                found[(int(m.group(2)), col)] = m.group(3).decode(
                                    "utf-8", "replace"
                                )
                    carry = data[-2048:]
            by_row: dict[int, list[tuple[int, str]]] = {}
            for (row, col), text in sorted(found.items()):
                by_row.setdefault(row, []).append((col, text))
            return by_row
    except (zipfile.BadZipFile, KeyError, OSError, zlib.error, EOFError):
        return {}


def _column_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def _sheet_member(z: zipfile.ZipFile, title: str) -> str | None:
    """The zip member holding the sheet named `title` (workbook.xml + its relationships)."""
    book = z.read("xl/workbook.xml")
    rels = z.read("xl/_rels/workbook.xml.rels")
    rel_id = None
    for tag in _SHEET_TAG.findall(book):
        attrs = dict(_ATTR.findall(tag))
        name = _xml_unescape(attrs.get(b"name", b"").decode("utf-8", "replace"))
        if name == title:
            rel_id = next((v for k, v in attrs.items() if k.endswith(b":id")), None)
            break
    if rel_id is None:
        return None
    for tag in re.findall(rb"<(?:\w+:)?Relationship\b[^>]*>", rels):
        attrs = dict(_ATTR.findall(tag))
        if attrs.get(b"Id") == rel_id:
            target = attrs.get(b"Target", b"").decode()
            return target.lstrip("/") if target.startswith("/") else f"xl/{target}"
    return None


def _xml_unescape(text: str) -> str:
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
        text = text.replace(a, b)
    return text


_cache_lock = threading.Lock()
_cached: tuple[tuple[str, int, int, WorkbookLimits], Book] | None = None


def open_book(path: str | Path, name: str | None = None) -> Book:
    """The workbook at `path`, parsed once: the last one opened is kept (an import opens the same
    file for the header search, each sheet's score, the pre-scans and the rows)."""
    global _cached
    path = Path(path)
    name = name or path.name
    try:
        st = path.stat()
    except OSError as exc:
        raise IngestError(f"cannot read the file: {exc.strerror}", where=Where(name)) from None
    # The limits belong to the key: a workbook checked under other limits is checked again.
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, WorkbookLimits.from_env())
    with _cache_lock:
        if _cached is not None and _cached[0] == key and _cached[1].name == name:
            return _cached[1]
    book = Book(path, name)
    with _cache_lock:
        _cached = (key, book)
    return book


def list_sheets(path: str | Path) -> list[tuple[str, str]]:
    """(name, state) of every sheet; state is visible, hidden or veryHidden."""
    return list(open_book(path).sheets)


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
    book = open_book(path, name)
    sheets = book.sheets
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
        head = list(itertools.islice(book.rows(title), skip_rows, skip_rows + HEADER_SEARCH_ROWS))
        if not head:
            continue
        check_width(head, name, title)
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

    def chunks(size: int) -> Iterator[Any]:
        fast = open_book(path, name).chunks(title, header_row, width, size)
        return fast if fast is not None else chunks_of_rows(rows(), size, text=False)

    def rows() -> Iterator[Row]:
        for number, values in open_book(path, name).rows(title):
            if number <= header_row:
                continue
            if len(values) < width:
                values = values + (None,) * (width - len(values))
            yield Row(number, values)

    return Table(
        file=name,
        kind="xlsx",
        headers=headers,
        header_row=header_row,
        _rows=rows,
        sheet=title,
        other_sheets=others,
        notes=[f"read sheet {title!r} (header on row {header_row})"]
        + ([book.fallback] if book.fallback else [])
        + (
            [
                "error cells (#N/A, #DIV/0!) of this kind of workbook read as empty cells: an "
                "empty consumption is refused, an empty cost or demand is sent without one"
            ]
            if not book.keeps_errors
            else []
        )
        + (
            [
                "sheets scored by the columns they name: "
                + ", ".join(f"{t!r} {n}" for t, n in scored)
            ]
            if len(scored) > 1
            else []
        ),
        date_epoch=book.epoch,
        chunks=chunks,
        distinct_texts=lambda index, fn, limit: distinct_texts(
            open_book(path, name), title, header_row, index, fn, limit
        ),
    )
