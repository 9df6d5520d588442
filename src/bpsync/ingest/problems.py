"""Problems found while importing: one small value per problem, naming where it is as the user sees
it (file, sheet, the row number Excel shows, the column's header and letter), the value and why.

A problem is never an exception that escapes to the user: readers, mapping and validation collect
them and carry on with the next row. `IngestError` is the one exception of the package, raised only
when a whole file cannot be read at all (not a spreadsheet, no header, ambiguous dates)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

Severity = Literal["error", "warning", "notice"]


def column_letter(index: int) -> str:
    """Excel's letter for a 0-based column index: 0 → A, 25 → Z, 26 → AA."""
    letters = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


@dataclass(frozen=True, slots=True)
class Where:
    """A place in a source file: `row` is the row number as Excel shows it (1-based, counting title
    rows and the header); for Green Button XML it is the number of the derived reading."""

    file: str
    sheet: str | None = None
    row: int | None = None
    column: str | None = None
    column_index: int | None = None

    @property
    def letter(self) -> str | None:
        return None if self.column_index is None else column_letter(self.column_index)

    def __str__(self) -> str:
        parts = [self.file]
        if self.sheet:
            parts.append(f"sheet {self.sheet!r}")
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column:
            letter = f" ({self.letter})" if self.letter else ""
            parts.append(f"column {self.column!r}{letter}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem with one row (or the whole file when `where.row` is None).

    `code` is stable for scripts (see docs/import.md); `reason` is the sentence for people.
    `row_values` holds the row's cells as text when known, so a reject report can reproduce the
    original row next to the reason."""

    code: str
    reason: str
    where: Where
    value: str | None = None
    severity: Severity = "error"
    meter: str | None = None
    row_values: tuple[str, ...] = field(default=(), compare=False)

    @property
    def file(self) -> str:
        return self.where.file

    @property
    def sheet(self) -> str | None:
        return self.where.sheet

    @property
    def row(self) -> int | None:
        return self.where.row

    @property
    def column(self) -> str | None:
        return self.where.column

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def with_row_values(self, values: tuple[str, ...]) -> Problem:
        return replace(self, row_values=values)

    def __str__(self) -> str:
        value = f" (value {self.value!r})" if self.value not in (None, "") else ""
        return f"{self.where}: {self.reason}{value}"

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready description (for `--json` output and reject reports)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "reason": self.reason,
            "file": self.where.file,
            "sheet": self.where.sheet,
            "row": self.where.row,
            "column": self.where.column,
            "column_letter": self.where.letter,
            "value": self.value,
            "meter": self.meter,
        }


class IngestError(Exception):
    """A whole file cannot be imported (unreadable, no recognisable header, ambiguous dates, an
    invalid template). The message is written for the user; no traceback is meant to be shown."""

    def __init__(self, message: str, *, where: Where | None = None, code: str = "file_error"):
        super().__init__(message)
        self.message = message
        self.where = where
        self.code = code

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message
