"""Reading storage: the queries behind overlap checks and anomaly history, kept to index seeks over
the changed period (never a scan of the meter's whole history)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bpservice.db.models import Reading
from bpservice.domain.readings import WINDOW_DAYS, PastReading


def readings_near(
    session: Session, meter_id: str, start: dt.date, end: dt.date
) -> list[tuple[str, dt.date, dt.date, float]]:
    """(id, start, end, consumption) of the meter's readings that end on or after a year before
    `start` and begin on or before `end`: every reading that could overlap a reading in
    start..end, and every reading in the anomaly window of one."""
    since = start - dt.timedelta(days=WINDOW_DAYS)
    rows = session.execute(
        select(Reading.id, Reading.start_date, Reading.end_date, Reading.consumption)
        .where(Reading.meter_id == meter_id, Reading.end_date >= since, Reading.start_date <= end)
        .order_by(Reading.start_date)
    ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def as_history(rows: list[tuple[str, dt.date, dt.date, float]]) -> list[PastReading]:
    return [PastReading(start, end, consumption) for _id, start, end, consumption in rows]


def latest_end_date(session: Session, meter_id: str) -> dt.date | None:
    return session.scalar(select(func.max(Reading.end_date)).where(Reading.meter_id == meter_id))
