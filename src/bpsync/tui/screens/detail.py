"""Drill-down: a property and its buildings, then a building with its fields, use types (and
their GFA sum), meters and readings (newest first, anomaly flags highlighted, locked readings
marked from the building's lock), and reading deletion with confirmation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from bpsync.client import errors as E
from bpsync.client.models import Building, Meter, Property, Reading
from bpsync.tui.context import UnitsChanged
from bpsync.tui.format import DASH, day, gfa_sum, is_locked, moment, number, reading_row
from bpsync.tui.messages import (
    BuildingLoaded,
    BuildingsLoaded,
    PropertyLoaded,
    ReadingDeleted,
    ReadingsPage,
)
from bpsync.tui.screens.base import AppScreen, ConfirmScreen, failure, near_end
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.performance import PerformancePanel, compliance_line
from bpsync.tui.widgets.plain import PlainTable, fields_table, right
from bpsync.tui.widgets.topbar import TopBar

READING_COLUMNS = ("Start", "End", right("Consumption"), "Unit", right("Cost"), "Flags", "Lock")
READINGS_PAGE = 50


def building_fields(b: Building, locked_through: dt.date | None) -> list[tuple[str, str]]:
    """The building's fields as (label, value) rows, the lock among them."""
    return [
        ("Primary use", b.primary_use_type),
        ("GFA", f"{number(b.gfa_m2)} m² ({number(b.gfa_sqft)} ft²)"),
        ("Built", str(b.year_built)),
        ("Floors", str(b.floors)),
        ("Occupancy", f"{number(b.occupancy_pct)} %" if b.occupancy_pct is not None else DASH),
        (
            "Hours/week",
            number(b.operating_hours_week) if b.operating_hours_week is not None else DASH,
        ),
        ("NLA", f"{number(b.nla_m2)} m²" if b.nla_m2 is not None else DASH),
        ("Data quality", b.data_quality_grade.value),
        ("Lock", f"through {day(locked_through)}" if locked_through else "none"),
        ("Id", b.id),
    ]


def use_types_text(b: Building) -> str:
    """The use types and their areas, with whether they add up to the GFA (markup: bold sum)."""
    if not b.use_types:
        return f"Use types: {b.primary_use_type} (no breakdown)"
    parts = " + ".join(f"{u.type} {number(u.gfa_m2)}" for u in b.use_types)
    total = gfa_sum(b.use_types)
    check = "= GFA" if abs(total - b.gfa_m2) < 0.01 else f"≠ GFA {number(b.gfa_m2)}"
    return f"Use types: {parts} = [b]{number(total)} m²[/b] {check}"


def readings_title(
    meter: Meter | None, shown: Collection[Reading], total: int, locked_through: dt.date | None
) -> Text:
    """Above the readings: whose they are, how many of how many are shown, how many locked."""
    name = (meter.name or meter.type.value) if meter else ""
    locked = sum(1 for r in shown if is_locked(r, locked_through))
    lock = f" · {locked} locked" if locked else ""
    return Text(f"Readings of {name}, newest first: {len(shown)} of {total}{lock}")


BUILDING_HELP = (
    "The building's fields and use types (their areas must add up to the GFA), the city "
    "emissions law that covers it (LL97, BERDO) on one line, and two tabs; t switches. "
    "Performance: the law's limit, emissions, excess and penalty per period to 2050 (a table "
    "and a chart), the EPC grade, pathway stranding years and scores (a missing one says "
    "why), and the EUI history. Meters & readings: the selected meter's readings, newest "
    "first. Yellow flags are anomalies (spike, drop), red is a negative reading. 🔒 marks "
    "readings the building's lock covers: they cannot be deleted. d deletes the highlighted "
    "reading after asking. h lists the highlighted meter's readings replaced by corrected "
    "bills (`bpsync import FILE --update`): when, who, the file, old and new figures."
)


def fill_meters(table: DataTable[Any], meters: Collection[Meter]) -> None:
    """The building's meters, one row each, keyed by id."""
    table.clear()
    for m in meters:
        table.add_row(
            m.name or m.id, m.type.value, m.unit, m.source, day(m.latest_reading_date), key=m.id
        )


def under_cursor(table: DataTable[Any], items: dict[str, Reading]) -> Reading | None:
    """The item of the row under the table's cursor (rows are keyed by id)."""
    if table.row_count == 0:
        return None
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
    return items.get(str(key.value))


