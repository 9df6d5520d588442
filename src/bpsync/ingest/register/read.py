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

Portfolio Manager's own workbooks are registers too (column names in `sheets.py`):
- Its Properties + Meters export, and its "My Portfolio" and single-property downloads (sheet
  `Properties` or `Property`, the property id under "Portfolio Manager ID", the floor area under
  "Gross Floor Area" with its unit per row in "GFA Units"): no Buildings sheet, so each PM property
  becomes one building named after the property, with PM's floor area in m², PM's year built, and
  floors from a Floors column. PM exports no floors and the service requires them: without a
  Floors column each building is created with 1 floor, a placeholder the dry run states, never
  sent as an update to a building the service already holds (decisions F11, F18). Meters attach by their Portfolio Manager property id; an
  id not on the Properties sheet is refused row by row. The dry run states these rules.
- Its "Create Meters" upload template (sheets `Create Meters (Energy)`, `(Water)`…, no Properties
  sheet): meters only, each for the PM property its "Portfolio Manager ID" names, put in the
  building the service holds for the property with that internal_ref (`Register.meters_only`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bpsync.ingest.cells.units import METER_TYPES, canonical_unit, lookup_meter_type
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import list_sheets
from bpsync.ingest.register.sheets import (
    _COUNTRY_NAMES,
    _PM_FLOOR_AREA,
    _REQUIRED_PM_METERS,
    _SHEETS,
    GFA_TOLERANCE,
    Register,
    RegisterItem,
    _area_m2,
    _Bad,
    _choice,
    _in_sqft,
    _number,
    _problem,
    _read_sheet,
    _rows,
    _Sheet,
    _text,
    _use_type,
)
from bpsync.vocab import COUNTRY_CODES, USE_TYPES

__all__ = ["Register", "RegisterItem", "read_register"]

_CREATE_METERS = "create meters"
# The service requires a building's floors; PM's downloads have none (see the module's docstring).
PLACEHOLDER_FLOORS = 1


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
        if any(t.strip().casefold().startswith(_CREATE_METERS) for t, _ in sheets):
            return _read_create_meters(path, sheets)
        raise _missing_sheet(path, "properties", sheets)
    properties_table = _read_sheet(path, titles["properties"], "properties", reg)
    pm_export = titles["buildings"] is None and "gfa" in properties_table.cols
    if titles["buildings"] is None and not pm_export:
        raise _missing_sheet(path, "buildings", sheets)
    properties = _properties(properties_table, reg)
    if pm_export:
        cols = properties_table.cols
        reg.rules.append(
            f"no Buildings sheet: each Portfolio Manager property on {properties_table.table.sheet!r} "
            f"becomes one building named after the property, floor area from {cols['gfa'].text!r}"
            + (
                f" in the unit of its {cols['gfa_units'].text!r} cell, ft² converted to m² (÷ 10.7639)"
                if "gfa_units" in cols
                else (" converted to m² (÷ 10.7639)" if _in_sqft(cols["gfa"]) else "")
            )
            + "; meters attach by Portfolio Manager Property ID"
        )
        # Every PM layout lacks floors alike: one rule for all (decisions F11, F18).
        placeholder = "floors" not in cols
        if placeholder:
            reg.rules.append(
                "Portfolio Manager exports no number of floors, which the service requires: each "
                f"new building is created with {PLACEHOLDER_FLOORS} floor as a placeholder (add a "
                "'Floors' column to set it); a building the service already holds keeps its own"
            )
        buildings = _buildings_from_pm_properties(properties_table, reg, properties, placeholder)
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


def _read_create_meters(path: Path, sheets: list[tuple[str, str]]) -> Register:
    """PM's "Create Meters" upload template: meters only, on its visible Create Meters sheets
    (the template hides the kinds of meter it was not made for, and they are empty)."""
    reg = Register(meters_only=True)
    seen: dict[tuple[str, str, str], RegisterItem] = {}
    for title, state in sheets:
        if not title.strip().casefold().startswith(_CREATE_METERS):
            continue
        if state != "visible":
            reg.notes.append(f"hidden sheet {title!r} not read")
            continue
        sheet = _read_sheet(path, title, "meters", reg, _REQUIRED_PM_METERS)
        _meters(sheet, reg, {}, meters_only=True, seen=seen)
    reg.rules.append(
        "no Properties sheet: Portfolio Manager's Create Meters template; each meter goes into "
        "the building of the property whose internal ref is its Portfolio Manager ID (the "
        "property must be in the service already, with one building)"
    )
    return reg


def _missing_sheet(path: Path, kind: str, sheets: list[tuple[str, str]]) -> IngestError:
    hint = (
        f" (or a Portfolio Manager Properties sheet with {_PM_FLOOR_AREA!r} or 'Gross Floor Area')"
        if kind == "buildings"
        else " (or Portfolio Manager's 'Create Meters' sheets)"
    )
    return IngestError(
        f"the register needs a {kind.title()!r} sheet{hint}; sheets: "
        + ", ".join(t for t, _ in sheets),
        where=Where(path.name),
        code="register_sheets",
    )


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
    sheet: _Sheet, reg: Register, properties: Mapping[str, RegisterItem], placeholder: bool
) -> dict[tuple[str, str], RegisterItem]:
    """One building per Portfolio Manager property (the export has no Buildings sheet); without
    a Floors column, `placeholder` floors or the row refused (see the module's docstring)."""
    out: dict[tuple[str, str], RegisterItem] = {}
    for row, v in _rows(sheet):
        ref = _text(v, "ref", False) or ""
        prop = properties.get(ref)
        if prop is None or prop.where.row != row.number:
            continue  # the property row itself was refused (or is a duplicate): already reported
        defaulted: tuple[str, ...] = ()
        if "floors" not in sheet.cols and placeholder:
            v, defaulted = {**v, "floors": PLACEHOLDER_FLOORS}, ("floors",)
        try:
            name = prop.payload["name"]
            payload = _building_payload(sheet, v, name, prop.payload["type"])
        except _Bad as err:
            reg.problems.append(_problem(sheet, row, err))
            continue
        out[(ref, name.casefold())] = RegisterItem(
            "building", (ref, name), payload, sheet.table.where(row.number), defaulted
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
    meters_only: bool = False,
    seen: dict[tuple[str, str, str], RegisterItem] | None = None,
) -> None:
    seen = {} if seen is None else seen
    by_property = {key[0]: b.key[1] for key, b in buildings.items()}
    for row, v in _rows(sheet):
        try:
            ref = _text(v, "ref", True) or ""
            if meters_only:
                building = ""  # the property's building in the service (plan_changes)
            elif pm_export:
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
            if not meters_only and (ref, building.casefold()) not in buildings:
                raise _Bad(
                    "building",
                    f"no building {building!r} in property {ref!r} on the Buildings sheet",
                    building,
                )
            name = _text(v, "name", True) or ""
            pm_ref = _text(v, "pm_ref", False)
            taken = {(k[0], k[1].casefold(), k[2].casefold()) for k in seen}
            # PM allows two meters of one name in a property: its meter id tells them apart,
            # or in the Create Meters template (no ids yet) their meter type.
            apart = f"PM {pm_ref}" if pm_ref else (_text(v, "type", False) if meters_only else None)
            if (ref, building.casefold(), name.casefold()) in taken and apart:
                where = building or f"property {ref}"
                reg.rules.append(
                    f"two meters named {name!r} in {where!r}: the second is named "
                    f"{name + f' ({apart})'!r} after its "
                    + ("Portfolio Manager meter id" if pm_ref else "meter type")
                )
                name = f"{name} ({apart})"
            key = (ref, building, name)
            if (ref, building.casefold(), name.casefold()) in taken:
                raise _Bad(
                    "name",
                    f"meter {name!r} appears twice in {building or 'property ' + ref!r}",
                    name,
                )
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
