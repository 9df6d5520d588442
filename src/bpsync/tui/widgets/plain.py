"""Widgets that never read user text as markup.

Textual renders a `str` given to a DataTable cell, a Static or a notification as console markup,
so a property called "[bold]Annex[/]" or a file named "bills[fixed].csv" would change style or
vanish. Names, ids, file names, cell values and service messages come from users: these widgets
turn plain strings into `rich.text.Text` (styled Text passed in is kept as it is)."""

from __future__ import annotations

from typing import Any

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
