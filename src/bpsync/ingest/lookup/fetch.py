"""What the service already holds for an import: the organisation's meters (all of them, or only
those the file names, decisions C2) as a meter catalog, and each meter's stored readings over the
file's range, fetched once per meter (prefetched for the most recent, arriving while the file is
read). The checks compare the file with them; nothing here changes the service."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpsync.client.errors import NotFoundError
from bpsync.client.readings import MAX_READINGS_PER_PAGE
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.checks.collected import StoredReading
from bpsync.ingest.readings.assign_meters import MeterCatalog, MeterInfo, fold_reference

PER_PAGE = 200
FETCH_CONCURRENCY = 8
# The service's own meter ids (decisions D2, bpservice.ids): `mtr_` and 24 of [0-9a-z]. Only a
# value of this shape is ever sent to the service as a meter id: anything else a file holds is
# refused locally, so a file's content never reaches a URL (issue 33 item 8).
SERVICE_METER_ID = re.compile(r"^mtr_[0-9a-z]{24}$")


def is_service_meter_id(value: str) -> bool:
    """Whether `value` has the shape of a meter id the service mints (D2)."""
    return bool(SERVICE_METER_ID.match(value))


# ---- the organisation's meters ------------------------------------------------------------------


@dataclass
class Portfolio:
    """What the service holds, as the importer needs it."""

    catalog: MeterCatalog
    building_of: dict[str, str] = field(default_factory=dict)  # meter id → building id
    buildings: dict[str, dict] = field(default_factory=dict)  # building id → summary JSON
    requests: int = 0
    # meter id → the end of its latest stored reading (None: it has none), from the meter list
    latest: dict[str, dt.date | None] = field(default_factory=dict)
    named: bool = False  # only the meters the file names (fetch_named), not the organisation


async def gather_limited(coros: Iterable, limit: int = FETCH_CONCURRENCY) -> list:
    sem = asyncio.Semaphore(limit)

    async def one(c):  # type: ignore[no-untyped-def]
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))


async def fetch_portfolio(
    client: AsyncServiceClient, meter_map: Mapping[str, str] | None = None
) -> Portfolio:
    """Every meter of the organisation (properties → buildings → meters, 200 a page)."""
    properties = await client.properties.list(per_page=PER_PAGE).to_list()
    building_lists = await gather_limited(
        client.buildings.list(p.id, per_page=PER_PAGE).to_list() for p in properties
    )
    buildings = [b for bs in building_lists for b in bs]
    meter_lists = await gather_limited(
        client.meters.list(b.id, per_page=PER_PAGE).to_list() for b in buildings
    )
    infos, building_of, latest = [], {}, {}
    for b, meters in zip(buildings, meter_lists, strict=True):
        for m in meters:
            infos.append(MeterInfo(m.id, str(m.type.value), m.unit, b.id, b.name, m.name))
            building_of[m.id] = b.id
            latest[m.id] = m.latest_reading_date
    return Portfolio(
        MeterCatalog.build(infos, meter_map or {}),
        building_of,
        {b.id: b.model_dump(mode="json") for b in buildings},
        1 + len(properties) + len(buildings),
        latest,
    )


async def fetch_named(
    client: AsyncServiceClient,
    by: str,
    names: Iterable[str],
    meter_map: Mapping[str, str] | None = None,
) -> Portfolio | None:
    """The meters a file names (meter ids, or external references through the meter map), in
    list calls of 200 (GET /v1/meters, decisions C2), instead of the whole organisation. None when
    the service has no such list (it answers 404): use `fetch_portfolio`.

    Only values shaped like the service's meter ids are looked up (a reference the meter map
    links, or a meter id the file names itself): a reference in neither shape cannot name a
    meter, so the normaliser refuses its rows without a request (issue 33 item 8)."""
    catalog = MeterCatalog.build((), meter_map or {})
    ids: set[str] = set()
    for name in names:
        mapped = catalog.meter_map.get(fold_reference(name)) if by == "external_ref" else None
        wanted_id = mapped or name
        if is_service_meter_id(wanted_id):
            ids.add(wanted_id)
    wanted = sorted(ids)
    infos, building_of, latest = [], {}, {}
    groups = [wanted[start : start + 200] for start in range(0, len(wanted), 200)]
    try:  # the lists at once (FETCH_CONCURRENCY in flight), read in the file's meter order
        pages = await gather_limited(client.meters.list_all(ids=g, per_page=200) for g in groups)
    except NotFoundError:
        return None
    for page in pages:
        for m in page.items:
            infos.append(MeterInfo(m.id, str(m.type.value), m.unit, m.building_id, None, m.name))
            building_of[m.id] = m.building_id
            latest[m.id] = m.latest_reading_date
    catalog = MeterCatalog.build(infos, meter_map or {})
    return Portfolio(catalog, building_of, {}, len(groups), latest, named=True)


def stored_reading(r: Any) -> StoredReading:
    """A listed reading as the checks compare it: period, consumption, cost and demand."""
    return StoredReading(
        r.start_date, r.end_date, r.consumption, r.id, r.cost, r.demand_kw, r.cost_currency, True
    )


async def fetch_readings(
    client: AsyncServiceClient,
    building_id: str,
    meter_id: str,
    start: dt.date | None,
    end: dt.date | None,
) -> list[StoredReading]:
    """The meter's readings starting on or after `start` and ending on or before `end`."""
    items = await client.readings.list(
        building_id, meter_id, start_date=start, end_date=end, per_page=PER_PAGE
    ).to_list()
    return [stored_reading(r) for r in items]


