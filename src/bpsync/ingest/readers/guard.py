"""Limits checked before a workbook is parsed, so a hostile or broken file fails fast instead of
filling memory (issue 14 item 7; docs/security.md).

An .xlsx is a zip: a 1.2 MB file can carry shared strings that expand to 510 MB, which openpyxl
loads whole. Before any parser sees the file, `check_workbook` reads the zip's directory: each
member's declared size and compression ratio, and their total. The declared sizes are a true bound:
Python's zipfile (which openpyxl reads through) never returns more than a member's declared size,
and a member holding more fails its CRC check as damaged. Sheets are then streamed with a cap on
rows and cells (`RowCap`).

The limits can be changed through the environment (for the watcher under a service manager as for
the CLI): BPSYNC_XLSX_MAX_BYTES, BPSYNC_XLSX_MAX_RATIO, BPSYNC_SHEET_MAX_ROWS,
BPSYNC_SHEET_MAX_CELLS.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bpsync.ingest.problems import IngestError, Where

# Members smaller than this may compress by any ratio (an empty sheet's XML compresses 100:1).
_RATIO_FLOOR_BYTES = 8 << 20


@dataclass(frozen=True)
class WorkbookLimits:
    """What a workbook may expand to. The defaults admit a full 1,048,576-row sheet of bills
    (a few hundred MB of XML) and refuse the ratios only crafted files reach."""

    max_uncompressed_bytes: int = 1 << 30  # all members together, inflated
    max_ratio: float = 200.0  # inflated / compressed, for members above 8 MB
    max_rows: int = 1_048_576  # Excel's own sheet limit
    max_cells: int = 50_000_000

    @classmethod
    def from_env(cls) -> WorkbookLimits:
        def number(name: str, default: float) -> float:
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

        d = cls()
        return cls(
            max_uncompressed_bytes=int(number("BPSYNC_XLSX_MAX_BYTES", d.max_uncompressed_bytes)),
            max_ratio=number("BPSYNC_XLSX_MAX_RATIO", d.max_ratio),
            max_rows=int(number("BPSYNC_SHEET_MAX_ROWS", d.max_rows)),
            max_cells=int(number("BPSYNC_SHEET_MAX_CELLS", d.max_cells)),
        )


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
