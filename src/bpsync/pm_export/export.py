"""The edges of the export: what the service holds (through the client), the meter map and the
ledger, the file. `export_bills` and `export_meters` are what the command and the terminal app
call; the rows themselves come from `rows` (pure)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bpsync import __version__
from bpsync.pm_export.rows import Bill, BillsPlan, MeterRow, MetersPlan, PropertyRow

if TYPE_CHECKING:
    from bpsync.client.service import AsyncServiceClient

T = TypeVar("T")
PER_PAGE = 200
READINGS_PER_PAGE = 1000
MAX_IDS = 200
CONCURRENCY = 8


class ScopeError(LookupError):
    """A property, building or meter the user named is not in the organisation."""


@dataclass(frozen=True)
class Scope:
    """What to export: these properties, buildings and meters (all of them when all are empty)."""

    properties: tuple[str, ...] = ()
    buildings: tuple[str, ...] = ()
    meters: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return not (self.properties or self.buildings or self.meters)

    def holds(self, meter: MeterRow) -> bool:
        return (
            self.everything
            or meter.id in self.meters
            or meter.building_id in self.buildings
            or meter.property_id in self.properties
        )


@dataclass
class Outcome:
    """What an export did: the plan, and the file and ledger it wrote (None: nothing to write)."""

    plan: BillsPlan | MetersPlan
    path: Path | None = None
    ledger: Path | None = None
    period: tuple[dt.date | None, dt.date | None] = (None, None)
    scope: Scope = field(default_factory=Scope)

    def as_dict(self) -> dict[str, object]:
        start, end = self.period
        return {
            **self.plan.as_dict(),
            "file": str(self.path) if self.path else None,
            "from": start.isoformat() if start else None,
            "to": end.isoformat() if end else None,
        }


async def _limited(coros: Iterable[Awaitable[T]], limit: int = CONCURRENCY) -> list[T]:
    sem = asyncio.Semaphore(limit)

    async def one(c: Awaitable[T]) -> T:
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))


async def portfolio(
    client: AsyncServiceClient, scope: Scope
) -> tuple[list[PropertyRow], list[MeterRow]]:
    """The organisation's properties and the meters in `scope`; a named id that is not there
    raises ScopeError."""
    props = [
        PropertyRow(p.id, p.name, p.internal_ref)
        async for p in client.properties.list(per_page=PER_PAGE)
    ]
    pages = await _limited(client.buildings.list(p.id, per_page=PER_PAGE).to_list() for p in props)
    buildings = {b.id: b for page in pages for b in page}
    meters = []
    async for m in client.meters.list_all(per_page=PER_PAGE):
        b = buildings.get(m.building_id)
        if b is None:
            continue  # a building of an archived or hidden property
        meters.append(
            MeterRow(
                m.id,
                str(getattr(m.type, "value", m.type)),
                m.unit,
                b.property_id,
                b.id,
                m.name,
                b.name,
                m.status,
            )
        )
    known = (
        ("property", scope.properties, {p.id for p in props}),
        ("building", scope.buildings, set(buildings)),
        ("meter", scope.meters, {m.id for m in meters}),
    )
    for what, wanted, have in known:
        missing = [x for x in wanted if x not in have]
        if missing:
            raise ScopeError(f"no {what} {missing[0]!r} in this organisation")
    return props, [m for m in meters if scope.holds(m)]


async def stored_bills(
    client: AsyncServiceClient,
    meter_ids: Sequence[str],
    start: dt.date | None,
    end: dt.date | None,
) -> list[Bill]:
    """The stored readings of `meter_ids` starting on or after `start` and ending on or before
    `end` (the service's filters), 200 meters and 1,000 readings a request."""
    groups = [list(meter_ids[i : i + MAX_IDS]) for i in range(0, len(meter_ids), MAX_IDS)]
    pages = await _limited(
        client.readings.list_many(
            g, start_date=start, end_date=end, per_page=READINGS_PER_PAGE
        ).to_list()
        for g in groups
    )
    return [
        Bill(
            r.meter_id,
            r.start_date,
            r.end_date,
            r.consumption,
            r.cost,
            r.cost_currency,
            r.demand_kw,
        )
        for page in pages
        for r in page
    ]


def _links(profile: str) -> dict[str, str]:
    # In a thread: the first use imports the import engine (pandas), which the terminal app's
    # event loop should not wait for.
    from bpsync.pm_export.bridge import load_meter_map

    return load_meter_map(profile)


def _note(what: str, start: dt.date | None, end: dt.date | None) -> str:
    period = f"{start or 'the first'} to {end or 'the last'} reading"
    return f"Written by bpsync {__version__} on {dt.date.today().isoformat()}: {what}, {period}."


async def export_bills(
    client: AsyncServiceClient,
    profile: str,
    output: Path,
    *,
    scope: Scope = Scope(),
    start: dt.date | None = None,
    end: dt.date | None = None,
    everything: bool = False,
    dry_run: bool = False,
) -> Outcome:
    """Write PM's Add Bills workbook of the readings in scope and period that were not exported
    before (all of them with `everything`), then add them to the profile's ledger. Nothing is
    written when no reading is new (Outcome.path is None)."""
    from bpsync.pm_export import ledger, rows, workbook

    links = await asyncio.to_thread(_links, profile)
    exported = ledger.load_ledger(profile)
    props, meters = await portfolio(client, scope)
    bills = await stored_bills(client, [m.id for m in meters], start, end) if meters else []
    plan = rows.plan_bills(props, meters, bills, links, exported=exported, everything=everything)
    outcome = Outcome(plan, period=(start, end), scope=scope)
    if plan.readings and not dry_run:
        outcome.path = await asyncio.to_thread(
            workbook.write_bills, plan, output, _note("stored readings", start, end)
        )
        outcome.ledger = ledger.record(profile, plan.written)
    return outcome


async def export_meters(
    client: AsyncServiceClient,
    profile: str,
    output: Path,
    *,
    scope: Scope = Scope(),
    dry_run: bool = False,
) -> Outcome:
    """Write PM's Create Meters workbook for the meters in scope that have no PM Meter ID yet."""
    from bpsync.pm_export import rows, workbook

    links = await asyncio.to_thread(_links, profile)
    props, meters = await portfolio(client, scope)
    linked = rows.pm_meter_ids(links)
    todo = [m for m in meters if m.id not in linked]

    async def edge(m: MeterRow, newest: bool) -> tuple[str, dt.date | None]:
        page = await client.readings.list(m.building_id, m.id, newest_first=newest, per_page=1)
        if not page.items:
            return m.id, None
        return m.id, page.items[0].end_date if newest else page.items[0].start_date

    firsts = await _limited(edge(m, False) for m in todo)
    lasts = await _limited(edge(m, True) for m in todo if m.status != "active")
    plan = rows.plan_meters(
        props,
        meters,
        links,
        {m: d for m, d in firsts if d},
        {m: d for m, d in lasts if d},
    )
    outcome = Outcome(plan, scope=scope)
    if plan.meters and not dry_run:
        outcome.path = await asyncio.to_thread(
            workbook.write_meters,
            plan,
            output,
            _note("meters not in Portfolio Manager", None, None),
        )
    return outcome
