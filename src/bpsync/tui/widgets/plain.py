"""Widgets that never read user text as markup.

Textual renders a `str` given to a DataTable cell, a Static or a notification as console markup,
so a property called "[bold]Annex[/]" or a file named "bills[fixed].csv" would change style or
vanish. Names, ids, file names, cell values and service messages come from users: these widgets
turn plain strings into `rich.text.Text` (styled Text passed in is kept as it is)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable


def plain(value: Any) -> Any:
    """A str as literal Text; anything else (Text, numbers, renderables) unchanged."""
    return Text(value) if isinstance(value, str) else value


def right(value: str) -> Text:
    """A number (or its column header) set flush right, so digits line up under their header."""
    return Text(value, justify="right")


class PlainTable(DataTable):
    """A DataTable whose string cells are shown literally."""

    def add_row(self, *cells: Any, **kwargs: Any) -> Any:
        return super().add_row(*(plain(c) for c in cells), **kwargs)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, plain(value), **kwargs)


def fields_table(rows: Sequence[tuple[str, Any]], columns: int = 2) -> Table:
    """Label/value pairs laid out in `columns` column pairs."""
    table = Table.grid(padding=(0, 2), expand=True)
    for _ in range(columns):
        table.add_column(style="bold", no_wrap=True)
        table.add_column(ratio=1)
    for i in range(0, len(rows), columns):
        cells: list[Any] = []
        for label, value in rows[i : i + columns]:
            cells += [label, plain(value)]  # values are names and ids users typed
        table.add_row(*cells)
    return table
