"""Exporting what a table shows (issue 28): its visible columns and rows, in the order and units on
screen, to a CSV file and an XLSX workbook in the download dir.

`TableContent` is plain data; `from_datatable` reads a DataTable's cells as shown (numbers on
screen become numbers in the files, a dash becomes an empty cell); `write` is file I/O only and
runs in a thread worker (openpyxl is imported there, never at the app's start)."""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

_NUMBER = re.compile(r"^[-+]?\$?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")
_EMPTY = {"", "\u2013", "-", "…"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class TableContent:
    title: str  # names the files and the sheet
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def cell_value(cell: Any) -> Any:
    """A cell as a file should hold it: '1,234.5' → 1234.5, '$2,000' → 2000, a dash → None, text as
    its plain text (never markup)."""
    text = cell.plain if isinstance(cell, Text) else str(cell) if cell is not None else ""
    text = text.strip()
    if text in _EMPTY:
        return None
    if _NUMBER.match(text):
        digits = text.replace(",", "").replace("$", "")
        return float(digits) if "." in digits else int(digits)
    return text


def from_datatable(title: str, table: Any) -> TableContent:
    """The columns and rows of a Textual DataTable in the order it shows them."""
    headers = tuple(
        c.label.plain if isinstance(c.label, Text) else str(c.label) for c in table.ordered_columns
    )
    rows = tuple(tuple(cell_value(v) for v in table.get_row(row.key)) for row in table.ordered_rows)
    return TableContent(title, headers, rows)


def paths(folder: Path, title: str, now: dt.datetime) -> tuple[Path, Path]:
    """`<title>-YYYYmmdd-HHMMSS.csv` and `.xlsx` in `folder` (absolute, never overwriting)."""
    stem = _UNSAFE.sub("-", title.strip().lower()).strip("-") or "table"
    base = folder.expanduser().resolve() / f"{stem}-{now:%Y%m%d-%H%M%S}"
    n, candidate = 1, base
    while candidate.with_suffix(".csv").exists() or candidate.with_suffix(".xlsx").exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate.with_suffix(".csv"), candidate.with_suffix(".xlsx")


def _safe_text(value: Any) -> Any:
    # A spreadsheet would run a cell starting with = + - @ as a formula (names come from users).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return value


def write(content: TableContent, csv_path: Path, xlsx_path: Path) -> None:
    from openpyxl import Workbook

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", encoding="utf-8-sig", newline="") as f:
        out = csv.writer(f)
        out.writerow(content.headers)
        for row in content.rows:
            out.writerow(["" if v is None else _safe_text(v) for v in row])
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = (content.title or "Table")[:31]
    sheet.append(list(content.headers))
    for row in content.rows:
        sheet.append([_safe_text(v) for v in row])
    sheet.freeze_panes = "A2"
    if content.rows:
        sheet.auto_filter.ref = sheet.dimensions
    book.save(xlsx_path)


def export(content: TableContent, folder: Path, now: dt.datetime) -> tuple[Path, Path]:
    csv_path, xlsx_path = paths(folder, content.title, now)
    write(content, csv_path, xlsx_path)
    return csv_path, xlsx_path


def summary(content: TableContent, files: Sequence[Path]) -> str:
    names = " and ".join(str(p) for p in files)
    return f"Exported {len(content.rows)} row(s) to {names}"
