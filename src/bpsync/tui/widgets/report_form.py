"""The reports screen's request form (type and format, period, building or filters, folder) and
the rules it fills itself in by (issue 28): the period defaults to the last complete calendar
year in which the chosen building (or the organisation) has data, and buildings are chosen by
name, never by typing a `bld_` id."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Select

from bpsync.client import errors as E
from bpsync.client.models import Building, Meter, Property, ReportTemplate, ReportType
from bpsync.tui.format import PROPERTY_TYPES
from bpsync.tui.widgets.country import CountryInput

if TYPE_CHECKING:
    from bpsync.client.service import AsyncServiceClient

# Meters whose readings are not energy: they do not make a year's report possible.
NOT_ENERGY = frozenset(
    {"water", "waste_landfill", "waste_recycling", "waste_compost"}
)  # fmt: skip
MAX_METER_PAGES = 10  # an organisation's meters read for its default period (200 a page)
MAX_PROPERTIES = 500  # properties whose buildings are offered by name


def data_year(meters: Iterable[Meter], today: dt.date) -> int | None:
    """The last complete calendar year (one that ended before today) with energy data: the year
    of the newest energy reading, or last year if the data runs on past it; None without data.
    Any reading in the year is data, as for the service's compliance reports."""
    latest = [
        m.latest_reading_date
        for m in meters
        if m.latest_reading_date is not None and str(m.type) not in NOT_ENERGY
    ]
    if not latest:
        return None
    return min(today.year - 1, max(latest).year)


def default_period(today: dt.date) -> tuple[dt.date, dt.date]:
    """The last whole calendar year: valid for every type (whole months, one calendar year). The
    form narrows this to the last year with data once it has read the meters."""
    return year_period(today.year - 1)


def year_period(year: int) -> tuple[dt.date, dt.date]:
    """A calendar year: valid for every report type, LL97 and BERDO included."""
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def building_choices(
    found: Iterable[tuple[Property, Building]],
) -> list[tuple[str, str]]:
    """(label, building id) for the Building field, by name: "North Block · Back Bay
    Residences", or the name alone where building and property share it; sorted by label."""
    labels = []
    for prop, building in found:
        label = building.name if building.name == prop.name else f"{building.name} · {prop.name}"
        labels.append((label, building.id))
    return sorted(labels, key=lambda pair: (pair[0].casefold(), pair[1]))


def form_rows() -> ComposeResult:
    """The form's rows; Building and Filters are shown by the chosen type's scope."""
    with Horizontal(classes="form-row"):
        yield Label("Type", classes="form-label")
        yield Select([], prompt="report type", id="r-type", compact=True)
        yield Label("Format", classes="form-label")
        yield Select([], prompt="format", id="r-format", compact=True)
    with Horizontal(classes="form-row"):
        yield Label("Period", classes="form-label")
        yield Input(placeholder="YYYY-MM-DD", id="r-start", compact=True)
        yield Label("to", classes="form-label-short")
        yield Input(placeholder="YYYY-MM-DD", id="r-end", compact=True)
        yield Label("", id="r-period-note")
    with Horizontal(classes="form-row", id="row-building"):
        yield Label("Building", classes="form-label")
        yield Select([], prompt="choose a building", id="r-building", compact=True)
    with Horizontal(classes="form-row", id="row-filters"):
        yield Label("Filters", classes="form-label")
        yield Select([(t, t) for t in PROPERTY_TYPES], prompt="any use", id="r-ftype", compact=True)
        yield CountryInput(id="r-fcountry")
        yield Select([], prompt="template", id="r-template", compact=True)
    with Horizontal(classes="form-row"):
        yield Label("Save to", classes="form-label")
        yield Input(id="r-folder", compact=True)
        yield Button("Generate", id="r-generate", variant="primary", compact=True)


@dataclass(frozen=True)
class Scope:
    """What a report is about: one building, or the organisation (`building_id` None)."""

    building_id: str | None

    @property
    def key(self) -> str:
        return self.building_id or "organisation"


