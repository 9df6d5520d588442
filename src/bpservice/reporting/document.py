"""A format-neutral report document: facts, tables and notes. Content builders (content/) make a
Document from plain dicts; one renderer per format (pdf, xlsx, csv, json) turns it into bytes, so
every format of a report carries the same figures."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["text", "number", "integer", "date", "usd", "percent"]
Value = str | int | float | dt.date | None
# Printed for a missing figure (an en dash).
DASH = "\u2013"


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: Kind = "text"
    decimals: int = 0
    unit: str | None = None

    @property
    def heading(self) -> str:
        return f"{self.title} ({self.unit})" if self.unit else self.title


@dataclass(frozen=True)
class Table:
    """Rows are dicts keyed by column key; `totals` (optional) is one more row, kept apart so
    renderers can style it and data exports can leave it out."""

    name: str  # short, used as the sheet name (31 characters at most in xlsx)
    title: str
    columns: list[Column]
    rows: list[dict[str, Value]]
    totals: dict[str, Value] | None = None
    note: str | None = None


@dataclass(frozen=True)
class Amount:
    """A headline figure that stays a number in spreadsheets (with a display format and its unit
    beside it) and prints as text elsewhere, e.g. 539.66 tCO2e or $12,767.30."""

    value: float
    decimals: int = 0
    unit: str = ""
    usd: bool = False
    detail: str = ""  # printed after the figure, e.g. "($268 per tCO2e)"

    def text(self) -> str:
        figure = f"{self.value:,.{self.decimals}f}"
        figure = f"${figure}" if self.usd else figure
        parts = [figure, self.unit, self.detail]
        return " ".join(p for p in parts if p)


FactValue = str | Amount


def fact_text(value: FactValue) -> str:
    return value.text() if isinstance(value, Amount) else value


@dataclass(frozen=True)
class Facts:
    """A block of labelled values (a certificate's headline figures, a compliance summary)."""

    title: str
    items: list[tuple[str, FactValue]]
    emphasis: bool = False


@dataclass(frozen=True)
class Note:
    title: str | None
    text: str
    warning: bool = False


Section = Facts | Table | Note


@dataclass(frozen=True)
class Document:
    title: str
    subtitle: str
    # Report metadata: id, organisation, period, generated at (printed in the header, first sheet).
    meta: list[tuple[str, str]]
    sections: list[Section]
    sources: list[str] = field(default_factory=list)
    # Structured data for the json format (plain JSON types only).
    data: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> list[Table]:
        return [s for s in self.sections if isinstance(s, Table)]


def format_value(value: Value, column: Column) -> str:
    """A value as printed in the pdf (xlsx keeps numbers as numbers)."""
    if value is None or value == "":
        return DASH
    if column.kind in ("number", "integer", "usd", "percent") and isinstance(value, int | float):
        decimals = 0 if column.kind == "integer" else column.decimals
        text = f"{value:,.{decimals}f}"
        if column.kind == "usd":
            return f"${text}"
        if column.kind == "percent":
            return f"{text}%"
        return text
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def number(value: float, decimals: int = 0) -> str:
    return f"{value:,.{decimals}f}"
