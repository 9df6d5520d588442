"""Tables for benchmarks (service part 2).

- `meter_months`: one row per meter and calendar month with the readings prorated over their
  days. A readings change rewrites only the months it touches, so recalculation work grows with the
  changed period, not with the meter's history.
- `benchmark_summaries`: one row per building with its current reporting period, annualised kWh
  by meter type and data quality, rewritten after each recalculation. Peer groups and the portfolio
  read these rows instead of aggregating every building's months.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Boolean, Date, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from bpservice.db.models import Base
from bpservice.db.types import UTCDateTime


class MeterMonth(Base):
    __tablename__ = "meter_months"
    __table_args__ = (Index("ix_meter_months_building_month", "building_id", "month"),)

    meter_id: Mapped[str] = mapped_column(ForeignKey("meters.id"), primary_key=True)
    month: Mapped[dt.date] = mapped_column(Date, primary_key=True)  # first day of the month
    building_id: Mapped[str] = mapped_column(String(32))
    meter_type: Mapped[str] = mapped_column(String(32))
    # Prorated consumption in the meter's unit, and in site kWh (None: not an energy meter).
    quantity: Mapped[float] = mapped_column(Float)
    kwh: Mapped[float | None] = mapped_column(Float)
    covered_days: Mapped[int] = mapped_column(Integer)
    month_days: Mapped[int] = mapped_column(Integer)
    # Readings that end in this month, and those of them with an anomaly flag.
    readings: Mapped[int] = mapped_column(Integer)
    flagged: Mapped[int] = mapped_column(Integer)


class BenchmarkSummary(Base):
    __tablename__ = "benchmark_summaries"
    __table_args__ = (Index("ix_benchmark_summaries_scope", "org_id", "environment"),)

    building_id: Mapped[str] = mapped_column(ForeignKey("buildings.id"), primary_key=True)
    org_id: Mapped[str] = mapped_column(String(32))
    environment: Mapped[str] = mapped_column(String(8))
    period_start: Mapped[dt.date | None] = mapped_column(Date)
    period_end: Mapped[dt.date | None] = mapped_column(Date)
    # Annualised site kWh per meter type over the period; {} without energy data.
    kwh_by_type: Mapped[dict[str, Any]] = mapped_column(JSON)
    twelve_full_months: Mapped[bool] = mapped_column(Boolean)
    data_quality_grade: Mapped[str] = mapped_column(String(1))
    quality_points: Mapped[float] = mapped_column(Float)
    calculated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
