"""Portfolio: every property, fetched a page at a time as the table scrolls; filters by type and
country (the service's `filter[...]`), sort, a search over name/reference/address, and archive."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Input, Select, Static

from bpsync import building_table as BT
from bpsync.building_table import BuildingRow
from bpsync.client.models import Property
from bpsync.compliance import ComplianceOutlook
from bpsync.tui.context import UnitsChanged
from bpsync.tui.format import PROPERTY_TYPES, SORTS, matches, money, property_row
from bpsync.tui.messages import ArchiveDone, PropertiesPage
from bpsync.tui.screens.base import AppScreen, ConfirmScreen, near_end
from bpsync.tui.widgets.building_table import BuildingTable
from bpsync.tui.widgets.country import CountryInput
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.plain import PlainTable, right
from bpsync.tui.widgets.topbar import TopBar
from bpsync.units import Units, label

if TYPE_CHECKING:
    from bpsync.tui.widgets.export import TableContent


def columns(units: Units) -> tuple[Any, ...]:
    return (
        "Name",
        "Type",
        "City",
        "Country",
        right("Bldgs"),
        right(f"GFA {label('area', units)}"),
        "Status",
    )


# Start fetching the next page when the cursor or the scroll position is this close to the end.
PREFETCH_ROWS = 10
SEARCH_PAGE_SIZE = 200  # a search scans every page; the biggest pages cost the fewest requests
ARCHIVING = (
    "It leaves the active dashboards and portfolio benchmarks; its history is kept. "
    "Archiving cannot be undone here."
)


def status_line(shown: int, total: int | None, term: str, scanned: int, loading: bool) -> str:
    """Under the table: how many rows of how many (None: not known yet), or how many matches of
    how many scanned, and whether more are loading."""
    if term:
        text = f"{shown} match(es) for “{term}”"
        if total:
            text += f" · scanned {scanned or shown} of {total}"
    else:
        text = f"{shown} of {total} properties" if total is not None else ""
    if loading:
        text += " · loading…"
    return text


def whole_portfolio(params: dict[str, Any]) -> bool:
    """No filter narrows the list: its first page may set the default units (US when mostly
    US)."""
    return not (params.get("type") or params.get("country"))


def redraw(table: DataTable[Any], props: Iterable[Property], units: Units) -> None:
    """The property list again in `units` (the GFA column), from what was fetched."""
    cursor = table.cursor_row
    table.clear(columns=True)
    table.add_columns(*columns(units))
    for prop in props:
        table.add_row(*property_row(prop, units), key=prop.id)
    if table.row_count:
        table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)


class PortfolioFilters(Horizontal):
    """The search, the service's filters (use type, country) and the sort, above the table."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="/ search", id="search", compact=True)
        yield Select([(t, t) for t in PROPERTY_TYPES], prompt="any type", id="type", compact=True)
        yield CountryInput(id="country")
        yield Select(list(SORTS), value="name", allow_blank=False, id="sort", compact=True)

    def query_params(self) -> dict[str, Any]:
        """The filters and sort as the service's query parameters."""
        type_ = self.query_one("#type", Select).value
        return {
            "type": type_ if isinstance(type_, str) else None,
            # half a code is no filter: never sent (the service would answer 422)
            "country": self.query_one("#country", CountryInput).code,
            "sort": self.query_one("#sort", Select).value,
        }

    @property
    def search_term(self) -> str:
        return self.query_one("#search", Input).value.strip()

    def next_sort(self) -> None:
        select = self.query_one("#sort", Select)
        values = [value for _, value in SORTS]
        current = values.index(str(select.value)) if select.value in values else -1
        select.value = values[(current + 1) % len(values)]


