"""The register workbook's shared pieces: what it holds (`Register`, `RegisterItem`), the
column names each sheet may use (the register's own and Portfolio Manager's), and reading one
sheet's rows into checked fields: text, numbers in range, choices, use types, floor areas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bpsync.ingest.cells.values import Header, NumberError, cell_text, is_blank, parse_number
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import Table, read_xlsx
from bpsync.ingest.register.pm_types import pm_use_type
from bpsync.ingest.understand.templates import AmbiguousColumn, find_column
from bpsync.vocab import USE_TYPES

SQFT_PER_M2 = 10.7639
GFA_TOLERANCE = 0.01  # D13: use type areas must sum to gfa_m2 within 0.01 m²

_SHEETS = {
    "properties": ("properties", "property"),
    "buildings": ("buildings", "building"),
    "use_types": ("use types", "use_types", "usetypes", "building use types"),
    "meters": ("meters", "meter"),
}
# How a row names its property, on every sheet that refers to one.
_PROPERTY_REF = (
    "Property Ref",
    "Internal Ref",
    "Property Reference",
    "Portfolio Manager Property ID",
    "PM Property ID",
)
_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "properties": {
        "ref": (
            "Property Ref",
            "Internal Ref",
            "internal_ref",
            "Property Reference",
            "Portfolio Manager Property ID",
            "PM Property ID",
            "Portfolio Manager ID",  # PM's "My Portfolio" and single-property downloads
        ),
        "name": ("Property Name", "Name"),
        "street": ("Street", "Address", "Street Address", "Address 1"),
        "city": ("City", "City/Municipality"),
        "state": ("State", "State/Province", "County", "Region"),
        "postal_code": ("Postal Code", "Postcode", "ZIP", "ZIP Code"),
        "country": ("Country", "Country Code"),
        # first name the file has wins: the owner's own choice before PM's calculated type
        "type": (
            "Property Type",
            "Type",
            "Primary Property Type - Self Selected",
            "Primary Property Type - EPA Calculated",
            "Primary Property Type - Portfolio Manager-Calculated",
            "Property Type - Self-Selected",  # PM's downloads since about 2019
            "Self-Selected Primary Function",  # PM's 2015 downloads
        ),
        # only read for a Portfolio Manager export without a Buildings sheet
        "gfa": (
            "Property GFA - Self-Reported (ft²)",
            "Property GFA - Self-Reported (m²)",
            "Property GFA - Self-Reported",
            "Gross Floor Area",  # PM's downloads: the unit per row under "GFA Units"
        ),
        "gfa_units": ("GFA Units", "Gross Floor Area Units"),
        "year_built": ("Year Built",),
        "floors": ("Floors", "Number of Floors"),
        "occupancy_pct": ("Occupancy", "Occupancy (%)", "Occupancy %"),
    },
    "buildings": {
        "ref": _PROPERTY_REF,
        "name": ("Building Name", "Building"),
        "primary_use_type": ("Primary Use Type", "Primary Use"),
        "gfa": ("Gross Floor Area", "GFA", "Floor Area"),
        "year_built": ("Year Built",),
        "floors": ("Floors", "Number of Floors"),
        "occupancy_pct": ("Occupancy", "Occupancy (%)", "Occupancy %"),
        "operating_hours_week": (
            "Operating Hours / Week",
            "Operating Hours per Week",
            "Weekly Hours",
        ),
    },
    "use_types": {
        "ref": _PROPERTY_REF,
        "building": ("Building Name", "Building"),
        "type": ("Use Type",),
        "gfa": ("Floor Area", "Gross Floor Area", "GFA"),
    },
    "meters": {
        "ref": (*_PROPERTY_REF, "Portfolio Manager ID"),  # + downloads, Create Meters
        "building": ("Building Name", "Building"),
        "property_name": ("Property Name",),
        "name": ("Meter Name", "Meter"),
        "type": ("Meter Type", "Type"),
        "unit": ("Unit", "Units", "Usage Units"),
        "utility_ref": ("Utility Meter Number", "Meter Number", "Utility Meter No."),
        "pm_ref": ("PM Meter ID", "Portfolio Manager Meter ID"),
        "provider": ("Provider", "Utility"),
    },
}
_REQUIRED = {
    "properties": ("ref", "name", "street", "city", "country", "type"),
    "buildings": ("ref", "name", "primary_use_type", "gfa", "year_built", "floors"),
    "use_types": ("ref", "building", "type", "gfa"),
    "meters": ("ref", "building", "name", "type", "unit"),
}
# A Portfolio Manager export: one building per property, so meters name no building.
_REQUIRED_PM_METERS = ("ref", "name", "type", "unit")
_PM_FLOOR_AREA = "Property GFA - Self-Reported (ft²)"
# Country names Portfolio Manager writes (it serves the United States and Canada).
_COUNTRY_NAMES = {
    "UNITED STATES": "US",
    "UNITED STATES OF AMERICA": "US",
    "USA": "US",
    "CANADA": "CA",
}


@dataclass(frozen=True)
class RegisterItem:
    """One thing to create or update: `key` is its idempotency key, `payload` its create body."""

    kind: Literal["property", "building", "meter"]
    key: tuple[str, ...]
    payload: dict[str, Any]
    where: Where
    # payload fields a stated rule filled in (not the file): sent on create, never as an update
    defaulted: tuple[str, ...] = ()


@dataclass
class Register:
    properties: list[RegisterItem] = field(default_factory=list)
    buildings: list[RegisterItem] = field(default_factory=list)
    meters: list[RegisterItem] = field(default_factory=list)
    # external reference (utility meter number, PM meter id) → meter key (ref, building, meter)
    meter_links: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # choices the reader made by a documented rule; the CLI prints them with the plan
    rules: list[str] = field(default_factory=list)
    # meters only (PM's Create Meters template): each meter goes into the building the service
    # holds for the property whose internal_ref is its Portfolio Manager property id
    meters_only: bool = False

    @property
    def ok(self) -> bool:
        return not any(p.is_error for p in self.problems)


class _Sheet:
    """One register sheet's rows with their cells looked up by field."""

    def __init__(self, table: Table, kind: str, required: Sequence[str] | None = None) -> None:
        self.table = table
        self.cols: dict[str, Header] = {}
        for fld, names in _COLUMNS[kind].items():
            try:
                h = find_column(table.headers, names)
            except AmbiguousColumn as exc:
                raise IngestError(
                    str(exc),
                    where=Where(table.file, table.sheet, table.header_row),
                    code="ambiguous_column",
                ) from None
            if h is not None:
                self.cols[fld] = h
        needed = _REQUIRED[kind] if required is None else required
        missing = [_COLUMNS[kind][f][0] for f in needed if f not in self.cols]
        if missing:
            raise IngestError(
                f"sheet {table.sheet!r} lacks the column(s) {', '.join(missing)}",
                where=Where(table.file, table.sheet, table.header_row),
                code="register_columns",
            )