class ReportForm(Vertical):
    """The request form. It fills in its own choices: `start(client, today)` reads the buildings'
    names and the default period for the scope, and re-reads the period when the scope
    changes, unless the period was typed in."""

    DEFAULT_CSS = """
    ReportForm #r-period-note { width: auto; color: $text-muted; padding: 0 1 0 0; }
    """

    class NamesKnown(Message):
        """Buildings' names by id, for the screen's list."""

        def __init__(self, names: dict[str, str]) -> None:
            super().__init__()
            self.names = names

    class _PeriodFound(Message):
        def __init__(self, scope: Scope, year: int | None) -> None:
            super().__init__()
            self.scope, self.year = scope, year

    class _Choices(Message):
        def __init__(self, choices: list[tuple[str, str]], note: str) -> None:
            super().__init__()
            self.choices, self.note = choices, note

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.types: dict[str, ReportType] = {}
        self.client: AsyncServiceClient | None = None
        self.today = dt.date.today()
        self.years: dict[str, int | None] = {}  # scope key → its data year, once read
        self.auto_period: tuple[str, str] | None = None  # what the form itself last filled in
        self.names: dict[str, str] = {}
        self.period_note = ""

    def compose(self) -> ComposeResult:
        yield from form_rows()

    # --- filling itself in ---------------------------------------------------------------------

    def start(
        self, client: AsyncServiceClient, today: dt.date, building: tuple[str, str] | None
    ) -> None:
        """Read the buildings' names and the default period; `building` (id, name) is chosen
        first (opened from a building's screen)."""
        self.client, self.today = client, today
        if building is not None:
            building_id, name = building
            self.names[building_id] = name
            select = self.query_one("#r-building", Select)
            select.set_options([(Text(name or building_id), building_id)])  # names: no markup
            select.value = building_id
        self.fill_period(last=today.year - 1)
        self.load_names()
        self._scope_changed()

    @property
    def scope(self) -> Scope:
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        if chosen is not None and chosen.scope == "building":
            value = self.query_one("#r-building", Select).value
            return Scope(value if isinstance(value, str) else None)
        return Scope(None)

    def _scope_changed(self) -> None:
        scope = self.scope
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        if chosen is not None and chosen.scope == "building" and scope.building_id is None:
            return  # no building chosen yet: nothing to read
        if scope.key in self.years:
            self._use_year(scope, self.years[scope.key])
        elif self.client is not None:
            self.load_year(scope)

    @work(exclusive=True, group="report-form-year", exit_on_error=False)
    async def load_year(self, scope: Scope) -> None:
        assert self.client is not None
        meters: list[Meter] = []
        try:
            paginator = self.client.meters.list_all(building_id=scope.building_id, per_page=200)
            async for page in paginator.pages():
                meters += page.items
                if page.meta.page >= MAX_METER_PAGES:
                    break
        except (E.BPSyncError, ValueError):
            return  # the default stays last year; the request itself will say what is wrong
        self.post_message(self._PeriodFound(scope, data_year(meters, self.today)))

    @on(_PeriodFound)
    def _period_found(self, message: _PeriodFound) -> None:
        message.stop()
        self.years[message.scope.key] = message.year
        if message.scope == self.scope:
            self._use_year(message.scope, message.year)

    def _use_year(self, scope: Scope, year: int | None) -> None:
        if year is None:
            self.fill_period(self.today.year - 1, "no data found: last year")
        else:
            self.fill_period(year, "last full year with data")

    def fill_period(self, last: int, note: str = "") -> None:
        """Put calendar year `last` in the period, unless someone typed another period."""
        start = self.query_one("#r-start", Input)
        end = self.query_one("#r-end", Input)
        if self.auto_period is not None and (start.value, end.value) != self.auto_period:
            return
        first, final = year_period(last)
        start.value, end.value = first.isoformat(), final.isoformat()
        self.auto_period = (start.value, end.value)
        self.period_note = note
        self.query_one("#r-period-note", Label).update(note)

    @on(Input.Changed, "#r-start, #r-end")
    def _period_typed(self) -> None:
        typed = (self.query_one("#r-start", Input).value, self.query_one("#r-end", Input).value)
        if self.auto_period is not None and typed != self.auto_period:
            self.query_one("#r-period-note", Label).update("")  # no longer the form's choice

    @work(exclusive=True, group="report-form-names", exit_on_error=False)
    async def load_names(self) -> None:
        assert self.client is not None
        found: list[tuple[Property, Building]] = []
        note = ""
        try:
            props = await self.client.properties.list(per_page=200).to_list(MAX_PROPERTIES + 1)
            if len(props) > MAX_PROPERTIES:
                note = f"Buildings of the first {MAX_PROPERTIES} properties are offered."
            for prop in props[:MAX_PROPERTIES]:
                if prop.building_count:
                    buildings = await self.client.buildings.list(prop.id, per_page=200).to_list()
                    found += [(prop, b) for b in buildings]
        except (E.BPSyncError, ValueError):
            note = "Buildings' names could not be read: reload to try again."
        self.post_message(self._Choices(building_choices(found), note))

    @on(_Choices)
    def _choices(self, message: _Choices) -> None:
        message.stop()
        select = self.query_one("#r-building", Select)
        chosen = select.value
        choices = list(message.choices)
        if isinstance(chosen, str) and chosen not in {v for _, v in choices}:
            choices.insert(0, (self.names.get(chosen, chosen), chosen))  # keep what was given
        self.names.update({value: label for label, value in message.choices})
        if message.note:
            self.notify(message.note, severity="warning", markup=False)
        with self.prevent(Select.Changed):
            select.set_options([(Text(label), value) for label, value in choices])
            if isinstance(chosen, str):
                select.value = chosen
        self.post_message(self.NamesKnown(dict(self.names)))

    # --- the catalogue -------------------------------------------------------------------------

    def show_catalogue(
        self, types: dict[str, ReportType], templates: list[ReportTemplate], wanted: str
    ) -> None:
        """Offer the service's report types (`wanted` first chosen) and saved templates."""
        self.types = types
        select = self.query_one("#r-type", Select)
        select.set_options([(f"{t.type} ({t.scope})", t.type) for t in types.values()])
        if wanted in self.types:
            select.value = wanted
        self.query_one("#r-template", Select).set_options([(t.name, t.id) for t in templates])
        self._scope_rows()

    @on(Select.Changed, "#r-type")
    def _type_changed(self) -> None:
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        formats = self.query_one("#r-format", Select)
        if chosen is None:
            formats.set_options([])
        else:
            formats.set_options([(f, f) for f in chosen.formats])
            formats.value = chosen.formats[0]
        self._scope_rows()
        self._scope_changed()

    @on(Select.Changed, "#r-building")
    def _building_changed(self) -> None:
        self._scope_changed()

    def _scope_rows(self) -> None:
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        building_scope = chosen is not None and chosen.scope == "building"
        self.query_one("#row-building").display = building_scope
        self.query_one("#row-filters").display = not building_scope
        self.query_one("#r-template").display = chosen is not None and chosen.type == "custom"

    # --- the request ---------------------------------------------------------------------------

    def request_body(self) -> dict[str, Any]:
        """The form as a request body; raises ValueError naming the field to fix."""
        type_ = self.query_one("#r-type", Select).value
        format_ = self.query_one("#r-format", Select).value
        if not isinstance(type_, str) or type_ not in self.types:
            raise ValueError("Choose a report type.")
        if not isinstance(format_, str):
            raise ValueError("Choose a format.")
        chosen = self.types[type_]
        if format_ not in chosen.formats:
            raise ValueError(f"{type_} comes as {', '.join(chosen.formats)}.")
        period = {}
        for name, widget in (("start", "#r-start"), ("end", "#r-end")):
            text = self.query_one(widget, Input).value.strip()
            try:
                period[name] = dt.date.fromisoformat(text)
            except ValueError:
                raise ValueError(f"The period {name} must be a date YYYY-MM-DD.") from None
        body: dict[str, Any] = {"type": type_, "format": format_, "reporting_period": period}
        if chosen.scope == "building":
            building = self.query_one("#r-building", Select).value
            if not isinstance(building, str):
                raise ValueError(f"{type_} is for one building: choose it in the Building field.")
            body["building_id"] = building
        else:
            body.update(self._organisation_fields(type_))
        return body

    def _organisation_fields(self, type_: str) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        ftype = self.query_one("#r-ftype", Select).value
        country_field = self.query_one("#r-fcountry", CountryInput)
        if country_field.problem:
            raise ValueError(country_field.problem)
        filters = {
            k: v
            for k, v in {
                "type": ftype if isinstance(ftype, str) else None,
                "country": country_field.code,
            }.items()
            if v
        }
        if filters:
            fields["filters"] = filters
        if type_ == "custom":
            template = self.query_one("#r-template", Select).value
            if not isinstance(template, str):
                raise ValueError("A custom report needs a saved template.")
            fields["template_id"] = template
        return fields

    def folder(self, default: Path) -> Path:
        """The folder typed in the form, else `default`."""
        text = self.query_one("#r-folder", Input).value.strip()
        return Path(text).expanduser() if text else default
