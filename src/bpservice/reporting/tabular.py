"""xlsx, csv and json rendering of a Document. Numbers stay numbers (with a display format) so a
spreadsheet can total and chart them; totals rows are values, not formulas, so every reader (and
openpyxl in tests) sees the same figures. Text is always a string cell, never a formula."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from typing import Any

from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from bpservice.reporting.document import Amount, Column, Document, Facts, Note, Table, Value

_HEAD_FILL = PatternFill("solid", fgColor="0B6E4F")
_TOTAL_FILL = PatternFill("solid", fgColor="E6F4EF")
_BOLD = Font(bold=True)
_HEAD_FONT = Font(bold=True, color="FFFFFF")
_TITLE_FONT = Font(bold=True, size=14, color="0B6E4F")
_TOP_RULE = Border(top=Side(style="thin", color="1F2933"))
# Characters Excel refuses in sheet titles.
_SHEET_BAD = re.compile(r"[\[\]:*?/\\]")
# Cells beginning with these run as formulas in spreadsheet programs (CSV/formula injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _number_format(column: Column) -> str:
    if column.kind == "integer":
        return "#,##0"
    decimals = "." + "0" * column.decimals if column.decimals else ""
    if column.kind == "usd":
        return f'"$"#,##0{decimals}'
    if column.kind == "percent":
        return f'#,##0{decimals}"%"'
    if column.kind == "date":
        return "yyyy-mm-dd"
    return f"#,##0{decimals}"


def _safe_text(value: str) -> str:
    """CSV text that a spreadsheet program shows as text, never evaluates: a CSV cell has no type,
    so a leading `'` is the only way to say so."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def _put(ws: Worksheet, row: int, column: int, value: Any) -> Cell:
    """Write a value; text always becomes a string cell. openpyxl turns a str starting with `=`
    into a formula (and `#N/A` into an error), so the type is set after the value: an xlsx string
    cell is never evaluated, and the text stays exactly what the user typed (no visible `'`)."""
    cell = ws.cell(row=row, column=column, value=value)
    if isinstance(value, str):
        cell.data_type = "s"
    return cell


def _sheet_title(name: str, used: set[str]) -> str:
    base = _SHEET_BAD.sub(" ", name)[:31] or "Sheet"
    title, n = base, 2
    while title.lower() in used:
        suffix = f" ({n})"
        title, n = base[: 31 - len(suffix)] + suffix, n + 1
    used.add(title.lower())
    return title


def _write_table(ws: Worksheet, table: Table, start_row: int) -> int:
    """Write a heading row, the rows and the totals row from `start_row`; returns the next row."""
    for j, column in enumerate(table.columns, start=1):
        cell = _put(ws, start_row, j, column.heading)
        cell.font, cell.fill = _HEAD_FONT, _HEAD_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    for r, row in enumerate(table.rows, start=start_row + 1):
        for j, column in enumerate(table.columns, start=1):
            cell = _put(ws, r, j, row.get(column.key))
            if column.kind != "text":
                cell.number_format = _number_format(column)
    r = start_row + len(table.rows)
    if table.totals is not None:
        r += 1
        for j, column in enumerate(table.columns, start=1):
            cell = _put(ws, r, j, table.totals.get(column.key))
            cell.font, cell.fill, cell.border = _BOLD, _TOTAL_FILL, _TOP_RULE
            if column.kind != "text":
                cell.number_format = _number_format(column)
    for j, column in enumerate(table.columns, start=1):
        width = max(
            [len(column.heading) * 0.8, 10]
            + [len(str(row.get(column.key) or "")) + 2 for row in table.rows[:200]]
        )
        letter = get_column_letter(j)
        current = ws.column_dimensions[letter].width or 0
        ws.column_dimensions[letter].width = min(max(width, current), 48)
    return r + 1


def render_xlsx(document: Document) -> bytes:
    """A Summary sheet (title, metadata, facts, notes, sources) and one sheet per table."""
    wb = Workbook()
    summary = wb.active
    assert summary is not None
    summary.title = "Summary"
    used = {"summary"}
    _put(summary, 1, 1, document.title).font = _TITLE_FONT
    _put(summary, 2, 1, document.subtitle)
    row = 4
    for label, value in document.meta:
        _put(summary, row, 1, label).font = _BOLD
        _put(summary, row, 2, value)
        row += 1
    for section in document.sections:
        if isinstance(section, Facts):
            row += 1
            _put(summary, row, 1, section.title).font = _BOLD
            row += 1
            for label, value in section.items:
                _put(summary, row, 1, label)
                if isinstance(value, Amount):
                    # A number a spreadsheet can use, its unit (and any detail) beside it.
                    cell = _put(summary, row, 2, value.value)
                    decimals = "." + "0" * value.decimals if value.decimals else ""
                    cell.number_format = f'"$"#,##0{decimals}' if value.usd else f"#,##0{decimals}"
                    cell.alignment = Alignment(horizontal="left")
                    tail = " ".join(p for p in (value.unit, value.detail) if p)
                    if tail:
                        _put(summary, row, 3, tail)
                else:
                    _put(summary, row, 2, value)
                row += 1
        elif isinstance(section, Note):
            row += 1
            if section.title:
                _put(summary, row, 1, section.title).font = _BOLD
                row += 1
            _put(summary, row, 1, section.text).alignment = Alignment(wrap_text=False)
            row += 1
    if document.sources:
        row += 1
        _put(summary, row, 1, "Sources").font = _BOLD
        for source in document.sources:
            row += 1
            _put(summary, row, 1, source)
    summary.column_dimensions["A"].width = 34
    summary.column_dimensions["B"].width = 70
    summary.column_dimensions["C"].width = 30

    for table in document.tables():
        ws = wb.create_sheet(_sheet_title(table.name, used))
        _put(ws, 1, 1, table.title).font = _BOLD
        next_row = _write_table(ws, table, 3)
        ws.freeze_panes = "A4"
        # Filter buttons on the heading row, over the data rows (not the totals row).
        last_data_row = 3 + len(table.rows)
        ws.auto_filter.ref = f"A3:{get_column_letter(len(table.columns))}{last_data_row}"
        if table.note:
            _put(ws, next_row + 1, 1, table.note).font = Font(italic=True)
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def _plain(value: Value) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    return value


def render_csv(document: Document) -> bytes:
    """The report's one table: a heading row of column keys, then data rows (no totals row)."""
    table = _single_table(document)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([c.key for c in table.columns])
    for row in table.rows:
        writer.writerow(
            [
                "" if row.get(c.key) is None else _csv_text(_plain(row.get(c.key)))
                for c in table.columns
            ]
        )
    # A BOM lets spreadsheet programs detect UTF-8 (m², names with accents).
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def _csv_text(value: Any) -> Any:
    return _safe_text(value) if isinstance(value, str) else value


def render_json(document: Document) -> bytes:
    """`{report: {...}, columns: [{key, title, unit}], rows: [...], totals: {...} | null}`."""
    table = _single_table(document)
    body = {
        "report": document.data,
        "columns": [{"key": c.key, "title": c.title, "unit": c.unit} for c in table.columns],
        "rows": [{c.key: _plain(row.get(c.key)) for c in table.columns} for row in table.rows],
        "totals": (
            {k: _plain(v) for k, v in table.totals.items()} if table.totals is not None else None
        ),
    }
    return json.dumps(body, ensure_ascii=False, indent=2).encode("utf-8")


def _single_table(document: Document) -> Table:
    tables = document.tables()
    if len(tables) != 1:
        raise ValueError("csv and json need a document with exactly one table")
    return tables[0]
