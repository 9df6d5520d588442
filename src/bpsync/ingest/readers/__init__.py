"""Readers: a file in, a `Table` (header + lazily read rows) out. `open_table` picks the reader
from the file's extension, or from its first bytes when the extension says nothing."""

from __future__ import annotations

import importlib
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import Row, Table, is_total_row

if TYPE_CHECKING:
    from bpsync.ingest.readers.csv import read_csv
    from bpsync.ingest.readers.greenbutton import Aggregate, read_green_button
    from bpsync.ingest.readers.xlsx import list_sheets, read_xlsx

# The readers load when first used (they bring pandas and pyarrow): the package's light parts,
# such as the workbook guard a child process runs while the engine loads (`sheet_precheck`),
# import without them.
_LAZY = {
    "read_csv": "bpsync.ingest.readers.csv",
    "read_green_button": "bpsync.ingest.readers.greenbutton",
    "Aggregate": "bpsync.ingest.readers.greenbutton",
    "list_sheets": "bpsync.ingest.readers.xlsx",
    "read_xlsx": "bpsync.ingest.readers.xlsx",
}
# The same as readers.xlsx.WORKBOOK_SUFFIXES (a test keeps them equal).
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xlsb", ".xls", ".ods")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Row",
    "Table",
    "detect_format",
    "is_total_row",
    "list_sheets",
    "open_table",
    "read_csv",
    "read_green_button",
    "read_xlsx",
]


def detect_format(path: str | Path) -> str:
    """ "csv", "xlsx" (any workbook: .xlsx, .xlsm, .xlsb, .xls, .ods) or "greenbutton"."""
    path = Path(path)
    suffix = path.suffix.casefold()
    if suffix in WORKBOOK_SUFFIXES:
        return "xlsx"
    if suffix == ".xml":
        return "greenbutton"
    if suffix in (".csv", ".tsv", ".txt"):
        return "csv"
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError as exc:
        raise IngestError(f"cannot read the file: {exc.strerror}", where=Where(path.name)) from None
    if head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):  # zip (xlsx, ods) or OLE (xls)
        return "xlsx"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return "greenbutton"
    return "csv"


def open_table(
    path: str | Path,
    *,
    fmt: str | None = None,
    sheet: str | None = None,
    expected: Collection[str] | None = None,
    include_hidden: bool = False,
    skip_rows: int = 0,
    encoding: str | None = None,
    delimiter: str | None = None,
    aggregate: Aggregate = "billing",
    timezone: str | None = None,
) -> Table:
    """Open any supported file. `expected` header keys help find the header row and the sheet."""
    fmt = fmt or detect_format(path)
    if fmt == "xlsx":
        from bpsync.ingest.readers.xlsx import read_xlsx

        return read_xlsx(
            path, sheet=sheet, expected=expected, include_hidden=include_hidden, skip_rows=skip_rows
        )
    if fmt == "greenbutton":
        from bpsync.ingest.readers.greenbutton import read_green_button

        return read_green_button(path, aggregate=aggregate, timezone=timezone)
    if fmt == "csv":
        from bpsync.ingest.readers.csv import read_csv

        return read_csv(
            path, encoding=encoding, delimiter=delimiter, expected=expected, skip_rows=skip_rows
        )
    raise IngestError(f"unknown format {fmt!r}", where=Where(Path(path).name))