class PortfolioScreen(AppScreen):
    HELP_TITLE = "Portfolio"
    HELP = (
        "Properties of the organisation in the signed-in environment. More rows load as you scroll. "
        "Filters and sort are applied by the service; the search looks at name, reference, "
        "address and id, scanning every page (the service has no text search). Enter opens a "
        "property; archive asks first."
    )
    AUTO_FOCUS = "#properties"
    BINDINGS = [
        Binding("slash", "focus_search", "Search", id="portfolio.search"),
        Binding("f", "focus_filters", "Filter", id="portfolio.filter"),
        Binding("s", "next_sort", "Sort", id="portfolio.sort"),
        Binding("a", "archive", "Archive", id="portfolio.archive"),
        Binding("r", "reload", "Reload", id="portfolio.reload"),
        Binding("b", "app.section('benchmarks')", "Benchmarks", id="portfolio.benchmarks"),
        Binding("t", "app.section('buildings')", "Buildings", id="portfolio.buildings"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0
        self.page = 0
        self.total_pages: int | None = None
        self.total = 0
        self.loading = False
        self.rows: dict[str, Property] = {}
        self.applied: tuple[Any, ...] | None = None  # the query the table shows

    def compose(self) -> ComposeResult:
        yield TopBar("Portfolio")
        yield PortfolioFilters(id="filters", classes="toolbar")
        yield PlainTable(id="properties", cursor_type="row", zebra_stripes=True)
        yield Static("", id="status", classes="statusline")
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        table = self.query_one("#properties", DataTable)
        table.add_columns(*columns(self.bpsync.units))
        table.focus()
        self.watch(table, "scroll_y", lambda _: self._maybe_more(), init=False)
        self.reload()

    # --- the query -------------------------------------------------------------------------------

    def query_params(self) -> dict[str, Any]:
        return self.query_one(PortfolioFilters).query_params()

    @property
    def search_term(self) -> str:
        return self.query_one(PortfolioFilters).search_term

    def reload(self) -> None:
        """Start the list again from page 1 (filters, sort or search changed)."""
        self.applied = (tuple(self.query_params().items()), self.search_term)
        self.generation += 1
        self.page = 0
        self.total_pages = None
        self.total = 0
        self.loading = False
        self.rows.clear()
        self.query_one("#properties", DataTable).clear()
        self.inline("")
        self.load_more()

    def load_more(self) -> None:
        if self.loading or (self.total_pages is not None and self.page >= self.total_pages):
            return
        self.loading = True
        if self.search_term:
            self.scan(self.generation, self.query_params(), self.search_term)
        else:
            self.fetch(self.generation, self.page + 1, self.query_params())
        self._status()

    @work(exclusive=True, group="portfolio", exit_on_error=False)
    async def fetch(self, generation: int, page: int, params: dict[str, Any]) -> None:
        size = self.bpsync.page_size
        result = await self.guarded(
            "Properties", self.client.properties.list(page=page, per_page=size, **params)
        )
        if result is None:
            self.loading = False
            return
        meta = result.meta
        self.post_message(
            PropertiesPage(generation, result.items, meta.page, meta.total, meta.total_pages)
        )

    @work(exclusive=True, group="portfolio", exit_on_error=False)
    async def scan(self, generation: int, params: dict[str, Any], term: str) -> None:
        """Search: walk every page, posting the matches of each as it arrives."""
        pages = self.client.properties.list(per_page=SEARCH_PAGE_SIZE, **params).pages()
        scanned = 0

        async def walk() -> None:
            nonlocal scanned
            async for page in pages:
                scanned += len(page.items)
                found = [p for p in page.items if matches(p, term)]
                self.post_message(
                    PropertiesPage(
                        generation,
                        found,
                        page.meta.page,
                        page.meta.total,
                        page.meta.total_pages,
                        scanned=scanned,
                    )
                )

        if await self.guarded("Search", walk()) is None:
            self.loading = False

    def on_properties_page(self, message: PropertiesPage) -> None:
        if message.generation != self.generation:
            return  # an answer to a query that has since changed
        table = self.query_one("#properties", DataTable)
        for prop in message.items:
            if prop.id in self.rows:
                continue
            self.rows[prop.id] = prop
            table.add_row(*property_row(prop, self.bpsync.units), key=prop.id)
        self.page = message.page
        self.total_pages = message.total_pages
        self.total = message.total
        searching = bool(message.scanned)
        if message.page == 1 and not searching and whole_portfolio(self.query_params()):
            self.bpsync.follow_portfolio_units(p.address.country for p in message.items)
        self.loading = searching and message.page < message.total_pages
        self._status(message.scanned)
        if not searching:
            # Judge "near the end" once the table has laid out its new rows.
            self.call_after_refresh(self._maybe_more)

    def on_units_changed(self, message: UnitsChanged) -> None:
        redraw(self.query_one("#properties", DataTable), self.rows.values(), message.units)

    def _status(self, scanned: int = 0) -> None:
        total = self.total if self.total_pages is not None else None  # None: no page yet
        text = status_line(len(self.rows), total, self.search_term, scanned, self.loading)
        self.query_one("#status", Static).update(Text(text))

    # --- loading more as the table scrolls -------------------------------------------------------

    @on(DataTable.RowHighlighted, "#properties")
    def _maybe_more(self) -> None:
        if near_end(self.query_one("#properties", DataTable), PREFETCH_ROWS):
            self.load_more()

    @on(DataTable.RowSelected, "#properties")
    def _open(self, event: DataTable.RowSelected) -> None:
        prop = self.rows.get(str(event.row_key.value))
        if prop is not None:
            from bpsync.tui.screens.detail import PropertyScreen

            self.app.push_screen(PropertyScreen(prop.id, prop.name))

    # --- filters ---------------------------------------------------------------------------------

    @on(Select.Changed, "#type")
    @on(Select.Changed, "#sort")
    def _filters_changed(self) -> None:
        # Selects also announce their first value while mounting: only a real change reloads.
        if self.applied != (tuple(self.query_params().items()), self.search_term):
            self.reload()

    @on(Input.Submitted, "#search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.reload()
        self.query_one("#properties", DataTable).focus()

    @on(Input.Submitted, "#country")
    def _country_done(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self.query_one("#country", CountryInput).problem
        if problem:  # stay in the field and say what it takes
            self.inline(problem)
            return
        self.inline("", error=False)
        self._filters_changed()
        self.query_one("#properties", DataTable).focus()

    @on(Input.Changed, "#country")
    def _country(self, event: Input.Changed) -> None:
        if len(event.value.strip()) in (0, 2):
            self._filters_changed()

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_focus_filters(self) -> None:
        self.query_one("#type", Select).focus()

    def action_next_sort(self) -> None:
        self.query_one(PortfolioFilters).next_sort()

    def action_reload(self) -> None:
        self.reload()

    def action_back(self) -> None:
        self.query_one("#properties", DataTable).focus()

    # --- archive ---------------------------------------------------------------------------------

    def current(self) -> Property | None:
        table = self.query_one("#properties", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return self.rows.get(str(key.value))

    def action_archive(self) -> None:
        prop = self.current()
        if prop is None:
            return
        if prop.status.value == "archived":
            self.inline(f"{prop.name} is already archived.")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.archive(prop.id)

        self.app.push_screen(ConfirmScreen(f"Archive {prop.name}?", ARCHIVING), answered)

    @work(exclusive=True, group="archive", exit_on_error=False)
    async def archive(self, property_id: str) -> None:
        result = await self.guarded("Archive", self.client.properties.archive(property_id))
        if result is not None:
            self.post_message(ArchiveDone(result))

    def on_archive_done(self, message: ArchiveDone) -> None:
        result = message.result
        prop = self.rows.get(result.id)
        if prop is None:
            return
        updated = prop.model_copy(update={"status": result.status})
        self.rows[result.id] = updated
        table = self.query_one("#properties", DataTable)
        row = property_row(updated, self.bpsync.units)
        table.update_cell(result.id, table.ordered_columns[-1].key, row[-1])
        self.notify(f"Archived {prop.name}.")
        self.inline(
            f"Archived {prop.name} at {result.archived_at:%Y-%m-%d %H:%M} UTC.", error=False
        )


# --- the table of buildings (issue 28) -----------------------------------------------------------


FLUSH = 1.0  # seconds between batches of results: each redraws the table (~0.1 s at 200 rows)


@dataclass
class BuildingsListed(Message, bubble=False):
    """Buildings of some properties (the list phase), for the load `generation`."""

    generation: int
    rows: list[BuildingRow]


@dataclass
class BuildingsUpdated(Message, bubble=False):
    """Benchmark figures (a row) or compliance outlooks of some buildings, by building id."""

    generation: int
    rows: list[BuildingRow]
    outlooks: dict[str, ComplianceOutlook]


@dataclass
class BuildingsPhase(Message, bubble=False):
    generation: int
    phase: str  # "listed" | "done"


class BuildingsScreen(AppScreen):
    HELP_TITLE = "Buildings"
    HELP = (
        "Every building of the portfolio with its floor area, EUI, carbon intensity, svc score "
        "(ⓘ: why there is none, under the table), data-quality grade and the city law that "
        "applies (LL97 in New York City, BERDO in Boston) with its status and projected yearly "
        "penalty now and in the next period. Compliance figures hold the last complete year's "
        "emissions constant. Type to filter (building, property, city, country, use); s or a "
        "click on a heading sorts, S reverses; u switches SI/US units; e exports the table as "
        "shown to CSV and XLSX; enter opens the building's benchmarks."
    )
    AUTO_FOCUS = "#buildings"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="buildings.filter"),
        Binding("s", "next_sort", "Sort", id="buildings.sort"),
        Binding("S", "reverse", "Reverse", id="buildings.reverse", show=False),
        Binding("u", "app.toggle_units", "Units", id="buildings.units"),
        Binding("e", "export", "Export", id="buildings.export"),
        Binding("r", "reload", "Reload", id="buildings.reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0
        self.phase = ""
        self.benchmarked = 0
        self.assessed = 0

    def compose(self) -> ComposeResult:
        yield TopBar("Buildings")
        yield Input(placeholder="/ filter: name, city, country, use", id="filter", compact=True)
        yield BuildingTable(id="buildings")
        yield Static("", id="status", classes="statusline")
        yield Static("", id="detail")
        yield Static("", id="note")
        yield AppFooter()

    @property
    def table(self) -> BuildingTable:
        return self.query_one("#buildings", BuildingTable)

    def on_mount(self) -> None:
        self.table.set_view(units=self.bpsync.units)
        self.reload()

    def reload(self) -> None:
        self.generation += 1
        self.phase, self.benchmarked, self.assessed = "", 0, 0
        self.table.rows_by_id.clear()
        self.table.rebuild()
        self.load(self.generation, self.bpsync.clock().date())
        self._status()

    @work(exclusive=True, group="buildings", exit_on_error=False)
    async def load(self, generation: int, today: dt.date) -> None:
        client = self.client
        rows: list[BuildingRow] = []

        async def listed() -> None:
            loop = asyncio.get_running_loop()
            sent, last = 0, 0.0
            async for chunk in BT.list_rows(client):
                rows.extend(chunk)
                # The first buildings at once, then in batches (each batch redraws the table).
                if not sent or loop.time() - last >= FLUSH:
                    self.post_message(BuildingsListed(generation, rows[sent:]))
                    sent, last = len(rows), loop.time()
            if sent < len(rows):
                self.post_message(BuildingsListed(generation, rows[sent:]))

        if await self.guarded("Buildings", listed()) is None and not rows:
            return
        self.post_message(BuildingsPhase(generation, "listed"))

        # Results go to the screen in batches (every FLUSH seconds), not one message each.
        scored: list[BuildingRow] = []
        assessed: dict[str, ComplianceOutlook] = {}
        loop = asyncio.get_running_loop()
        flushed = loop.time()

        def flush(force: bool = False) -> None:
            nonlocal scored, assessed, flushed
            if (scored or assessed) and (force or loop.time() - flushed >= FLUSH):
                self.post_message(BuildingsUpdated(generation, scored, assessed))
                scored, assessed, flushed = [], {}, loop.time()

        async def scores() -> None:
            async for row in BT.benchmarks(client, rows):
                scored.append(row)
                flush()

        async def laws() -> None:
            async for row in BT.outlooks(client, rows, today, self.bpsync.outlooks):
                assessed[row.building_id] = row.outlook  # type: ignore[assignment]
                flush()

        await self.guarded("Scores", asyncio.gather(scores(), laws()))
        flush(force=True)
        self.post_message(BuildingsPhase(generation, "done"))

    def on_buildings_listed(self, message: BuildingsListed) -> None:
        if message.generation == self.generation:
            self.table.put(message.rows)
            self._status()

    def on_buildings_updated(self, message: BuildingsUpdated) -> None:
        if message.generation != self.generation:
            return
        known = self.table.rows_by_id
        updated = {
            r.building_id: replace(r, outlook=known[r.building_id].outlook)
            for r in message.rows
            if r.building_id in known
        }
        for building_id, outlook in message.outlooks.items():
            row = updated.get(building_id) or known.get(building_id)
            if row is not None:
                updated[building_id] = replace(row, outlook=outlook)
        self.benchmarked += len(message.rows)
        self.assessed += len(message.outlooks)
        self.table.put(updated.values())
        self._status()

    def on_buildings_phase(self, message: BuildingsPhase) -> None:
        if message.generation != self.generation:
            return
        self.phase = message.phase
        if message.phase == "listed":
            self.bpsync.follow_portfolio_units(r.country for r in self.table.rows_by_id.values())
        else:
            self.table.schedule(now=True)
        self._status()

    def on_units_changed(self, message: UnitsChanged) -> None:
        self.table.set_view(units=message.units)
        self._status()

    def _status(self) -> None:
        table = self.table
        total = len(table.rows_by_id)
        text = f"{total} buildings"
        if table.term:
            shown = sum(1 for r in table.rows_by_id.values() if BT.matches(r, table.term))
            text = f"{shown} of {total} buildings match “{table.term}”"
        column = next(c for c in BT.COLUMNS if c.key == table.sort_key)
        text += f" · sorted by {column.heading(table.units) or column.key}"
        text += " ▼" if table.descending else " ▲"
        text += " · US units" if table.units == "us" else " · SI units"
        if self.phase != "done":
            covered = sum(1 for r in table.rows_by_id.values() if r.law)
            text += f" · loading: scores {self.benchmarked}/{total}"
            text += f", compliance {self.assessed}/{total}" if covered else ""
        self.query_one("#status", Static).update(Text(text))
        self._detail()

    @on(DataTable.RowHighlighted, "#buildings")
    def _highlighted(self) -> None:
        self._detail()

    def _detail(self) -> None:
        row = self.table.selected()
        self.query_one("#detail", Static).update(Text(detail_line(row) if row else ""))

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self.table.set_view(term=event.value.strip())
        self._status()

    @on(Input.Submitted, "#filter")
    def _filtered(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    @on(DataTable.RowSelected, "#buildings")
    def _open(self, event: DataTable.RowSelected) -> None:
        row = self.table.rows_by_id.get(str(event.row_key.value))
        if row is not None:
            from bpsync.tui.screens.benchmarks import BenchmarksScreen

            self.app.push_screen(BenchmarksScreen(row.building_id, row.building))

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_next_sort(self) -> None:
        self.table.next_sort()
        self._status()

    def action_reverse(self) -> None:
        self.table.set_view(descending=not self.table.descending)
        self._status()

    def action_reload(self) -> None:
        self.bpsync.outlooks.clear()
        self.reload()

    def action_back(self) -> None:
        self.table.focus()

    def export_content(self) -> TableContent | None:
        """The visible rows as numbers in the units shown (not the rounded text)."""
        from bpsync.tui.widgets.export import TableContent

        table = self.table
        if not table.shown:
            return None
        headers = [c.heading(table.units) for c in BT.COLUMNS]
        headers[-2:] = ["Penalty now (USD/yr)", "Penalty next (USD/yr)"]
        rows = tuple(
            tuple(BT.values(r, table.units)[c.key] for c in BT.COLUMNS) for r in table.shown
        )
        return TableContent("Buildings", tuple(headers), rows)


def detail_line(row: BuildingRow) -> str:
    """Under the table, the highlighted building: why it has no score, and its law's figures
    with the basis of the projection."""
    parts = [f"{row.building} ({row.property}, {row.city})"]
    if row.benchmarked and row.svc_score is None and row.score_note:
        parts.append(f"no svc score: {row.score_note}")
    outlook = row.outlook
    if outlook is None:
        if row.law:
            parts.append(f"{row.law}: loading…")
    elif not outlook.covered or not outlook.periods:
        if outlook.law:
            parts.append(f"{outlook.law} {outlook.status}: {outlook.reason}")
    else:
        figures = ", ".join(
            f"{p.label} {money(p.penalty)}/yr" for p in (outlook.current(), outlook.next()) if p
        )
        parts.append(f"{outlook.law} {outlook.status}: {figures}, {outlook.basis_text}")
    return " · ".join(parts)
