"""Monthly aggregates per meter, and the building-level periods built from them (DB side).

`refresh_months` rewrites only the months a readings change touches; everything above reads at
most `months x meters` rows through the (building_id, month) index.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from bpservice.db.benchmark_models import MeterMonth
from bpservice.db.models import Meter, Reading
from bpservice.domain import benchmarks as bm
from bpservice.domain.data_quality import Quality, assess
from bpservice.domain.units import kwh_per_unit, to_m3
from bpservice.domain.vocab import ENERGY_METER_TYPES

WATER = "water"


def refresh_months(session: Session, meter: Meter, start: dt.date, end: dt.date) -> None:
    """Recompute the meter's months that overlap start..end from its readings."""
    first, last = bm.month_start(start), bm.month_start(end)
    window_end = bm.month_end(last)
    columns = (Reading.start_date, Reading.end_date, Reading.consumption, Reading.anomaly_flags)
    # Readings never overlap, so at most one reading starting before `first` reaches into it:
    # both queries are range seeks on the (meter_id, start_date) index.
    straddling = session.execute(
        select(*columns)
        .where(Reading.meter_id == meter.id, Reading.start_date < first)
        .order_by(Reading.start_date.desc())
        .limit(1)
    ).all()
    within = session.execute(
        select(*columns).where(
            Reading.meter_id == meter.id,
            Reading.start_date >= first,
            Reading.start_date <= window_end,
        )
    ).all()
    spans = [
        bm.ReadingSpan(s, e, c, bool(flags))
        for s, e, c, flags in [*straddling, *within]
        if e >= first
    ]
    totals = bm.prorate(spans, first, last)
    session.execute(
        delete(MeterMonth).where(
            MeterMonth.meter_id == meter.id, MeterMonth.month >= first, MeterMonth.month <= last
        )
    )
    factor = kwh_per_unit(meter.type, meter.unit)
    rows = [
        {
            "meter_id": meter.id,
            "month": t.month,
            "building_id": meter.building_id,
            "meter_type": meter.type,
            "quantity": t.quantity,
            "kwh": None if factor is None else t.quantity * factor,
            "covered_days": t.covered_days,
            "month_days": t.days,
            "readings": t.readings,
            "flagged": t.flagged,
        }
        for t in totals
    ]
    if rows:
        session.execute(insert(MeterMonth), rows)


def meters_of(session: Session, building_ids: Collection[str]) -> dict[str, dict[str, Meter]]:
    """building id -> {meter id: meter}, every meter of the given buildings."""
    out: dict[str, dict[str, Meter]] = {b: {} for b in building_ids}
    if not building_ids:
        return out
    for meter in session.scalars(select(Meter).where(Meter.building_id.in_(list(building_ids)))):
        out[meter.building_id][meter.id] = meter
    return out


def month_rows(
    session: Session, building_ids: Collection[str], first: dt.date, last: dt.date
) -> dict[str, list[bm.MonthRow]]:
    out: dict[str, list[bm.MonthRow]] = defaultdict(list)
    if not building_ids:
        return out
    query = select(MeterMonth).where(
        MeterMonth.building_id.in_(list(building_ids)),
        MeterMonth.month >= first,
        MeterMonth.month <= last,
    )
    for r in session.scalars(query):
        out[r.building_id].append(
            bm.MonthRow(
                r.meter_id, r.month, r.kwh, r.quantity, r.covered_days, r.readings, r.flagged
            )
        )
    return out


def _latest_month(session: Session, building_id: str, energy: bool) -> dt.date | None:
    """The last month fully covered by at least one meter of the kind, else the last month with
    any data: the end of the reporting period (docs/decisions.md (benchmarks section)). Walking the
    (building_id, month) index backwards stops at the first match instead of aggregating the
    building's whole history, as max() with extra conditions would."""
    kind = MeterMonth.kwh.is_not(None) if energy else MeterMonth.meter_type == WATER
    base = (
        select(MeterMonth.month)
        .where(MeterMonth.building_id == building_id, kind)
        .order_by(MeterMonth.building_id.desc(), MeterMonth.month.desc())
        .limit(1)
    )
    full = session.scalar(base.where(MeterMonth.covered_days >= MeterMonth.month_days))
    return full or session.scalar(base.where(MeterMonth.covered_days > 0))


def first_energy_month(session: Session, building_id: str) -> dt.date | None:
    return session.scalar(
        select(MeterMonth.month)
        .where(
            MeterMonth.building_id == building_id,
            MeterMonth.kwh.is_not(None),
            MeterMonth.covered_days > 0,
        )
        .order_by(MeterMonth.building_id, MeterMonth.month)
        .limit(1)
    )


def energy_meters(meters: dict[str, Meter]) -> dict[str, str]:
    return {m.id: m.type for m in meters.values() if m.type in ENERGY_METER_TYPES}


@dataclass(frozen=True)
class Current:
    """A building's current reporting period, as computed from its monthly aggregates."""

    energy: bm.EnergyPeriod | None  # None: no energy data at all
    quality: Quality


def current(session: Session, building_id: str) -> Current:
    last = _latest_month(session, building_id, energy=True)
    if last is None:
        return Current(None, assess([]))
    meters = energy_meters(meters_of(session, [building_id])[building_id])
    period = bm.reporting_period(last)
    rows = month_rows(session, [building_id], period.start, period.end)[building_id]
    per_meter = bm.meter_periods(period, meters, rows)
    return Current(bm.energy_period(period, per_meter), assess(per_meter))


def energy_in_periods(
    session: Session, building_ids: Collection[str], periods: list[bm.Period]
) -> dict[str, list[bm.EnergyPeriod]]:
    """For each building, its EnergyPeriod in each of `periods` (same order)."""
    if not periods:
        return {b: [] for b in building_ids}
    first = min(p.start for p in periods)
    last = max(p.end for p in periods)
    rows = month_rows(session, building_ids, first, last)
    meters = meters_of(session, building_ids)
    out = {}
    for b in building_ids:
        energy = energy_meters(meters[b])
        out[b] = [
            bm.energy_period(p, bm.meter_periods(p, energy, rows.get(b, []))) for p in periods
        ]
    return out


def annual_water(session: Session, building_id: str, period: bm.Period | None) -> float | None:
    """Annualised m³ over `period` (or the water meters' own latest 12 months when None)."""
    if period is None:
        last = _latest_month(session, building_id, energy=False)
        if last is None:
            return None
        period = bm.reporting_period(last)
    meters = {
        m.id: m for m in meters_of(session, [building_id])[building_id].values() if m.type == WATER
    }
    if not meters:
        return None
    rows = month_rows(session, [building_id], period.start, period.end)[building_id]
    total, seen = 0.0, False
    for mp in bm.meter_periods(period, {m: WATER for m in meters}, rows):
        m3 = to_m3(mp.quantity, meters[mp.meter_id].unit)
        if mp.covered_days and m3 is not None:
            total += mp.annualised(m3)
            seen = True
    return total if seen else None
