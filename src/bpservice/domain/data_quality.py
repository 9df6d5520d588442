"""The data quality grade A-F of a building's reporting period (pure).

Rubric (docs/decisions.md (benchmarks section)): start from 100 points and subtract
- coverage: 1 point per percent of energy-meter days in the period without a reading
  (a meter with no data in the period counts as 0 % covered);
- gaps: 5 points per meter-month of the period that is not fully covered, at most 40;
- anomalies: 1 point per percent of the period's readings carrying a spike/drop/negative flag,
  at most 25;
- meter completeness: 20 points times the share of energy meters with no data in the period.
Grades: A >= 95, B >= 85, C >= 70, D >= 50, E below that with some data, F with no energy data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bpservice.domain.benchmarks import MeterPeriod

GRADES = ("A", "B", "C", "D", "E", "F")
THRESHOLDS = (("A", 95.0), ("B", 85.0), ("C", 70.0), ("D", 50.0))
GAP_POINTS, GAP_CAP = 5.0, 40.0
ANOMALY_CAP = 25.0
MISSING_METER_POINTS = 20.0


@dataclass(frozen=True)
class Quality:
    grade: str
    points: float
    coverage: float  # mean share of period days covered over energy meters
    incomplete_months: int
    anomaly_share: float
    meters_with_data: int
    meters: int


def assess(meters: Sequence[MeterPeriod]) -> Quality:
    """Grade the energy meters of one period."""
    with_data = [m for m in meters if m.covered_days]
    if not with_data:
        return Quality("F", 0.0, 0.0, sum(m.incomplete_months for m in meters), 0.0, 0, len(meters))
    coverage = sum(min(m.coverage, 1.0) for m in meters) / len(meters)
    incomplete = sum(m.incomplete_months for m in meters)
    readings = sum(m.readings for m in meters)
    anomaly_share = sum(m.flagged for m in meters) / readings if readings else 0.0
    points = (
        100.0
        - 100.0 * (1.0 - coverage)
        - min(GAP_CAP, GAP_POINTS * incomplete)
        - min(ANOMALY_CAP, 100.0 * anomaly_share)
        - MISSING_METER_POINTS * (len(meters) - len(with_data)) / len(meters)
    )
    grade = next((g for g, floor in THRESHOLDS if points >= floor), "E")
    return Quality(
        grade,
        round(points, 2),
        coverage,
        incomplete,
        anomaly_share,
        len(with_data),
        len(meters),
    )


def at_least(grade: str, minimum: str) -> bool:
    """True when `grade` is `minimum` or better (A is best)."""
    return GRADES.index(grade) <= GRADES.index(minimum)
