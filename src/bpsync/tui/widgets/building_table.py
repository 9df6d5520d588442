"""The portfolio's table of buildings: shows `bpsync.building_table` rows filtered by a search
term, sorted by any column (a key cycles the column, a click on a heading sorts by it), in SI or
US units. Rebuilding is cheap (200 rows in milliseconds) and at most every REFRESH seconds while
results stream in, so the cursor and the sort stay put as columns fill."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from bpsync import building_table as BT
from bpsync.building_table import BuildingRow
from bpsync.tui.widgets.plain import PlainTable
from bpsync.units import Units

REFRESH = 0.2  # seconds between rebuilds while results arrive
NAME_WIDTH = 24
ARROWS = {False: " ▲", True: " ▼"}


class BuildingTable(PlainTable):
    DEFAULT_CSS = """
    BuildingTable { height: 1fr; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.rows_by_id: dict[str, BuildingRow] = {}
        self.term = ""
        self.sort_key = "building"
        self.descending = False
        self.units: Units = "si"
        self.shown: list[BuildingRow] = []  # the visible rows, in order
        self._shown_ids: set[str] = set()
        self._scheduled = False
        self._headings: tuple[tuple[str, ...], int] | None = None

    # --- what is shown ---------------------------------------------------------------------------

    def put(self, rows: Iterable[BuildingRow], *, now: bool = False) -> None:
        """Add or replace rows (by building id). A row shown whose place cannot change (same
        sort value, still matching the filter) is updated in place; otherwise the table is
        rebuilt soon (or `now`): filling 200 rows' columns never re-sorts 400 times."""
        order_changed = now
        by = BT.sort_key(self.sort_key, self.units)
        for row in rows:
            old = self.rows_by_id.get(row.building_id)
            self.rows_by_id[row.building_id] = row
            if (
                old is not None
                and row.building_id in self._shown_ids
                and by(old) == by(row)
                and BT.matches(row, self.term)
            ):
                self._update_in_place(old, row)
            elif old is not None or BT.matches(row, self.term):
                order_changed = True
        if order_changed:
            self.schedule(now)

    def _update_in_place(self, old: BuildingRow, row: BuildingRow) -> None:
        before, after = BT.cells(old, self.units), BT.cells(row, self.units)
        numeric = {c.key for c in BT.COLUMNS if c.numeric}
        for key, text in after.items():
            if key != "building" and text != before[key]:
                value = Text(text, justify="right") if key in numeric else text
                self.update_cell(row.building_id, key, value)
        self.shown = [row if r.building_id == row.building_id else r for r in self.shown]

    def schedule(self, now: bool = False) -> None:
        if now:
            self.rebuild()
        elif not self._scheduled:
            self._scheduled = True
            self.set_timer(REFRESH, self.rebuild)

    def set_view(
        self,
        *,
        term: str | None = None,
        sort_key: str | None = None,
        descending: bool | None = None,
        units: Units | None = None,
    ) -> None:
        self.term = self.term if term is None else term
        self.sort_key = self.sort_key if sort_key is None else sort_key
        self.descending = self.descending if descending is None else descending
        self.units = self.units if units is None else units
        self.rebuild()

    def sort_by(self, key: str) -> None:
        """Sort by `key`; again on the same column reverses the direction."""
        same = key == self.sort_key
        self.set_view(sort_key=key, descending=not self.descending if same else False)

    def next_sort(self) -> None:
        keys = BT.KEYS
        self.sort_by(keys[(keys.index(self.sort_key) + 1) % len(keys)])

    def headings(self) -> tuple[str, ...]:
        out = []
        for column in BT.COLUMNS:
            text = column.heading(self.units)
            if column.key == self.sort_key:
                text += ARROWS[self.descending]
            out.append(text)
        return tuple(out)

    def rebuild(self) -> None:
        self._scheduled = False
        selected = self.selected()
        self.shown = BT.visible(
            self.rows_by_id.values(), self.term, self.sort_key, self.descending, self.units
        )
        self._shown_ids = {r.building_id for r in self.shown}
        headings = self.headings()
        # The name column is as wide as the longest name shown, up to NAME_WIDTH (cut with …).
        width = min(NAME_WIDTH, max([len(headings[0]), *(len(r.building) for r in self.shown)]))
        if (headings, width) != self._headings:
            self.clear(columns=True)
            for column, text in zip(BT.COLUMNS, headings, strict=True):
                label = Text(text, justify="right" if column.numeric else "left")
                self.add_column(
                    label, key=column.key, width=width if column.key == "building" else None
                )
            self._headings = (headings, width)
        else:
            self.clear()
        for row in self.shown:
            cells = BT.cells(row, self.units)
            if len(cells["building"]) > width:
                cells["building"] = cells["building"][: width - 1] + "…"
            self.add_row(
                *(
                    Text(cells[c.key], justify="right") if c.numeric else cells[c.key]
                    for c in BT.COLUMNS
                ),
                key=row.building_id,
            )
        if selected is not None and selected.building_id in self.rows_by_id:
            index = next(
                (i for i, r in enumerate(self.shown) if r.building_id == selected.building_id), 0
            )
            self.move_cursor(row=index, animate=False)

    def selected(self) -> BuildingRow | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.rows_by_id.get(str(key))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))
