"""The portfolio as a table of buildings (issue 28): one row per building with its floor area,
EUI, carbon intensity, svc score (or why there is none), data-quality grade and the city law that
applies with its status and projected penalty for the current and next period.

Shared by the terminal app's portfolio table and `bpsync benchmarks list`: the rows are plain data
(`BuildingRow`), the cells for a given unit system come from `cells`, filtering and sorting are
pure (`matches`, `sort_rows`), and the fetching helpers only talk to the client."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bpsync import units as U
from bpsync.compliance import COMPLIANT, OVER_LIMIT, ComplianceOutlook, law_for
from bpsync.units import Units

if TYPE_CHECKING:
    from bpsync.client.models import BenchmarkResult, Building, Property
    from bpsync.client.service import AsyncServiceClient

MIN_PEERS = 5  # the service gives no svc score to a smaller peer group (decisions, benchmarks)
CONCURRENCY = 8  # requests in flight at once while filling the table
DASH = "\u2013"


@dataclass(frozen=True)
class BuildingRow:
    building_id: str
    property_id: str
    building: str
    property: str
    city: str
    state: str | None
    country: str
    use_type: str
    gfa_m2: float
    grade: str | None
    eui_kwh_m2: float | None = None
    carbon_kgco2e_m2: float | None = None
    svc_score: float | None = None
    score_note: str = ""  # why there is no score
    benchmarked: bool = False  # the benchmark result has arrived
    outlook: ComplianceOutlook | None = None  # None: not known yet

    @property
    def law(self) -> str | None:
        """The law of the building's city, known before its outlook is fetched."""
        return law_for(self.country, self.state, self.city)


def row_of(prop: Property, building: Building) -> BuildingRow:
    return BuildingRow(
        building_id=building.id,
        property_id=prop.id,
        building=building.name,
        property=prop.name,
        city=prop.address.city,
        state=prop.address.state,
        country=prop.address.country,
        use_type=building.primary_use_type,
        gfa_m2=building.gfa_m2,
        grade=getattr(building.data_quality_grade, "value", building.data_quality_grade),
    )


def score_note(result: BenchmarkResult) -> tuple[float | None, str]:
    """The svc score, or why the service gave none."""
    svc = next((s for s in result.scores if s.standard == "svc"), None)
    if result.eui_kwh_m2 is None:
        return None, "no energy data in the last 12 months"
    if svc is None:
        return None, "the service returned no svc score"
    if svc.score is not None:
        return svc.score, ""
    peers = svc.peer_count or 0
    if peers < MIN_PEERS:
        group = f" in {svc.peer_group}" if svc.peer_group else ""
        return None, f"{peers} building(s){group}; a score needs {MIN_PEERS}"
    return None, "no svc score"


def with_benchmark(
    row: BuildingRow, result: BenchmarkResult | None, why: str = "benchmark not available"
) -> BuildingRow:
    if result is None:
        return replace(row, benchmarked=True, score_note=why)
    svc, note = score_note(result)
    return replace(
        row,
        eui_kwh_m2=result.eui_kwh_m2,
        carbon_kgco2e_m2=result.carbon_intensity_kgco2e_m2,
        svc_score=svc,
        score_note=note,
        grade=getattr(result.data_quality_grade, "value", None) or row.grade,
        benchmarked=True,
    )


# --- columns -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    key: str
    title: str  # may hold "{unit}" (filled per unit system)
    quantity: str = ""  # bpsync.units quantity of the {unit}
    numeric: bool = False

    def heading(self, units: Units) -> str:
        return (
            self.title.format(unit=U.label(self.quantity, units)) if self.quantity else self.title
        )


# Scores and compliance first, so 120 columns show them all beside the name; 80 columns show the
# name, GFA, EUI, carbon, score, grade and law (the rest scroll into view).
COLUMNS: tuple[Column, ...] = (
    Column("building", "Building"),
    Column("gfa", "GFA {unit}", "area", True),
    Column("eui", "EUI {unit}", "eui", True),
    Column("carbon", "{unit}", "intensity", True),
    Column("score", "Score", numeric=True),
    Column("grade", "Grade"),
    Column("law", "Law"),
    Column("status", "Status"),
    Column("penalty_now", "Penalty now", numeric=True),
    Column("penalty_next", "Penalty next", numeric=True),
    Column("property", "Property"),
    Column("city", "City"),
    Column("country", "Ctry"),
    Column("use_type", "Use"),
)
KEYS = tuple(c.key for c in COLUMNS)


def _penalties(outlook: ComplianceOutlook | None) -> tuple[float | None, float | None]:
    if outlook is None:
        return None, None
    now, following = outlook.current(), outlook.next()
    return (now.penalty if now else None, following.penalty if following else None)


def values(row: BuildingRow, units: Units) -> dict[str, Any]:
    """The row's values in `units`: numbers stay numbers (None when unknown), for sorting and
    for the CSV/JSON/XLSX exports."""
    now, following = _penalties(row.outlook)
    return {
        "building": row.building,
        "property": row.property,
        "city": row.city,
        "country": row.country,
        "use_type": row.use_type,
        "gfa": U.area(row.gfa_m2, units),
        "eui": U.eui(row.eui_kwh_m2, units),
        "carbon": U.intensity(row.carbon_kgco2e_m2, units),
        "score": row.svc_score,
        "grade": row.grade,
        "law": row.law or "",
        "status": status_text(row),
        "penalty_now": now,
        "penalty_next": following,
    }


def status_text(row: BuildingRow) -> str:
    if row.outlook is None:
        return "…" if row.law else "not covered"
    return row.outlook.status


