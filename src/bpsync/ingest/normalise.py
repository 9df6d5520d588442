"""Normalise: what finding each reading's meter needs (the organisation's meters and the profile's
meter map) and what a normalised reading is. The work itself is column-wise, in
`bpsync.ingest.frame.Normaliser`.

Meters are matched three ways (the template says which): the service's meter id in a column; an
external reference (utility meter number, Portfolio Manager meter id) through the profile's meter
map; or building name + meter name. The catalog is plain data the network stage fills once per
import (the organisation's meters) and the profile's meter map; without a catalog, rows keep their
file units and meters stay unresolved (offline checks and template previews)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpsync.ingest.templates import MeterBy


@dataclass(frozen=True, slots=True)
class MeterInfo:
    """What normalisation needs to know about a meter of the service."""

    id: str
    type: str
    unit: str
    building_id: str | None = None
    building_name: str | None = None
    name: str | None = None


def fold_reference(text: str) -> str:
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
                catalog.by_name[(fold_reference(m.building_name), fold_reference(m.name))] = m.id
        for ref, meter_id in (meter_map or {}).items():
            catalog.meter_map[fold_reference(ref)] = meter_id
        return catalog

    def resolve(self, by: MeterBy, key: str, building: str | None = None) -> MeterInfo | str:
        """The meter, or why none was found (a sentence for the user)."""
        if by == "building_name":
            meter_id = self.by_name.get((fold_reference(building or ""), fold_reference(key)))
            if meter_id is None:
                return f"no meter named {key!r} in a building named {building!r}"
        elif by == "external_ref":
            meter_id = self.meter_map.get(fold_reference(key))
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