def _read_sheet(
    path: Path, title: str, kind: str, reg: Register, required: Sequence[str] | None = None
) -> _Sheet:
    expected = {n.casefold() for names in _COLUMNS[kind].values() for n in names}
    table = read_xlsx(path, sheet=title, expected=expected)
    reg.notes.append(table.describe())
    if kind == "properties":
        # the building columns on a Properties sheet are optional unless it stands in for them
        required = _REQUIRED["properties"]
    return _Sheet(table, kind, required)


def _rows(sheet: _Sheet) -> Any:
    for row in sheet.table.rows():
        values = {
            f: (row.cells[h.index] if h.index < len(row.cells) else None)
            for f, h in sheet.cols.items()
        }
        yield row, values


class _Bad(Exception):
    def __init__(self, fld: str, reason: str, value: object = None):
        self.fld, self.reason, self.value = fld, reason, value


def _problem(sheet: _Sheet, row: Any, err: _Bad, code: str = "register_invalid") -> Problem:
    h = sheet.cols.get(err.fld)
    where = sheet.table.where(row.number, h)
    return Problem(
        code,
        err.reason,
        where,
        value=None if err.value is None else cell_text(err.value),
        row_values=tuple(cell_text(c) for c in row.cells),
    )


def _text(values: Mapping[str, object], fld: str, required: bool) -> str | None:
    value = values.get(fld)
    if is_blank(value):
        if required:
            raise _Bad(fld, f"{fld.replace('_', ' ')} is required")
        return None
    return " ".join(cell_text(value).split())


