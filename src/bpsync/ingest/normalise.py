"""Normalise: find each mapped row's meter and express its quantity in the meter's unit.

Meters are matched three ways (the template says which): the service's meter id in a column; an
external reference (utility meter number, Portfolio Manager meter id) through the profile's meter
map; or building name + meter name. The catalog is plain data the network stage fills once per
import (the organisation's meters) and the profile's meter map; without a catalog, rows keep their
file units and meters stay unresolved (offline checks and template previews)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpsync.ingest.mapping import MappedRow
from bpsync.ingest.problems import Problem, Where
from bpsync.ingest.readers.base import Table
from bpsync.ingest.templates import MeterBy
from bpsync.ingest.units import UnitError, convert, lookup_unit
from bpsync.ingest.values import Header

_CURRENCY_LEN = 3


@dataclass(frozen=True, slots=True)
class MeterInfo:
    """What normalisation needs to know about a meter of the service."""

    id: str
    type: str
    unit: str
    building_id: str | None = None
    building_name: str | None = None
    name: str | None = None


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class MeterCatalog:
    """The organisation's meters plus the profile's meter map (external ref → meter id)."""

    meters: dict[str, MeterInfo] = field(default_factory=dict)
    meter_map: dict[str, str] = field(default_factory=dict)
    by_name: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def build(
        cls, meters: Iterable[MeterInfo], meter_map: Mapping[str, str] | None = None
    ) -> MeterCatalog:
        catalog = cls()
        for m in meters:
            catalog.meters[m.id] = m
            if m.building_name and m.name:
                catalog.by_name[(_fold(m.building_name), _fold(m.name))] = m.id
        for ref, meter_id in (meter_map or {}).items():
            catalog.meter_map[_fold(ref)] = meter_id
        return catalog

    def resolve(self, by: MeterBy, key: str, building: str | None = None) -> MeterInfo | str:
        """The meter, or why none was found (a sentence for the user)."""
        if by == "building_name":
            meter_id = self.by_name.get((_fold(building or ""), _fold(key)))
            if meter_id is None:
                return f"no meter named {key!r} in a building named {building!r}"
        elif by == "external_ref":
            meter_id = self.meter_map.get(_fold(key))
            if meter_id is None and key in self.meters:  # a meter id works as its own reference
                meter_id = key
            if meter_id is None:
                return (
                    f"{key!r} is not in the meter map; link it to a meter first "
                    "(external reference → meter id)"
                )
        else:
            meter_id = key
        meter = self.meters.get(meter_id)
        if meter is None:
            return f"meter {meter_id!r} does not exist in this organisation and environment"
        return meter


@dataclass(slots=True)  # not frozen: frozen dataclasses are slow to build per row
class Candidate:
    """A reading ready to validate and send: dates inclusive, quantity in the meter's unit."""

    row: int
    meter_key: str
    meter_id: str | None
    start: dt.date
    end: dt.date
    consumption: float
    unit: str | None
    cost: float | None = None
    currency: str | None = None
    demand_kw: float | None = None
    estimated: bool = False
    column_index: int | None = None

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def payload(self) -> dict[str, Any]:
        """The body of POST …/readings (and one item of a batch)."""
        body: dict[str, Any] = {
            "start_date": self.start.isoformat(),
            "end_date": self.end.isoformat(),
            "consumption": self.consumption,
        }
        if self.cost is not None:
            body["cost"] = self.cost
            if self.currency:
                body["cost_currency"] = self.currency
        if self.demand_kw is not None:
            body["demand_kw"] = self.demand_kw
        return body


def normalise(
    rows: Iterable[MappedRow | Problem],
    table: Table,
    *,
    by: MeterBy,
    catalog: MeterCatalog | None = None,
) -> Iterator[Candidate | Problem]:
    """Resolve meters and convert units; problems pass through, new ones are added per row."""
    resolved: dict[tuple[str, str | None], MeterInfo | str] = {}
    headers = {h.index: h for h in table.headers}
    for item in rows:
        if isinstance(item, Problem):
            yield item
            continue
        header = headers.get(item.column_index) if item.column_index is not None else None

        if item.currency is not None and (
            len(item.currency) != _CURRENCY_LEN or not item.currency.isalpha()
        ):
            yield _problem(
                table,
                item,
                header,
                "bad_currency",
                "the currency is not a 3-letter ISO 4217 code",
                item.currency,
            )
            continue
        if item.demand_kw is not None and item.demand_kw < 0:
            yield _problem(
                table, item, header, "bad_demand", "demand cannot be negative", str(item.demand_kw)
            )
            continue
        if catalog is None:
            unit = (
                lookup_unit(item.unit).name if item.unit and lookup_unit(item.unit) else item.unit
            )
            yield Candidate(
                item.row,
                _key(item),
                None,
                item.start,
                item.end,
                item.consumption,
                unit,
                item.cost,
                item.currency,
                item.demand_kw,
                item.estimated,
                item.column_index,
            )
            continue
        cache_key = (item.meter_key, item.building)
        meter = resolved.get(cache_key)
        if meter is None:
            meter = resolved[cache_key] = catalog.resolve(by, item.meter_key, item.building)
        if isinstance(meter, str):
            yield _problem(table, item, header, "unknown_meter", meter, _key(item))
            continue
        if item.meter_type is not None and item.meter_type != meter.type:
            yield _problem(
                table,
                item,
                header,
                "meter_type_mismatch",
                f"the file says this is a {item.meter_type.replace('_', ' ')} meter but "
                f"{_key(item)!r} is linked to a {meter.type.replace('_', ' ')} meter",
                item.meter_type,
            )
            continue
        consumption = item.consumption
        if item.unit is not None:
            try:
                consumption = convert(item.consumption, item.unit, meter.type, meter.unit)
            except UnitError as exc:
                yield _problem(table, item, header, "unit_mismatch", str(exc), item.unit)
                continue
        yield Candidate(
            item.row,
            _key(item),
            meter.id,
            item.start,
            item.end,
            consumption,
            meter.unit,
            item.cost,
            item.currency,
            item.demand_kw,
            item.estimated,
            item.column_index,
        )


def _problem(
    table: Table, item: MappedRow, header: Header | None, code: str, reason: str, value: str | None
) -> Problem:
    column = header.text if header else None
    where = Where(table.file, table.sheet, item.row, column, item.column_index)
    return Problem(code, reason, where, value=value, meter=item.meter_key)


def _key(item: MappedRow) -> str:
    return f"{item.building} / {item.meter_key}" if item.building else item.meter_key