def remark_locks(
    table: DataTable[Any], readings: dict[str, Reading], locked_through: dt.date | None
) -> None:
    """Re-mark the lock column after the lock moved (readings stay where they are)."""
    lock_column = table.ordered_columns[-1].key
    for reading_id, reading in readings.items():
        table.update_cell(reading_id, lock_column, reading_row(reading, locked_through)[-1])


class PropertyScreen(AppScreen):
    HELP_TITLE = "Property"
    HELP = "The property's details and its buildings. Enter opens a building."
    BINDINGS = [Binding("r", "reload", "Reload", id="property.reload")]

    def __init__(self, property_id: str, name: str = "") -> None:
        super().__init__()
        self.property_id = property_id
        self.title_text = name or property_id
        self.buildings: dict[str, Building] = {}

    def compose(self) -> ComposeResult:
        yield TopBar(f"Property · {self.title_text}")
        yield Static("Loading…", id="property-fields", classes="fields")
        yield Static("Buildings", classes="section-title")
        yield PlainTable(id="buildings", cursor_type="row", zebra_stripes=True)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#buildings", DataTable).add_columns(
            "Name", "Primary use", right("GFA m²"), "Built", right("Floors"), "Quality", "Status"
        )
        self.query_one("#buildings", DataTable).focus()
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(exclusive=True, group="property", exit_on_error=False)
    async def load(self) -> None:
        prop = await self.guarded("Property", self.client.properties.get(self.property_id))
        if prop is None:
            return
        self.post_message(PropertyLoaded(prop))
        items = await self.guarded(
            "Buildings", self.client.buildings.list(self.property_id, per_page=200).to_list()
        )
        if items is not None:
            self.post_message(BuildingsLoaded(self.property_id, items, len(items)))

    def on_property_loaded(self, message: PropertyLoaded) -> None:
        p: Property = message.prop
        a = p.address
        where = ", ".join(x for x in (a.street, a.city, a.state, a.postal_code, a.country) if x)
        rows = [
            ("Name", p.name),
            ("Type", p.type),
            ("Address", where),
            ("Status", p.status.value),
            ("Reference", p.internal_ref or DASH),
            ("Buildings", str(p.building_count)),
            ("Total GFA", f"{number(p.total_gfa_m2)} m²"),
            ("Id", p.id),
            ("Created", moment(p.created_at)),
            ("Updated", moment(p.updated_at)),
        ]
        self.query_one("#property-fields", Static).update(fields_table(rows))
        self.query_one(TopBar).title = f"Property · {p.name}"

    def on_buildings_loaded(self, message: BuildingsLoaded) -> None:
        table = self.query_one("#buildings", DataTable)
        table.clear()
        self.buildings = {b.id: b for b in message.items}
        for b in message.items:
            table.add_row(
                b.name,
                b.primary_use_type,
                right(number(b.gfa_m2)),
                str(b.year_built),
                right(str(b.floors)),
                b.data_quality_grade.value,
                b.status,
                key=b.id,
            )
        if not message.items:
            self.inline("This property has no buildings yet.", error=False)

    @on(DataTable.RowSelected, "#buildings")
    def _open(self, event: DataTable.RowSelected) -> None:
        building = self.buildings.get(str(event.row_key.value))
        if building is not None:
            self.app.push_screen(BuildingScreen(building.property_id, building.id, building.name))


class BuildingLinks:
    """The screens a building opens: its benchmarks (b), a report on it (g), and the highlighted
    meter's replaced readings (h, screens/history.py). Mixed into BuildingScreen."""

    if TYPE_CHECKING:
        app: Any
        building_id: str
        title_text: str
        building: Building | None
        meters: dict[str, Meter]
        meter_id: str | None

        def inline(self, text: str, error: bool = True) -> None: ...

    def action_benchmarks(self) -> None:
        from bpsync.tui.screens.benchmarks import BenchmarksScreen

        self.app.push_screen(BenchmarksScreen(self.building_id, self.title_text))

    def action_history(self) -> None:
        """h: the highlighted meter's replaced readings, from this machine's import journal."""
        from bpsync.tui.screens.history import ReplacementHistoryScreen

        meter = self.meters.get(self.meter_id or "")
        if meter is None:
            self.inline("No meter to show: this building has no meters yet, or they are loading.")
            return
        where = self.building.name if self.building else self.title_text
        self.app.push_screen(
            ReplacementHistoryScreen(meter.id, meter.name or meter.type.value, meter.unit, where)
        )

    def action_report(self) -> None:
        from bpsync.tui.screens.reports import ReportsScreen

        name = self.building.name if self.building else self.title_text
        self.app.push_screen(ReportsScreen(building_id=self.building_id, building_name=name))