def _number(
    values: Mapping[str, object],
    fld: str,
    required: bool,
    lo: float,
    hi: float,
    *,
    integer: bool = False,
) -> float | None:
    value = values.get(fld)
    try:
        number = parse_number(value)
    except NumberError as exc:
        raise _Bad(fld, f"{fld.replace('_', ' ')} is not a number ({exc})", value) from None
    if number is None:
        if required:
            raise _Bad(fld, f"{fld.replace('_', ' ')} is required")
        return None
    if integer and number != int(number):
        raise _Bad(fld, f"{fld.replace('_', ' ')} must be a whole number", value)
    if not lo <= number <= hi or (lo == 0 and fld == "gfa" and number <= 0):
        raise _Bad(fld, f"{fld.replace('_', ' ')} must be between {lo:g} and {hi:g}", value)
    return int(number) if integer else number


def _choice(values: Mapping[str, object], fld: str, options: Sequence[str]) -> str:
    text = _text(values, fld, True) or ""
    folded = text.casefold().replace(" ", "_").replace("-", "_")
    if folded == "data_center":
        folded = "data_centre"
    if folded not in options:
        raise _Bad(fld, f"{text!r} is not one of: {', '.join(options)}", text)
    return folded


def _use_type(values: Mapping[str, object], fld: str) -> str:
    """One of the service's use types; Portfolio Manager's property type names ("K-12 School",
    "Multifamily Housing") are translated by a fixed table (pm_types.py), never guessed."""
    try:
        return _choice(values, fld, USE_TYPES)
    except _Bad:
        known = pm_use_type(_text(values, fld, True) or "")
        if known is None:
            raise
        return known


def _in_sqft(h: Header) -> bool:
    text = h.text.casefold()
    return "ft" in text or "sf" in text.split()


_SQFT_UNITS = {"sq. ft.", "sq ft", "sq. ft", "sqft", "ft²", "ft2", "square feet", "sf"}
_M2_UNITS = {"sq. m.", "sq m", "sq. m", "sqm", "m²", "m2", "square meters", "square metres"}


def _row_in_sqft(sheet: _Sheet, values: Mapping[str, object]) -> bool:
    if "gfa_units" not in sheet.cols:
        return _in_sqft(sheet.cols["gfa"])
    text = " ".join(cell_text(values.get("gfa_units")).split()).casefold()
    if text in _SQFT_UNITS:
        return True
    if text in _M2_UNITS:
        return False
    raise _Bad(
        "gfa_units",
        f"{text or 'an empty cell'!r} is not a floor-area unit (Sq. Ft. or Sq. M.)",
        values.get("gfa_units"),
    )


def _area_m2(sheet: _Sheet, values: Mapping[str, object]) -> float:
    """The floor area in m²: ft² by the header's bracket, or by the row's "GFA Units" cell where
    the sheet has one (PM's downloads: "Sq. Ft." or "Sq. M.")."""
    area = _number(values, "gfa", True, 0, 1e9)
    assert area is not None
    if _row_in_sqft(sheet, values):
        area = area / SQFT_PER_M2
    area = round(area, 2)
    if not 0 < area <= 1e8:
        raise _Bad(
            "gfa", "the floor area must be above 0 and at most 100,000,000 m²", values.get("gfa")
        )
    return area
