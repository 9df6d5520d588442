"""Which city emissions law covers a building (NYC LL97, Boston BERDO 2.0), and what it would owe in
each compliance period to 2050 if the last complete calendar year's emissions held.

The service computes these laws only inside its compliance reports. The arithmetic and the
published tables are the service's own pure domain functions (`bpservice.domain.compliance` and
the prorating of `bpservice.domain.benchmarks`), imported lazily: they ship in this distribution,
import nothing but the standard library and their JSON tables, and using them means the tool and
the reports can never disagree (docs/decisions.md T10). The inputs come through the public API:
the building (use types, GFA), its property's address, its meters and the readings of the basis
year, prorated over calendar months and annualised exactly as the service does for a report.

`outlook` is pure; `fetch_outlook` gathers its inputs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bpsync.client.models import Building, Property
    from bpsync.client.service import AsyncServiceClient

LL97 = "LL97"
BERDO = "BERDO"
LAST_YEAR = 2050
EN_DASH = "\u2013"
CURRENCY = "USD"
YEARS_OF_READINGS = 4  # how far back a basis year is looked for

COMPLIANT = "compliant"
OVER_LIMIT = "over limit"
NO_DATA = "no data"
NOT_COVERED = "not covered"

# The laws' compliance periods to 2050. LL97's own periods (NYC Admin. Code §28-320.3); the
# service's table holds limits for the first two only, so later ones carry no figures.
_LL97_PERIODS = ((2024, 2029), (2030, 2034), (2035, 2039), (2040, 2049), (2050, 2050))
_SCHEME = {LL97: "ll97", BERDO: "berdo"}


@dataclass(frozen=True)
class PeriodOutlook:
    label: str  # "2024-2029" with an en dash
    first_year: int
    last_year: int
    limit_tco2e: float | None  # the annual limit in this period
    emissions_tco2e: float | None  # the basis year's emissions, held constant
    excess_tco2e: float | None
    penalty: float | None  # per year of the period, in `currency`
    currency: str = CURRENCY
    note: str = ""  # why a figure is missing, or a condition on it

    @property
    def over(self) -> bool:
        return bool(self.penalty) or (self.excess_tco2e or 0) > 0


@dataclass(frozen=True)
class ComplianceOutlook:
    law: str | None  # "LL97" | "BERDO" | None
    covered: bool
    reason: str  # why not covered / why no figures / on what the figures rest
    basis_year: int | None  # the calendar year whose emissions the projection holds constant
    status: str  # COMPLIANT | OVER_LIMIT | NO_DATA | NOT_COVERED (of the current period)
    periods: tuple[PeriodOutlook, ...] = ()  # from the current period to 2050
    annualised: bool = False  # the basis year was scaled up from part of it

    def current(self) -> PeriodOutlook | None:
        return self.periods[0] if self.periods else None

    def next(self) -> PeriodOutlook | None:
        return self.periods[1] if len(self.periods) > 1 else None

    @property
    def basis_text(self) -> str:
        """What the UI says under the figures."""
        if self.basis_year is None:
            return ""
        scaled = " (annualised from part of the year)" if self.annualised else ""
        return f"projected from {self.basis_year}'s emissions{scaled}"


def period_label(first: int, last: int | None) -> str:
    if last is None or last == first:
        return f"{first}" if last == first else f"{first}{EN_DASH}"
    return f"{first}{EN_DASH}{last}"


def law_for(country: str | None, state: str | None, city: str | None) -> str | None:
    """The law of the building's city (by the tables' own city lists), else None."""
    from bpservice.domain import compliance as c

    for law, table in ((LL97, c.ll97_table()), (BERDO, c.berdo_table())):
        rule = table["applicability"]
        if (
            c._norm(country) in {"us", "usa"}
            and c._norm(city) in set(rule["cities"])
            and (not state or c._norm(state) == rule["state"].lower())
        ):
            return law
    return None


# --- energy of a calendar year, as the service's reports compute it -----------------------------


@dataclass(frozen=True)
class MeterInfo:
    id: str
    type: str
    unit: str


@dataclass(frozen=True)
class ReadingInfo:
    meter_id: str
    start: dt.date
    end: dt.date  # inclusive
    consumption: float


def year_energy(
    meters: Sequence[MeterInfo], readings: Iterable[ReadingInfo], year: int
) -> tuple[dict[str, float], bool]:
    """Annualised site kWh per meter type in calendar `year` ({} without energy data) and whether
    any meter covered only part of it: readings spread evenly over their days, months totalled,
    each meter scaled by days in the year / days with readings (the service's report rule)."""
    from bpservice.domain import benchmarks as bm
    from bpservice.domain.units import kwh_per_unit
    from bpservice.domain.vocab import ENERGY_METER_TYPES

    energy = {m.id: m for m in meters if m.type in ENERGY_METER_TYPES}
    first, last = dt.date(year, 1, 1), dt.date(year, 12, 1)
    spans: dict[str, list[Any]] = {m: [] for m in energy}
    for r in readings:
        if r.meter_id in spans and r.end >= first and r.start <= dt.date(year, 12, 31):
            spans[r.meter_id].append(bm.ReadingSpan(r.start, r.end, r.consumption))
    rows = []
    for meter_id, meter_spans in spans.items():
        meter = energy[meter_id]
        factor = kwh_per_unit(meter.type, meter.unit)
        for t in bm.prorate(meter_spans, first, last):
            kwh = None if factor is None else t.quantity * factor
            rows.append(
                bm.MonthRow(meter_id, t.month, kwh, t.quantity, t.covered_days, t.readings, 0)
            )
    period = bm.Period(first, dt.date(year, 12, 31))
    per_meter = bm.meter_periods(period, {m.id: m.type for m in energy.values()}, rows)
    result = bm.energy_period(period, per_meter)
    if not result.has_data:
        return {}, False
    partial = any(m.covered_days and m.covered_days < m.period_days for m in per_meter)
    return dict(result.kwh_by_type), partial


def basis_year(
    meters: Sequence[MeterInfo], readings: Sequence[ReadingInfo], today: dt.date
) -> int | None:
    """The last complete calendar year (before today's) with any energy reading in it."""
    for year in range(today.year - 1, today.year - 1 - YEARS_OF_READINGS, -1):
        if year_energy(meters, readings, year)[0]:
            return year
    return None


# --- the outlook --------------------------------------------------------------------------------


def _not_covered(law: str | None, reason: str) -> ComplianceOutlook:
    return ComplianceOutlook(law, False, reason, None, NOT_COVERED)


def first_year(law: str) -> int:
    """The first calendar year the law's cited tables cover (LL97 2024, BERDO 2025)."""
    from bpservice.domain import compliance as c

    table = c.ll97_table() if law == LL97 else c.berdo_table()
    return int(table["periods"][0]["first_year"])


def factor_year(law: str, basis: int) -> int:
    """The year whose emission factors turn the basis year's energy into emissions: the basis
    year itself, or the law's first year when the basis is older (the tables start there)."""
    return max(basis, first_year(law))


def _ll97_periods(
    energy_kwh: Mapping[str, float], areas: Sequence[tuple[str, float]], basis: int, today: dt.date
) -> tuple[PeriodOutlook, ...]:
    from bpservice.domain import compliance as c

    emissions = c.ll97_assess(energy_kwh, areas, factor_year(LL97, basis)).emissions_tco2e
    out = []
    for first, last in _LL97_PERIODS:
        if last < today.year:
            continue
        label = period_label(first, last if first != LAST_YEAR else None)
        try:
            r = c.ll97_assess(energy_kwh, areas, max(first, today.year))
        except c.ComplianceError:
            out.append(
                PeriodOutlook(
                    label, first, last, None, emissions, None, None,
                    note="LL97 limits for this period are not in the published table used.",
                )
            )  # fmt: skip
            continue
        excess = max(0.0, emissions - r.limit_tco2e)
        penalty = excess * r.penalty_usd_per_tco2e
        out.append(PeriodOutlook(label, first, last, r.limit_tco2e, emissions, excess, penalty))
    return tuple(out)


def _berdo_periods(
    energy_kwh: Mapping[str, float],
    areas: Sequence[tuple[str, float]],
    basis: int,
    gross_sqft: float,
    today: dt.date,
) -> tuple[PeriodOutlook, ...]:
    from bpservice.domain import compliance as c

    year = factor_year(BERDO, basis)
    emissions = c.berdo_assess(energy_kwh, areas, year, gross_sqft=gross_sqft).emissions_tco2e
    out = []
    for period in c.berdo_table()["periods"]:
        first, last = int(period["first_year"]), period["last_year"]
        last = LAST_YEAR if last is None else int(last)
        if last < today.year or first > LAST_YEAR:
            continue
        year = max(first, today.year)
        r = c.berdo_assess(energy_kwh, areas, year, gross_sqft=gross_sqft)
        excess = max(0.0, emissions - r.allowed_tco2e)
        in_force = r.standards_in_force
        note = "" if in_force else "Standards apply to this building from 2030: no payment due."
        out.append(
            PeriodOutlook(
                period_label(first, None if first == LAST_YEAR else last),
                first,
                last,
                r.allowed_tco2e,
                emissions,
                excess,
                excess * r.acp_usd_per_tco2e if in_force else 0.0,
                note=note,
            )
        )
    return tuple(out)


def outlook(
    *,
    country: str | None,
    state: str | None,
    city: str | None,
    gfa_m2: float,
    primary_use_type: str,
    use_types: Sequence[tuple[str, float]] | None,
    meters: Sequence[MeterInfo],
    readings: Sequence[ReadingInfo],
    today: dt.date,
) -> ComplianceOutlook:
    """The building's law, whether it is covered, and each period's limit, emissions, excess and
    penalty from the current period to 2050, holding the basis year's emissions constant."""
    from bpservice.domain import compliance as c

    law = law_for(country, state, city)
    if law is None:
        return _not_covered(None, "No city emissions law (LL97, BERDO) applies here.")
    areas = c.areas_by_use_type(
        gfa_m2, primary_use_type, [{"type": t, "gfa_m2": a} for t, a in use_types or ()]
    )
    rule = c.applicability(
        _SCHEME[law],
        country=country,
        state=state,
        city=city,
        gfa_m2=gfa_m2,
        use_types=[u for u, _ in areas],
    )
    if not rule.applicable:
        return _not_covered(law, rule.reason)
    caveat = f" {rule.caveat}" if rule.caveat else ""
    unmapped = (
        c.ll97_unmapped_use_types(areas) if law == LL97 else c.berdo_unmapped_use_types(areas)
    )
    if unmapped:
        reason = (
            f"Use type(s) {', '.join(unmapped)} have no {law} equivalent: add a use-type breakdown."
        )
        return ComplianceOutlook(law, True, reason + caveat, None, NO_DATA)
    basis = basis_year(meters, readings, today)
    if basis is None:
        reason = f"No energy readings in a complete calendar year since {today.year - YEARS_OF_READINGS}."
        return ComplianceOutlook(law, True, reason + caveat, None, NO_DATA)
    energy, partial = year_energy(meters, readings, basis)
    try:
        if law == LL97:
            periods = _ll97_periods(energy, areas, basis, today)
        else:
            periods = _berdo_periods(energy, areas, basis, gfa_m2 * c.SQFT_PER_M2, today)
    except c.ComplianceError as exc:
        return ComplianceOutlook(law, True, exc.message + caveat, basis, NO_DATA)
    current = periods[0] if periods else None
    if current is None or current.excess_tco2e is None:
        status = NO_DATA
    else:
        status = OVER_LIMIT if current.over else COMPLIANT
    reason = f"{rule.reason} Figures projected from {basis}'s emissions"
    if factor_year(law, basis) != basis:
        reason += f" (its energy with {law}'s first factors, {factor_year(law, basis)})"
    reason += f".{caveat}"
    return ComplianceOutlook(law, True, reason, basis, status, periods, partial)


async def fetch_outlook(
    client: AsyncServiceClient,
    building: Building,
    *,
    today: dt.date,
    prop: Property | None = None,
) -> ComplianceOutlook:
    """Gather `outlook`'s inputs through the API: the building's detail when `building` is a list
    summary (use types), its property's address unless given, its meters, and up to four years of
    readings (only for a building a law may cover)."""
    if prop is None or prop.id != building.property_id:
        prop = await client.properties.get(building.property_id)
    address = prop.address
    if law_for(address.country, address.state, address.city) is None:
        return _not_covered(None, "No city emissions law (LL97, BERDO) applies here.")
    if building.meters is None:
        building = await client.buildings.get(building.property_id, building.id)
    meters = [
        MeterInfo(m.id, getattr(m.type, "value", str(m.type)), m.unit)
        async for m in client.meters.list_all(building_id=building.id)
    ]
    readings: list[ReadingInfo] = []
    if meters:
        since = dt.date(today.year - YEARS_OF_READINGS, 1, 1)
        async for r in client.readings.list_many([m.id for m in meters], start_date=since):
            readings.append(ReadingInfo(r.meter_id, r.start_date, r.end_date, r.consumption))
    return outlook(
        country=address.country,
        state=address.state,
        city=address.city,
        gfa_m2=building.gfa_m2,
        primary_use_type=building.primary_use_type,
        use_types=[(u.type, u.gfa_m2) for u in building.use_types or ()],
        meters=meters,
        readings=readings,
        today=today,
    )
