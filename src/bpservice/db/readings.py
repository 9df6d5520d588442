"""Reading storage: the queries behind overlap checks and anomaly history, kept to index seeks over
the changed period (never a scan of the meter's whole history)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bpservice.db.models import Meter, Reading
from bpservice.domain.readings import WINDOW_DAYS, PastReading, days_before


def readings_near(
    session: Session, meter_id: str, start: dt.date, end: dt.date
) -> list[tuple[str, dt.date, dt.date, float]]:
    """Lock the meter for this write transaction, then return (id, start, end, consumption) of
    the meter's readings that end on or after a year before
    `start` and begin on or before `end`: every reading that could overlap a reading in
    start..end, and every reading in the anomaly window of one.

    Both queries are range seeks on the unique (meter_id, start_date) index. A single condition
    on end_date >= since and start_date <= end would scan every later (or every earlier) reading
    of the meter when the period lies inside a long history. Readings of one meter never overlap,
    so at most one reading that starts before `since` can still end on or after it: the latest."""
    # Writers of one meter take turns: the meter row is locked until commit, so two instances
    # storing overlapping readings at once cannot both read "no overlap" (PostgreSQL runs READ
    # COMMITTED; SQLite's BEGIN IMMEDIATE already serialises every writer).
    session.execute(select(Meter.id).where(Meter.id == meter_id).with_for_update())
    since = days_before(start, WINDOW_DAYS)
    columns = (Reading.id, Reading.start_date, Reading.end_date, Reading.consumption)
    straddling = session.execute(
        select(*columns)
        .where(Reading.meter_id == meter_id, Reading.start_date < since)
        .order_by(Reading.start_date.desc())
        .limit(1)
    ).first()
    within = session.execute(
        select(*columns)
        .where(
            Reading.meter_id == meter_id,
            Reading.start_date >= since,
            Reading.start_date <= end,
        )
        .order_by(Reading.start_date)
    ).all()
    rows = [tuple(r) for r in within]
    if straddling is not None and straddling.end_date >= since:
        rows.insert(0, tuple(straddling))
    return rows  # type: ignore[return-value]


def as_history(rows: list[tuple[str, dt.date, dt.date, float]]) -> list[PastReading]:
    return [PastReading(start, end, consumption) for _id, start, end, consumption in rows]


def latest_end_date(session: Session, meter_id: str) -> dt.date | None:
    return session.scalar(select(func.max(Reading.end_date)).where(Reading.meter_id == meter_id))
