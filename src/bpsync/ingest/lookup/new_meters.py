"""Meters the file names but the service lacks (`--create-meters`): which can be created (the
building exists, the type and unit are clear), which cannot and why, and creating them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.cells.units import UNITS_BY_METER_TYPE, canonical_unit, lookup_unit
from bpsync.ingest.lookup.fetch import Portfolio
from bpsync.ingest.readers import Table
from bpsync.ingest.readings.mapped_rows import MappedRow, map_table
from bpsync.ingest.understand.templates import Template

_TYPE_WORDS: tuple[tuple[str, str], ...] = (
    ("district heat", "district_heating"),
    ("district cool", "district_cooling"),
    ("chilled water", "district_cooling"),
    ("natural gas", "natural_gas"),
    ("fuel oil", "fuel_oil"),
    ("heating oil", "fuel_oil"),
    ("electric", "electricity"),
    ("elec", "electricity"),
    ("power", "electricity"),
    ("gas", "natural_gas"),
    ("water", "water"),
    ("steam", "steam"),
    ("diesel", "diesel"),
    ("lpg", "lpg"),
    ("propane", "lpg"),
    ("solar", "solar"),
    ("pv", "solar"),
    ("chp", "chp"),
    ("landfill", "waste_landfill"),
    ("recycl", "waste_recycling"),
    ("compost", "waste_compost"),
)


def infer_meter_type(name: str, unit: str | None) -> str | None:
    """The meter type a name and unit make clear, or None. A word in the name ("Gas Boiler",
    "Main Electric") decides when the unit fits that type; otherwise the unit alone decides only
    when exactly one type accepts it."""
    if unit is None or lookup_unit(unit) is None:
        return None
    text = " ".join(re.split(r"[\s_\-/]+", name.casefold()))
    for word, mtype in _TYPE_WORDS:
        if re.search(rf"\b{re.escape(word)}", text):
            return mtype if canonical_unit(mtype, unit) else None
    fits = [t for t in UNITS_BY_METER_TYPE if canonical_unit(t, unit)]
    return fits[0] if len(fits) == 1 else None


@dataclass(frozen=True)
class NewMeter:
    building_id: str
    building_name: str
    name: str
    type: str
    unit: str


@dataclass
class MeterCreation:
    create: list[NewMeter] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)  # sentences for the user


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def plan_meter_creation(table: Table, template: Template, portfolio: Portfolio) -> MeterCreation:
    """Meters the file names that the service lacks and that can be created: the template names
    meters by building + meter name, the building exists, and the type and unit are clear (one
    unit for the meter in the whole file). Meters named by external reference carry no building,
    so they are listed as unclear (link them with `bpsync meters link`)."""
    out = MeterCreation()
    if template.meter.by != "building_name":
        out.unclear.append(
            f"template {template.name!r} names meters by {template.meter.by.replace('_', ' ')}, "
            "which says nothing about the building: create the meters and link them instead"
        )
        return out
    buildings: dict[str, list[tuple[str, str]]] = {}
    for bid, b in portfolio.buildings.items():
        buildings.setdefault(_fold(str(b.get("name", ""))), []).append((bid, str(b["name"])))
    wanted: dict[tuple[str, str], set[str | None]] = {}
    names: dict[tuple[str, str], tuple[str, str]] = {}
    stated: dict[tuple[str, str], set[str]] = {}  # the file's own Meter Type column
    for item in map_table(table, template):
        if not isinstance(item, MappedRow) or item.building is None:
            continue
        key = (_fold(item.building), _fold(item.meter_key))
        if item.meter_type:
            stated.setdefault(key, set()).add(item.meter_type)
        if key in wanted:
            wanted[key].add(item.unit)
            continue
        if not isinstance(
            portfolio.catalog.resolve("building_name", item.meter_key, item.building), str
        ):
            continue  # the meter exists
        wanted[key] = {item.unit}
        names[key] = (item.building, item.meter_key)
    for key, units in wanted.items():
        building, name = names[key]
        found = buildings.get(key[0], [])
        if len(found) != 1:
            what = "no building" if not found else "several buildings"
            out.unclear.append(f"{name!r}: {what} named {building!r}")
            continue
        if len(units) != 1 or None in units:
            out.unclear.append(f"{building} / {name}: the file gives no single unit for it")
            continue
        unit = next(iter(units))
        assert unit is not None
        types = stated.get(key, set())
        if len(types) > 1:
            out.unclear.append(f"{building} / {name}: the file gives it several meter types")
            continue
        mtype = next(iter(types)) if types else infer_meter_type(name, unit)
        if mtype is None:
            out.unclear.append(f"{building} / {name}: the meter type is not clear from {unit!r}")
            continue
        canonical = canonical_unit(mtype, unit)
        if canonical is None:
            out.unclear.append(
                f"{building} / {name}: {unit!r} is not a unit of a {mtype.replace('_', ' ')} meter"
            )
            continue
        out.create.append(NewMeter(found[0][0], found[0][1], name, mtype, canonical))
    return out


async def create_meters(client: AsyncServiceClient, meters: Iterable[NewMeter]) -> list[str]:
    """Create the meters; returns their ids. Meters are created one at a time (a few per file)."""
    ids = []
    for m in meters:
        created = await client.meters.create(m.building_id, type=m.type, unit=m.unit, name=m.name)
        ids.append(created.id)
    return ids