# Stored readings longer than this that start before the file's first reading and still overlap it
# would not be fetched; the service refuses such an overlap anyway (the row is then rejected).
_LONGEST_STORED = dt.timedelta(days=400)


class StoredByMeter(dict[str, list[StoredReading]]):
    """meter id → its stored readings, and how many requests finding them took."""

    requests: int = 0


# How far before a meter's latest stored reading `prefetch_recent` reaches: the anomaly year (365
# days and the day before) of a file that carries on where the stored readings end, and a margin.
_RECENT_REACH = dt.timedelta(days=400)


@dataclass
class Recent:
    """Stored readings fetched before the file was read: per meter, those starting on or after
    `since[meter]` (`prefetch_recent`). `done` holds the meters whose readings are all in, and
    each listener hears of a group of meters as it completes (on the event loop)."""

    since: dict[str, dt.date]
    readings: dict[str, list[StoredReading]]
    requests: int = 0
    done: set[str] = field(default_factory=set)
    listeners: list[Callable[[list[str]], None]] = field(default_factory=list)

    @classmethod
    def reaching_back(cls, latest: Mapping[str, dt.date | None]) -> Recent:
        """What `prefetch_recent` will fetch for meters whose latest readings are `latest`."""
        since = {m: d - _RECENT_REACH for m, d in latest.items() if d is not None}
        return cls(since, {m: [] for m in since})

    def order(self) -> list[str]:
        """The meters in the order their readings are fetched (oldest reach first)."""
        return sorted(self.since, key=lambda m: self.since[m])

    def completed(self, ids: list[str]) -> None:
        self.done.update(ids)
        for listener in list(self.listeners):
            listener(ids)


