"""Each reading to its meter, its quantity into the meter's unit (normalising): what that needs
(the organisation's meters and the profile's meter map, `MeterCatalog`), what a normalised
reading is (`Candidate`), and the column-wise work on a chunk's items (`Normaliser`).

Meters are matched three ways (the template says which): the service's meter id in a column; an
external reference (utility meter number, Portfolio Manager meter id) through the profile's meter
map; or building name + meter name. The catalog is plain data the network stage fills once per
import (the organisation's meters) and the profile's meter map; without a catalog, rows keep their
file units and meters stay unresolved (offline checks and template previews)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpsync.ingest.cells.columnar import (
    Chunk,
    factorize,
    per_value,
    per_value_mask,
    spread,
    take,
    truthy,
)
from bpsync.ingest.cells.units import UnitError, conversion_factor, lookup_unit
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Table
from bpsync.ingest.readings.items import Items
from bpsync.ingest.readings.limits import PROBE_ROWS
from bpsync.ingest.understand.templates import MeterBy


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


# ---- one chunk: normalise -----------------------------------------------------------------------


def _full_key(meter: object, building: object) -> str:
    return f"{building} / {meter}" if building else str(meter)


CatalogSource = Callable[[], "MeterCatalog | None"] | None
"""A catalog still being looked up: called (and waited for) when first needed."""


class Normaliser:
    """Meters resolved and units converted per distinct (meter, unit); the file's problems with
    currency, demand, meters and units found here, item by item."""

    def __init__(self, table: Table, by: str, catalog: MeterCatalog | CatalogSource) -> None:
        self.table, self.by, self._catalog = table, by, catalog
        self.resolved: dict[tuple[str, str | None], MeterInfo | str] = {}
        self.factors: dict[tuple[str, str, str], float | UnitError | None] = {}
        self.probed = False  # the first readings were looked at (refuse_unknown_meters)

    @property
    def catalog(self) -> MeterCatalog | None:
        """The catalog; a function giving it is called once, when meters are first resolved
        (the importer looks meters up while the file is read)."""
        if callable(self._catalog):
            self._catalog = self._catalog()
        return self._catalog

    def resolve(self, meter: str, building: str | None) -> MeterInfo | str:
        found = self.resolved.get((meter, building))
        if found is None:
            assert self.catalog is not None
            found = self.resolved[(meter, building)] = self.catalog.resolve(
                self.by,  # type: ignore[arg-type]
                meter,
                building,
            )
        return found

    def factor(self, unit: str, meter: MeterInfo) -> float | UnitError | None:
        key = (unit, meter.type, meter.unit)
        if key not in self.factors:
            try:
                self.factors[key] = conversion_factor(unit, meter.type, meter.unit)
            except UnitError as exc:
                self.factors[key] = exc
        return self.factors[key]

    def run(
        self, items: Items, chunk: Chunk, width: int, problems: list[tuple[int, int, Problem]]
    ) -> tuple[Items, np.ndarray, np.ndarray]:
        """(accepted items, their keys, their meter ids or None); problems appended."""
        n = len(items)
        keys = np.array(
            [_full_key(m, b) for m, b in zip(items.meter, items.building, strict=True)]
            if truthy(items.building).any()
            else items.meter,
            dtype=object,
        )
        ok = np.ones(n, dtype=bool)
        positions: dict[int, int] = {}

        def position(row: int) -> int:
            if not positions:  # only when a problem needs its row's cells
                positions.update((int(r), i) for i, r in enumerate(chunk.numbers))
            return positions[row]

        def fail(i: int, code: str, reason: str, value: str | None) -> None:
            ok[i] = False
            row = int(items.row[i])
            column = items.column_text[i]
            index = int(items.column[i])
            where = Where(
                self.table.file, self.table.sheet, row, column, None if index < 0 else index
            )
            problems.append(
                (
                    row,
                    int(items.order[i]),
                    Problem(
                        code,
                        reason,
                        where,
                        value=value,
                        meter=items.meter[i],
                        row_values=chunk.row_values(position(row), width),
                    ),
                )
            )

        currencies = per_value_mask(
            items.currency,
            False,
            lambda c: c is not None and (len(c) != 3 or not c.isalpha()),
        )
        for i in np.flatnonzero(currencies):
            fail(
                int(i),
                "bad_currency",
                "the currency is not a 3-letter ISO 4217 code",
                items.currency[i],
            )
        for i in np.flatnonzero(ok & (items.demand < 0)):
            fail(int(i), "bad_demand", "demand cannot be negative", str(float(items.demand[i])))
        consumption = items.consumption.copy()
        units = items.unit.copy()
        meter_ids = np.full(n, None, dtype=object)
        if self.catalog is None:
            units = per_value(
                units, False, lambda u: lookup_unit(u).name if u and lookup_unit(u) else u
            )
            good = np.flatnonzero(ok)
            return (
                self._take(items, good, consumption, units),
                take(keys, good),
                take(meter_ids, good),
            )
        codes, pairs = self._pairs(items)
        infos = [self.resolve(m, b) for m, b in pairs]
        unknown = np.array([isinstance(x, str) for x in infos], dtype=bool)
        self.refuse_unknown_meters(items, codes, unknown, infos)
        for i in np.flatnonzero(ok & unknown[codes]):
            fail(int(i), "unknown_meter", infos[codes[i]], keys[i])  # type: ignore[arg-type]
        known_type = np.array([None if isinstance(x, str) else x.type for x in infos], dtype=object)
        stated = items.meter_type
        clash = ok & truthy(stated)
        if clash.any():  # most files state no meter type
            clash &= stated != known_type[codes]
        for i in np.flatnonzero(clash):
            info = infos[codes[i]]
            assert isinstance(info, MeterInfo)
            fail(
                int(i),
                "meter_type_mismatch",
                f"the file says this is a {stated[i].replace('_', ' ')} meter but {keys[i]!r} "
                f"is linked to a {info.type.replace('_', ' ')} meter",
                stated[i],
            )
        # One factor per distinct (unit, meter).
        unit_codes, unit_names = factorize(units, False)
        pair = unit_codes * max(len(infos), 1) + codes
        distinct, inverse = np.unique(pair[ok], return_inverse=True) if ok.any() else ([], [])
        factors = np.ones(len(distinct))
        broken = np.zeros(len(distinct), dtype=bool)
        reasons: dict[int, str] = {}
        for j, p in enumerate(distinct):
            unit, info = (
                unit_names[int(p) // max(len(infos), 1)],
                infos[int(p) % max(len(infos), 1)],
            )
            if unit is None or isinstance(info, str):
                continue
            factor = self.factor(unit, info)
            if isinstance(factor, UnitError):
                broken[j], reasons[j] = True, str(factor)
            elif factor is not None:
                factors[j] = factor
        where_ok = np.flatnonzero(ok)
        if len(where_ok):
            for i, j in zip(where_ok[broken[inverse]], inverse[broken[inverse]], strict=True):
                fail(int(i), "unit_mismatch", reasons[int(j)], units[i])
            # Multiply only where a factor applies ("same unit" is not even multiplied by 1.0).
            applies = np.zeros(n, dtype=bool)
            scale = np.ones(n)
            applies[where_ok] = factors[inverse] != 1.0
            scale[where_ok] = factors[inverse]
            consumption = np.where(applies, consumption * scale, consumption)
        unit_of = np.array([None if isinstance(x, str) else x.unit for x in infos], dtype=object)
        id_of = np.array([None if isinstance(x, str) else x.id for x in infos], dtype=object)
        if n:
            units = unit_of[codes]
            # Ids and keys per (meter, building) pair, so later steps code them per pair too.
            meter_ids = spread(id_of, codes)
            key_of = np.empty(len(pairs), dtype=object)
            key_of[:] = [m if b is None else _full_key(m, b) for m, b in pairs]
            keys = spread(key_of, codes)
        good = np.flatnonzero(ok)
        return self._take(items, good, consumption, units), take(keys, good), take(meter_ids, good)

    def refuse_unknown_meters(
        self, items: Items, codes: np.ndarray, unknown: np.ndarray, infos: list[Any]
    ) -> None:
        """Raise when the file's first PROBE_ROWS readings all name meters the catalog lacks,
        before a problem is kept for each of them (readings.limits.PROBE_ROWS)."""
        if self.probed:
            return
        self.probed = True
        if len(items) < PROBE_ROWS or not unknown[codes[:PROBE_ROWS]].all():
            return
        rows = items.row[:PROBE_ROWS]
        raise IngestError(
            f"rows {int(rows.min()):,} to {int(rows.max()):,}: not one of the first "
            f"{PROBE_ROWS:,} readings names a meter of this organisation (the first: "
            f"{infos[codes[0]]}). Nothing was imported from this file",
            where=Where(self.table.file, sheet=self.table.sheet),
            code="no_known_meters",
        )

    @staticmethod
    def _pairs(items: Items) -> tuple[np.ndarray, list[tuple[str, str | None]]]:
        if not truthy(items.building).any():
            codes, meters = factorize(items.meter, False)
            return codes, [(m, None) for m in meters]
        index: dict[tuple[str, str | None], int] = {}
        codes = np.empty(len(items), dtype=np.int64)
        for i, pair in enumerate(zip(items.meter, items.building, strict=True)):
            code = index.get(pair)
            if code is None:
                code = index[pair] = len(index)
            codes[i] = code
        return codes, list(index)

    @staticmethod
    def _take(items: Items, good: np.ndarray, consumption: np.ndarray, units: np.ndarray) -> Items:
        out = items.take(good) if len(good) < len(items) else dataclasses.replace(items)
        out.consumption = consumption[good]
        out.unit = units[good]
        return out
