"""Portfolio register import: properties, buildings (with use types and floor areas) and meters
from a workbook, checked locally row by row, turned into create/update payloads keyed for
idempotency: a property by its `internal_ref`, a building by its name within the property, a meter
by its name within the building (`bpsync.ingest.register.plan_changes` compares them with what the
service holds, so re-running a register updates what changed and creates nothing twice).

Sheets (found by name, case-insensitive; title rows above the header are fine):
- Properties: Property Ref*, Property Name*, Street*, City*, State, Postal Code, Country*, Property Type*
- Buildings: Property Ref*, Building Name*, Primary Use Type*, Gross Floor Area (m² or ft²)*,
  Year Built*, Floors*, Occupancy (%), Operating Hours / Week
- Use Types: Property Ref*, Building Name*, Use Type*, Floor Area (m² or ft²)*
- Meters: Property Ref*, Building Name*, Meter Name*, Meter Type*, Unit*, Utility Meter Number,
  PM Meter ID, Provider

Portfolio Manager's own Properties + Meters export has no Buildings sheet. Then (and only when the
Properties sheet carries PM's floor-area column) each PM property becomes one building named after
the property, with PM's floor area converted from ft², PM's year built, and floors from a Floors
column (PM exports none and the service requires it: without one the row is refused, never
guessed). Meters attach by their Portfolio Manager Property ID; an id not on the Properties sheet
is refused row by row. The dry run states this rule (`Register.rules`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bpsync.ingest.cells.units import METER_TYPES, canonical_unit, lookup_meter_type
from bpsync.ingest.cells.values import Header, NumberError, cell_text, is_blank, parse_number
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import Table, list_sheets, read_xlsx
from bpsync.ingest.register.pm_types import pm_use_type
from bpsync.ingest.understand.templates import AmbiguousColumn, find_column
from bpsync.vocab import COUNTRY_CODES, USE_TYPES

SQFT_PER_M2 = 10.7639
GFA_TOLERANCE = 0.01  # D13: use type areas must sum to gfa_m2 within 0.01 m²

_SHEETS = {
    "properties": ("properties", "property"),
    "buildings": ("buildings", "building"),
    "use_types": ("use types", "use_types", "usetypes", "building use types"),
    "meters": ("meters", "meter"),
}
_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "properties": {
        "ref": (
            "Property Ref",
            "Internal Ref",
            "internal_ref",
            "Property Reference",
            "Portfolio Manager Property ID",
            "PM Property ID",
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
        ),
        # only read for a Portfolio Manager export without a Buildings sheet
        "gfa": (
            "Property GFA - Self-Reported (ft²)",
            "Property GFA - Self-Reported (m²)",
            "Property GFA - Self-Reported",
        ),
        "year_built": ("Year Built",),
        "floors": ("Floors", "Number of Floors"),
        "occupancy_pct": ("Occupancy", "Occupancy (%)", "Occupancy %"),
    },
    "buildings": {
        "ref": (
            "Property Ref",
            "Internal Ref",
            "Property Reference",
            "Portfolio Manager Property ID",
            "PM Property ID",
        ),
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
        "ref": (
            "Property Ref",
            "Internal Ref",
            "Property Reference",
            "Portfolio Manager Property ID",
            "PM Property ID",
        ),
        "building": ("Building Name", "Building"),
        "type": ("Use Type",),
        "gfa": ("Floor Area", "Gross Floor Area", "GFA"),
    },
    "meters": {
        "ref": (
            "Property Ref",
            "Internal Ref",
            "Property Reference",
            "Portfolio Manager Property ID",
            "PM Property ID",
        ),
        "building": ("Building Name", "Building"),
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


def _find_sheet(path: Path, kind: str, sheets: list[tuple[str, str]]) -> str | None:
    names = _SHEETS[kind]
    return next((t for t, _ in sheets if t.strip().casefold() in names), None)


def read_register(path: str | Path) -> Register:
    """Read and check a register workbook. Every problem names its sheet, row and column."""
    path = Path(path)
    sheets = list_sheets(path)
    reg = Register()
    titles = {kind: _find_sheet(path, kind, sheets) for kind in _SHEETS}
    if titles["properties"] is None:
        raise _missing_sheet(path, "properties", sheets)
    properties_table = _read_sheet(path, titles["properties"], "properties", reg)
    pm_export = titles["buildings"] is None and "gfa" in properties_table.cols
    if titles["buildings"] is None and not pm_export:
        raise _missing_sheet(path, "buildings", sheets)
    properties = _properties(properties_table, reg)
    if pm_export:
        reg.rules.append(
            f"no Buildings sheet: each Portfolio Manager property on {properties_table.table.sheet!r} "
            f"becomes one building named after the property, floor area from "
            f"{properties_table.cols['gfa'].text!r}"
            + (" converted to m² (÷ 10.7639)" if _in_sqft(properties_table.cols["gfa"]) else "")
            + "; meters attach by Portfolio Manager Property ID"
        )
        buildings = _buildings_from_pm_properties(properties_table, reg, properties)
    else:
        buildings = _buildings(
            _read_sheet(path, titles["buildings"] or "", "buildings", reg), reg, properties
        )
    if titles["use_types"] is not None:
        _use_types(_read_sheet(path, titles["use_types"], "use_types", reg), reg, buildings)
    for b in buildings.values():
        _check_use_type_sum(b, reg)
    if titles["meters"] is not None:
        required = _REQUIRED_PM_METERS if pm_export else None
        meters = _read_sheet(path, titles["meters"], "meters", reg, required)
        _meters(meters, reg, buildings, pm_export=pm_export)
    return reg


def _missing_sheet(path: Path, kind: str, sheets: list[tuple[str, str]]) -> IngestError:
    hint = (
        f" (or a Portfolio Manager Properties sheet with {_PM_FLOOR_AREA!r})"
        if kind == "buildings"
        else ""
    )
    return IngestError(
        f"the register needs a {kind.title()!r} sheet{hint}; sheets: "
        + ", ".join(t for t, _ in sheets),
        where=Where(path.name),
        code="register_sheets",
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


def _area_m2(sheet: _Sheet, values: Mapping[str, object]) -> float:
    area = _number(values, "gfa", True, 0, 1e9)
    assert area is not None
    if _in_sqft(sheet.cols["gfa"]):
        area = area / SQFT_PER_M2
    area = round(area, 2)
    if not 0 < area <= 1e8:
        raise _Bad(
            "gfa", "the floor area must be above 0 and at most 100,000,000 m²", values.get("gfa")
        )
    return area


def _properties(sheet: _Sheet, reg: Register) -> dict[str, RegisterItem]:
    out: dict[str, RegisterItem] = {}
    for row, v in _rows(sheet):
        try:
            ref = _text(v, "ref", True)
            assert ref is not None
            if ref in out:
                raise _Bad(
                    "ref",
                    f"property ref {ref!r} appears twice (first on row {out[ref].where.row})",
                    ref,
                )
            country = (_text(v, "country", True) or "").upper()
            country = _COUNTRY_NAMES.get(country, country)
            if country not in COUNTRY_CODES:
                hint = " (use GB for the United Kingdom)" if country == "UK" else ""
                raise _Bad(
                    "country",
                    f"{country!r} is not an ISO 3166-1 alpha-2 country code{hint}",
                    country,
                )
            address = {
                "street": _text(v, "street", True),
                "city": _text(v, "city", True),
                "country": country,
            }
            for opt in ("state", "postal_code"):
                text = _text(v, opt, False)
                if text:
                    address[opt] = text
            payload = {
                "name": _text(v, "name", True),
                "address": address,
                "type": _use_type(v, "type"),
                "internal_ref": ref,
            }
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))
            continue
        out[ref] = RegisterItem("property", (ref,), payload, sheet.table.where(row.number))
    reg.properties = list(out.values())
    return out


def _buildings(
    sheet: _Sheet, reg: Register, properties: Mapping[str, RegisterItem]
) -> dict[tuple[str, str], RegisterItem]:
    out: dict[tuple[str, str], RegisterItem] = {}
    for row, v in _rows(sheet):
        try:
            ref = _text(v, "ref", True) or ""
            if ref not in properties:
                raise _Bad("ref", f"no property with ref {ref!r} on the Properties sheet", ref)
            name = _text(v, "name", True) or ""
            key = (ref, name.casefold())
            if key in out:
                raise _Bad("name", f"building {name!r} appears twice in property {ref!r}", name)
            payload = _building_payload(sheet, v, name, _use_type(v, "primary_use_type"))
            hours = _number(v, "operating_hours_week", False, 0, 168)
            if hours is not None:
                payload["operating_hours_week"] = hours
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))
            continue
        out[key] = RegisterItem("building", (ref, name), payload, sheet.table.where(row.number))
    reg.buildings = list(out.values())
    return out


def _building_payload(sheet: _Sheet, v: Mapping[str, Any], name: str, use: Any) -> dict[str, Any]:
    """A building's fields as both register layouts give them (its own sheet, or PM's export)."""
    payload: dict[str, Any] = {
        "name": name,
        "primary_use_type": use,
        "gfa_m2": _area_m2(sheet, v),
        "year_built": _number(v, "year_built", True, 1000, 2100, integer=True),
        "floors": _number(v, "floors", True, 1, 500, integer=True),
    }
    occupancy = _number(v, "occupancy_pct", False, 0, 100)
    if occupancy is not None:
        payload["occupancy_pct"] = occupancy
    return payload


def _buildings_from_pm_properties(
    sheet: _Sheet, reg: Register, properties: Mapping[str, RegisterItem]
) -> dict[tuple[str, str], RegisterItem]:
    """One building per Portfolio Manager property (the export has no Buildings sheet)."""
    out: dict[tuple[str, str], RegisterItem] = {}
    for row, v in _rows(sheet):
        ref = _text(v, "ref", False) or ""
        prop = properties.get(ref)
        if prop is None or prop.where.row != row.number:
            continue  # the property row itself was refused (or is a duplicate): already reported
        try:
            if "floors" not in sheet.cols:
                raise _Bad(
                    "gfa",
                    "the service needs each building's number of floors, which Portfolio "
                    "Manager does not export: add a 'Floors' column to this sheet",
                )
            name = prop.payload["name"]
            payload = _building_payload(sheet, v, name, prop.payload["type"])
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))
            continue
        out[(ref, name.casefold())] = RegisterItem(
            "building", (ref, name), payload, sheet.table.where(row.number)
        )
    reg.buildings = list(out.values())
    return out


def _use_types(
    sheet: _Sheet, reg: Register, buildings: Mapping[tuple[str, str], RegisterItem]
) -> None:
    for row, v in _rows(sheet):
        try:
            ref = _text(v, "ref", True) or ""
            name = _text(v, "building", True) or ""
            b = buildings.get((ref, name.casefold()))
            if b is None:
                raise _Bad(
                    "building",
                    f"no building {name!r} in property {ref!r} on the Buildings sheet",
                    name,
                )
            use = _choice(v, "type", USE_TYPES)
            area = _area_m2(sheet, v)
            uses = b.payload.setdefault("use_types", [])
            if any(u["type"] == use for u in uses):
                raise _Bad("type", f"use type {use!r} is listed twice for {name!r}", use)
            uses.append({"type": use, "gfa_m2": area})
            b.payload.setdefault("_use_rows", []).append(
                sheet.table.where(row.number, sheet.cols["gfa"])
            )
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))


def _check_use_type_sum(b: RegisterItem, reg: Register) -> None:
    rows = b.payload.pop("_use_rows", [])
    uses = b.payload.get("use_types")
    if not uses:
        return
    total = math.fsum(u["gfa_m2"] for u in uses)
    if abs(total - b.payload["gfa_m2"]) > GFA_TOLERANCE:
        where = rows[0] if rows else b.where
        listed = " + ".join(f"{u['type']} {u['gfa_m2']:g}" for u in uses)
        reg.problems.append(
            Problem(
                "use_types_gfa_mismatch",
                f"the use types of {b.key[1]!r} add up to {total:g} m² ({listed}) but its gross "
                f"floor area is {b.payload['gfa_m2']:g} m² (Buildings sheet row {b.where.row})",
                where,
                value=f"{total:g}",
            )
        )


def _meters(
    sheet: _Sheet,
    reg: Register,
    buildings: Mapping[tuple[str, str], RegisterItem],
    *,
    pm_export: bool = False,
) -> None:
    seen: dict[tuple[str, str, str], RegisterItem] = {}
    by_property = {key[0]: b.key[1] for key, b in buildings.items()}
    for row, v in _rows(sheet):
        try:
            ref = _text(v, "ref", True) or ""
            if pm_export:
                if ref not in by_property:
                    raise _Bad(
                        "ref",
                        f"no property with Portfolio Manager Property ID {ref!r} on the "
                        "Properties sheet (or its row was refused)",
                        ref,
                    )
                building = by_property[ref]
            else:
                building = _text(v, "building", True) or ""
            if (ref, building.casefold()) not in buildings:
                raise _Bad(
                    "building",
                    f"no building {building!r} in property {ref!r} on the Buildings sheet",
                    building,
                )
            name = _text(v, "name", True) or ""
            pm_ref = _text(v, "pm_ref", False)
            taken = {(k[0], k[1].casefold(), k[2].casefold()) for k in seen}
            if (ref, building.casefold(), name.casefold()) in taken and pm_ref:
                # PM allows two meters of one name in a property; its meter id tells them apart.
                reg.rules.append(
                    f"two meters named {name!r} in {building!r}: the second is named "
                    f"{name + f' (PM {pm_ref})'!r} after its Portfolio Manager meter id"
                )
                name = f"{name} (PM {pm_ref})"
            key = (ref, building, name)
            if (ref, building.casefold(), name.casefold()) in taken:
                raise _Bad("name", f"meter {name!r} appears twice in {building!r}", name)
            try:
                mtype = _choice(v, "type", METER_TYPES)
            except _Bad:  # Portfolio Manager's names: "Electric - Grid", "Natural Gas"
                known = lookup_meter_type(_text(v, "type", True) or "")
                if known is None:
                    raise
                mtype = known
            unit_text = _text(v, "unit", True) or ""
            unit = canonical_unit(mtype, unit_text)
            if unit is None:
                raise _Bad(
                    "unit", f"{unit_text!r} is not a unit a {mtype} meter can be read in", unit_text
                )
            payload: dict[str, Any] = {"type": mtype, "unit": unit, "name": name}
            provider = _text(v, "provider", False)
            if provider:
                payload["provider"] = provider
            for fld in ("utility_ref", "pm_ref"):
                ext = _text(v, fld, False)
                if not ext:
                    continue
                if ext in reg.meter_links and reg.meter_links[ext] != key:
                    raise _Bad(
                        fld,
                        f"reference {ext!r} is already given to meter {reg.meter_links[ext][2]!r}",
                        ext,
                    )
                reg.meter_links[ext] = key
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))
            continue
        seen[key] = RegisterItem("meter", key, payload, sheet.table.where(row.number))
    reg.meters = list(seen.values())