class BuildingScreen(BuildingLinks, AppScreen):
    HELP_TITLE = "Building"
    HELP = BUILDING_HELP
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # for the performance panel
    BINDINGS = [
        Binding("t", "switch_tab", "Switch tab", id="building.switch_tab"),
        Binding("d", "delete", "Delete reading", id="building.delete"),
        Binding("b", "benchmarks", "Benchmarks", id="building.benchmarks"),
        Binding("g", "report", "Report", id="building.report"),
        Binding("r", "reload", "Reload", id="building.reload"),
        Binding("h", "history", "Corrections history", id="building.history"),
    ]

    def __init__(self, property_id: str, building_id: str, name: str = "") -> None:
        super().__init__()
        self.property_id = property_id
        self.building_id = building_id
        self.title_text = name or building_id
        self.building: Building | None = None
        self.locked_through: dt.date | None = None
        self.meters: dict[str, Meter] = {}
        self.meter_id: str | None = None
        self.readings: dict[str, Reading] = {}
        self.readings_page = 0
        self.readings_pages: int | None = None
        self.readings_total = 0
        self.loading_readings = False

    def compose(self) -> ComposeResult:
        yield TopBar(f"Building · {self.title_text}")
        yield Static("Loading…", id="building-fields", classes="fields")
        yield Static("", id="use-types")
        yield Static(compliance_line(None), id="compliance-line")
        with TabbedContent(initial="performance", id="building-tabs"):
            with TabPane("Performance", id="performance"):
                yield PerformancePanel(id="performance-panel")
            with TabPane("Meters & readings", id="readings-tab"):
                yield PlainTable(id="meters", cursor_type="row")
                yield Static("", id="readings-title", classes="section-title")
                yield PlainTable(id="readings", cursor_type="row", zebra_stripes=True)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#meters", DataTable).add_columns(
            "Meter", "Type", "Unit", "Source", "Latest reading"
        )
        readings = self.query_one("#readings", DataTable)
        readings.add_columns(*READING_COLUMNS)
        self.watch(readings, "scroll_y", lambda _: self._maybe_more(), init=False)
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(exclusive=True, group="building", exit_on_error=False)
    async def load(self) -> None:
        c = self.client
        building = await self.guarded(
            "Building", c.buildings.get(self.property_id, self.building_id)
        )
        if building is None:
            return
        lock = await self.guarded("Lock", c.buildings.get_lock(self.building_id))
        meters = await self.guarded(
            "Meters", c.meters.list(self.building_id, per_page=200).to_list()
        )
        self.post_message(
            BuildingLoaded(building, lock.locked_through if lock else None, meters or [])
        )

    def on_building_loaded(self, message: BuildingLoaded) -> None:
        b = self.building = message.building
        self.locked_through = message.locked_through
        self.query_one(TopBar).title = f"Building · {b.name}"
        fields = building_fields(b, self.locked_through)
        self.query_one("#building-fields", Static).update(fields_table(fields))
        self.query_one("#use-types", Static).update(use_types_text(b))
        panel = self.query_one(PerformancePanel)
        panel.units = self.bpsync.units
        panel.load(self.client, b, self.bpsync.clock().date(), self.bpsync.outlooks)
        table = self.query_one("#meters", DataTable)
        self.meters = {m.id: m for m in message.meters}
        fill_meters(table, message.meters)
        if message.meters:
            self.show_meter(message.meters[0].id)
        else:
            self.query_one("#readings-title", Static).update("No meters yet.")

    # --- readings --------------------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#meters")
    def _meter(self, event: DataTable.RowHighlighted) -> None:
        meter_id = str(event.row_key.value)
        if meter_id != self.meter_id:
            self.show_meter(meter_id)

    def show_meter(self, meter_id: str) -> None:
        self.meter_id = meter_id
        self.readings.clear()
        self.readings_page = 0
        self.readings_pages = None
        self.loading_readings = False
        self.query_one("#readings", DataTable).clear()
        self.load_readings()

    def load_readings(self) -> None:
        if self.meter_id is None or self.loading_readings:
            return
        if self.readings_pages is not None and self.readings_page >= self.readings_pages:
            return
        self.loading_readings = True
        self.fetch_readings(self.meter_id, self.readings_page + 1)

    @work(exclusive=True, group="readings", exit_on_error=False)
    async def fetch_readings(self, meter_id: str, page: int) -> None:
        paginator = self.client.readings.list(
            self.building_id, meter_id, newest_first=True, page=page, per_page=READINGS_PAGE
        )
        result = await self.guarded("Readings", paginator)
        if result is None:
            self.loading_readings = False
            return
        m = result.meta
        self.post_message(ReadingsPage(meter_id, result.items, m.page, m.total, m.total_pages))

    def on_readings_page(self, message: ReadingsPage) -> None:
        if message.meter_id != self.meter_id:
            return
        table = self.query_one("#readings", DataTable)
        for r in message.items:
            if r.id not in self.readings:
                self.readings[r.id] = r
                table.add_row(*reading_row(r, self.locked_through), key=r.id)
        self.readings_page = message.page
        self.readings_pages = message.total_pages
        self.readings_total = message.total
        self.loading_readings = False
        self._readings_title()
        self.call_after_refresh(self._maybe_more)

    def _readings_title(self) -> None:
        meter = self.meters.get(self.meter_id or "")
        title = readings_title(
            meter, self.readings.values(), self.readings_total, self.locked_through
        )
        self.query_one("#readings-title", Static).update(title)

    def _maybe_more(self) -> None:
        # A hidden table is "near its end" at any size: read on only while it is shown.
        if self.query_one(TabbedContent).active != "readings-tab":
            return
        if near_end(self.query_one("#readings", DataTable), 5):
            self.load_readings()

    @on(DataTable.RowHighlighted, "#readings")
    def _reading(self) -> None:
        self._maybe_more()

    def current_reading(self) -> Reading | None:
        return under_cursor(self.query_one("#readings", DataTable), self.readings)

    def action_delete(self) -> None:
        reading = self.current_reading()
        if reading is None or self.meter_id is None:
            self.inline("Highlight a reading in the readings table first.")
            return
        if is_locked(reading, self.locked_through):
            # Locks only move forward, so the service would refuse: say why without asking it.
            self.inline(
                f"Reading {reading.start_date} → {reading.end_date} is locked: the building is "
                f"locked through {self.locked_through} (building_locked)."
            )
            return
        meter_id = self.meter_id

        def answered(yes: bool | None) -> None:
            if yes:
                self.delete(meter_id, reading.id)

        self.app.push_screen(
            ConfirmScreen(
                f"Delete the reading {reading.start_date} → {reading.end_date} "
                f"({number(reading.consumption, 1)} {reading.unit})?",
                "Benchmarks are recalculated without it. This cannot be undone.",
            ),
            answered,
        )

    @work(group="delete", exit_on_error=False)
    async def delete(self, meter_id: str, reading_id: str) -> None:
        try:
            await self.client.readings.delete(self.building_id, meter_id, reading_id)
        except E.LockedError as exc:
            self.post_message(failure("Delete refused", exc))
            if exc.locked_through:
                self.locked_through = dt.date.fromisoformat(str(exc.locked_through))
                self.app.call_later(self._remark_locks)
            return
        except (E.BPSyncError, ValueError) as exc:
            self.post_message(failure("Delete", exc))
            return
        self.post_message(ReadingDeleted(meter_id, reading_id))

    def _remark_locks(self) -> None:
        remark_locks(self.query_one("#readings", DataTable), self.readings, self.locked_through)
        self._readings_title()

    def on_reading_deleted(self, message: ReadingDeleted) -> None:
        reading = self.readings.pop(message.reading_id, None)
        if message.meter_id == self.meter_id:
            table = self.query_one("#readings", DataTable)
            if message.reading_id in table.rows:
                table.remove_row(message.reading_id)
            self.readings_total = max(0, self.readings_total - 1)
            self._readings_title()
        if reading is not None:
            self.inline(
                f"Deleted the reading {reading.start_date} → {reading.end_date}.", error=False
            )
            self.notify("Reading deleted.")

    # --- performance and elsewhere ---------------------------------------------------------------

    def on_performance_panel_loaded(self, message: PerformancePanel.Loaded) -> None:
        line = compliance_line(message.outlook)
        if message.problem and message.outlook is None:
            line = Text(f"Compliance: could not be read ({message.problem})")
        self.query_one("#compliance-line", Static).update(line)

    def on_units_changed(self, message: UnitsChanged) -> None:
        panel = self.query_one(PerformancePanel)
        panel.units = message.units
        panel.render_all()

    def action_switch_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = "readings-tab" if tabs.active == "performance" else "performance"
        self.query_one("#meters" if tabs.active == "readings-tab" else "#performance-panel").focus()
        self.call_after_refresh(self._maybe_more)