def _num(value: float | None, digits: int) -> str:
    return DASH if value is None else f"{value:,.{digits}f}"


def cells(row: BuildingRow, units: Units) -> dict[str, str]:
    """The row's cells as text, as the table and the human CLI show them."""
    v = values(row, units)
    pending = "…" if not row.benchmarked else DASH
    score = _num(row.svc_score, 0) if row.svc_score is not None else pending
    if row.benchmarked and row.svc_score is None:
        score = f"{DASH} ⓘ" if row.score_note else DASH
    money = {
        k: ("…" if row.outlook is None and row.law else DASH if v[k] is None else f"${v[k]:,.0f}")
        for k in ("penalty_now", "penalty_next")
    }
    return {
        **{k: str(v[k] or "") for k in ("building", "property", "city", "country", "use_type")},
        "gfa": _num(v["gfa"], 0),
        "eui": _num(v["eui"], 1) if row.benchmarked else pending,
        "carbon": _num(v["carbon"], 1 if units == "si" else 2) if row.benchmarked else pending,
        "score": score,
        "grade": row.grade or DASH,
        "law": v["law"] or DASH,
        "status": v["status"],
        **money,
    }


# --- filter and sort -----------------------------------------------------------------------------


def matches(row: BuildingRow, term: str) -> bool:
    """Every word of `term` appears in the building or property name, city, country or use type
    (case-insensitive); an empty term matches every row."""
    words = term.casefold().split()
    if not words:
        return True
    haystack = " ".join(
        (row.building, row.property, row.city, row.country, row.use_type.replace("_", " "))
    ).casefold()
    return all(word in haystack for word in words)


_STATUS_ORDER = {OVER_LIMIT: 0, COMPLIANT: 1}


def sort_key(key: str, units: Units) -> Callable[[BuildingRow], tuple[Any, ...]]:
    """Rows without a value always sort last, whichever the direction (see `sort_rows`)."""

    def of(row: BuildingRow) -> tuple[Any, ...]:
        value = values(row, units)[key]
        if key == "status":
            value = _STATUS_ORDER.get(str(value), 2), str(value)
        elif isinstance(value, str):
            value = value.casefold()
        missing = value is None or value == ""
        return (missing, value if not missing else 0, row.building.casefold())

    return of


def sort_rows(
    rows: Iterable[BuildingRow], key: str, descending: bool, units: Units
) -> list[BuildingRow]:
    by = sort_key(key, units)
    keyed = [(by(r), r) for r in rows]
    present = sorted((kr for kr in keyed if not kr[0][0]), key=lambda kr: kr[0], reverse=descending)
    missing = sorted((kr for kr in keyed if kr[0][0]), key=lambda kr: kr[0][2])
    return [r for _, r in present + missing]


def visible(
    rows: Iterable[BuildingRow], term: str, key: str, descending: bool, units: Units
) -> list[BuildingRow]:
    return sort_rows([r for r in rows if matches(r, term)], key, descending, units)


# --- fetching ------------------------------------------------------------------------------------


async def list_rows(client: AsyncServiceClient) -> AsyncIterator[list[BuildingRow]]:
    """The buildings of every property, a property's worth at a time (up to CONCURRENCY
    properties' building lists in flight)."""
    props = [p async for p in client.properties.list(per_page=200)]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def of(prop: Property) -> list[BuildingRow]:
        async with gate:
            return [row_of(prop, b) async for b in client.buildings.list(prop.id, per_page=200)]

    for done in asyncio.as_completed([of(p) for p in props]):
        yield await done


async def benchmarks(
    client: AsyncServiceClient, rows: Sequence[BuildingRow]
) -> AsyncIterator[BuildingRow]:
    """Each row with its benchmark result, as results arrive."""
    from bpsync.client import errors as E

    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(row: BuildingRow) -> BuildingRow:
        async with gate:
            try:
                return with_benchmark(row, await client.benchmarks.building(row.building_id))
            except E.APIStatusError as exc:
                # One building the service refuses (gone, no access) leaves the rest to fill.
                return with_benchmark(row, None, f"benchmark not available ({exc.status})")

    for done in asyncio.as_completed([one(r) for r in rows]):
        yield await done


async def outlooks(
    client: AsyncServiceClient,
    rows: Sequence[BuildingRow],
    today: dt.date,
    cache: dict[str, ComplianceOutlook] | None = None,
) -> AsyncIterator[BuildingRow]:
    """Each row with its compliance outlook (from `cache` when there, else fetched and cached);
    a building no law covers needs no request."""
    from bpsync.client import errors as E
    from bpsync.client.models import Address, Property
    from bpsync.compliance import NO_DATA, _not_covered, fetch_outlook

    cache = {} if cache is None else cache
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(row: BuildingRow) -> BuildingRow:
        if row.building_id in cache:
            return replace(row, outlook=cache[row.building_id])
        if row.law is None:
            found = _not_covered(None, "No city emissions law (LL97, BERDO) applies here.")
        else:
            async with gate:
                prop = Property.model_construct(
                    id=row.property_id,
                    address=Address.model_construct(
                        city=row.city, state=row.state, country=row.country
                    ),
                )
                try:
                    building = await client.buildings.get(row.property_id, row.building_id)
                    found = await fetch_outlook(client, building, today=today, prop=prop)
                except E.APIStatusError as exc:
                    found = ComplianceOutlook(
                        row.law, True, f"Figures not available: {exc.message}", None, NO_DATA
                    )
        cache[row.building_id] = found
        return replace(row, outlook=found)

    for done in asyncio.as_completed([one(r) for r in rows]):
        yield await done