async def prefetch_recent(client: AsyncServiceClient, out: Recent) -> Recent | None:
    """Each meter's readings of the 400 days before its latest one (`Recent.reaching_back` of
    the lookups' `latest_reading_date`), fetched while the file is still being read: the
    readings a file of newer bills is checked against. `feed_existing` takes them for every
    meter whose range they cover and asks for the others. None from a service without the
    many-meter list (C3)."""
    since = out.since
    ordered = out.order()

    async def group(ids: list[str]) -> None:
        seen = 0
        start = min(since[m] for m in ids)
        # A group's later pages are asked for together once the first tells how many there are.
        async for page in client.readings.spans_many(ids, start_date=start).pages(ahead=2):
            for r in page.items:
                seen += 1
                if r.start_date >= since[r.meter_id]:
                    out.readings[r.meter_id].append(stored_reading(r))
        out.requests += max(1, -(-seen // MAX_READINGS_PER_PAGE))
        out.completed(ids)

    try:
        # Two groups at a time: the service answers one request after another anyway, and
        # groups then complete one after another, so a check can start on the first ones.
        groups = (group(ordered[i : i + 200]) for i in range(0, len(ordered), 200))
        await gather_limited(groups, limit=2)
    except NotFoundError:
        return None  # a service before C3
    return out


class StoredUnavailable(Exception):
    """The stored readings a check waited for could not be fetched (`feed_existing` raises why)."""


class ArrivingStored(Mapping[str, list[StoredReading]]):
    """Stored readings per meter for a check running in another thread, delivered as the
    service's pages arrive: `get` answers at once for a meter nobody is fetching, and waits for
    one that is being fetched (StoredUnavailable if the fetch fails). `requests` counts the
    lists that found them."""

    def __init__(self, awaited: Iterable[str] = ()) -> None:
        self._changed = threading.Condition()
        self._found: dict[str, list[StoredReading]] = {}
        self._awaited = dict.fromkeys(awaited)  # in the order they are expected
        self._failed = False
        self.requests = 0

    def awaited(self) -> dict[str, int]:
        """The meters whose readings are still on their way, by expected arrival (0 first)."""
        with self._changed:
            return {m: rank for rank, m in enumerate(self._awaited)}

    def deliver(self, found: Mapping[str, list[StoredReading]]) -> None:
        with self._changed:
            self._found.update(found)
            for meter in found:
                self._awaited.pop(meter, None)
            self._changed.notify_all()

    def fail(self) -> None:
        with self._changed:
            self._failed = True
            self._changed.notify_all()

    def get(self, meter: str, default: Any = ()) -> Any:  # type: ignore[override]
        with self._changed:
            while meter in self._awaited and not self._failed:
                self._changed.wait()
            if meter in self._awaited:
                raise StoredUnavailable(meter)
            return self._found.get(meter, default)

    def __getitem__(self, meter: str) -> list[StoredReading]:
        found = self.get(meter, None)
        if found is None:
            raise KeyError(meter)
        return found

    def __iter__(self) -> Iterator[str]:
        with self._changed:
            return iter(list(self._found))

    def __len__(self) -> int:
        with self._changed:
            return len(self._found)


def meters_to_check(
    ranges: Mapping[str, tuple[dt.date, dt.date]],
    building_of: Mapping[str, str],
    latest: Mapping[str, dt.date | None] | None,
) -> list[str]:
    """The file's meters whose stored readings the checks need (`fetch_existing`'s rule)."""
    return [m for m in ranges if m in building_of and _may_hold(m, ranges[m][0], latest)]


async def feed_existing(
    client: AsyncServiceClient,
    building_of: Mapping[str, str],
    ranges: Mapping[str, tuple[dt.date, dt.date]],
    latest: Mapping[str, dt.date | None] | None,
    recent: Recent,
    prefetch: asyncio.Future[Recent | None],
    arriving: ArrivingStored,
) -> None:
    """`fetch_existing` delivered meter group by meter group into `arriving` while a check
    reads it: the prefetch's groups as each completes, the meters it does not cover (a file
    reaching further back) from their own lists. On any failure the check is told, then the
    failure raised here."""
    try:
        meters = meters_to_check(ranges, building_of, latest)
        covered = {m for m in meters if m in recent.since and recent.since[m] <= ranges[m][0]}

        def from_recent(ids: Iterable[str]) -> None:
            arriving.deliver(
                {
                    m: [
                        r
                        for r in recent.readings[m]
                        if r.start >= ranges[m][0] and r.end <= ranges[m][1] + _LONGEST_STORED
                    ]
                    for m in ids
                    if m in covered
                }
            )

        recent.listeners.append(from_recent)  # groups completing from now on
        from_recent(list(recent.done))  # and those already in
        rest = {m: ranges[m] for m in meters if m not in covered}
        extra = asyncio.ensure_future(fetch_existing(client, building_of, rest, latest))
        try:
            got = await prefetch
            if got is None and covered:  # a service before C3: the covered meters one by one
                each = await fetch_existing(
                    client, building_of, {m: ranges[m] for m in covered}, latest
                )
                arriving.deliver(each)
                arriving.requests += each.requests
            arriving.requests += got.requests if got is not None else 0
            found = await extra
        finally:
            if not extra.done():
                extra.cancel()
        arriving.deliver(found)
        arriving.requests += found.requests
    except BaseException:
        arriving.fail()
        raise


async def fetch_existing(
    client: AsyncServiceClient,
    building_of: Mapping[str, str],
    ranges: Mapping[str, tuple[dt.date, dt.date]],
    latest: Mapping[str, dt.date | None] | None = None,
    recent: Recent | None = None,
) -> StoredByMeter:
    """Each meter's stored readings around the file's range (overlaps and the anomaly history
    need them). `ranges` is `Collected.meter_ranges()`. With `latest` (the meter list's
    `latest_reading_date`), a meter with no reading, or none ending on or after its range's
    start, costs no request: nothing stored can overlap or inform it. The others are listed 200
    meters a call (GET /v1/readings, decisions C3), or one meter a call from a service without
    that list."""
    meters = [m for m in ranges if m in building_of and _may_hold(m, ranges[m][0], latest)]
    known = StoredByMeter()
    if recent is not None:  # what `prefetch_recent` holds, kept to each meter's range
        known.requests = recent.requests
        for m in [m for m in meters if m in recent.since and recent.since[m] <= ranges[m][0]]:
            first, last = ranges[m][0], ranges[m][1] + _LONGEST_STORED
            known[m] = [r for r in recent.readings[m] if r.start >= first and r.end <= last]
        meters = [m for m in meters if m not in known]
    if not meters:
        return known
    try:
        found = await _fetch_many(client, meters, ranges)
        found.update(known)
        found.requests += known.requests
        return found
    except NotFoundError:
        pass  # a service before C3
    lists = await gather_limited(
        fetch_readings(client, building_of[m], m, ranges[m][0], ranges[m][1] + _LONGEST_STORED)
        for m in meters
    )
    out = StoredByMeter(zip(meters, lists, strict=True))
    out.update(known)
    out.requests = len(meters) + known.requests
    return out


async def _fetch_many(
    client: AsyncServiceClient, meters: list[str], ranges: Mapping[str, tuple[dt.date, dt.date]]
) -> StoredByMeter:
    """Meters in groups of 200 (by range, so each group's span stays close to its meters'); each
    reading kept only inside its own meter's range, as the per-meter list would give it."""
    ordered = sorted(meters, key=lambda m: ranges[m])
    out = StoredByMeter({m: [] for m in meters})

    async def group(ids: list[str]) -> None:
        start = min(ranges[m][0] for m in ids)
        end = max(ranges[m][1] for m in ids) + _LONGEST_STORED
        seen = 0
        async for r in client.readings.spans_many(ids, start_date=start, end_date=end):
            seen += 1
            first, last = ranges[r.meter_id]
            if r.start_date >= first and r.end_date <= last + _LONGEST_STORED:
                out[r.meter_id].append(stored_reading(r))
        out.requests += max(1, -(-seen // MAX_READINGS_PER_PAGE))

    await gather_limited(group(ordered[i : i + 200]) for i in range(0, len(ordered), 200))
    return out


def _may_hold(meter: str, start: dt.date, latest: Mapping[str, dt.date | None] | None) -> bool:
    if latest is None or meter not in latest:
        return True  # unknown: ask the service
    last = latest[meter]
    return last is not None and last >= start
