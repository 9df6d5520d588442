"""Rules for meter readings: inclusive periods, overlap, and the anomaly flags (spike, drop, negative).

Definitions (docs/decisions.md):
- A reading covers start_date..end_date, both days included.
- The 12-month average for a reading is taken over the meter's earlier readings that end in the
  365 days before it starts (no later readings, so a backfill is judged by its own past).
- Readings of different lengths are compared per day, scaled to the new reading's length; readings
  of 27-32 days count as one calendar month each, so monthly bills compare bill to bill.
- At least one earlier reading is needed; negative earlier readings are left out of the average.
- spike: consumption >= 3 x average; drop: consumption < 25 % of average; negative: consumption < 0
  (a negative reading gets only that flag).
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass

SPIKE_FACTOR = 3.0
DROP_FACTOR = 0.25
WINDOW_DAYS = 365
MIN_HISTORY = 1
_MONTH_DAYS = range(27, 33)


@dataclass(frozen=True)
class Period:
    start: dt.date
    end: dt.date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def overlaps(self, other: Period) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class PastReading:
    start: dt.date
    end: dt.date
    consumption: float

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def days_before(day: dt.date, days: int) -> dt.date:
    """`day` minus `days`, stopping at the first representable date (year 1 is valid input)."""
    if (day - dt.date.min).days < days:
        return dt.date.min
    return day - dt.timedelta(days=days)


def in_window(past: PastReading, new_start: dt.date) -> bool:
    return days_before(new_start, WINDOW_DAYS) <= past.end < new_start


def comparable_consumption(past: PastReading, new_days: int) -> float:
    if past.days in _MONTH_DAYS and new_days in _MONTH_DAYS:
        return past.consumption
    return past.consumption * new_days / past.days


def twelve_month_average(history: Iterable[PastReading], new: Period) -> float | None:
    since = days_before(new.start, WINDOW_DAYS)
    values = [
        comparable_consumption(p, new.days)
        for p in history
        if since <= p.end < new.start and p.consumption >= 0
    ]
    if len(values) < MIN_HISTORY:
        return None
    # fsum is correctly rounded, so the average (and a reading exactly on a threshold) does not
    # depend on the order the readings arrive in.
    return math.fsum(values) / len(values)


class History:
    """A meter's readings sorted by end date, with running sums, so the 12-month average of each
    new reading costs two binary searches: a 500-reading batch of daily readings no longer makes
    500 passes over the ~365 readings of each window.

    Differences of running sums can be off in the last bits, so a consumption within a hair of a
    threshold is judged again with `twelve_month_average` over the window itself (exact rules)."""

    # Relative rounding error allowed for running sums (far above n * machine epsilon).
    _ERROR = 1e-9

    def __init__(self, readings: Iterable[PastReading]) -> None:
        self._readings = sorted((p for p in readings if p.consumption >= 0), key=lambda p: p.end)
        self._ends = [p.end for p in self._readings]
        # running sums: monthly readings' consumption, their consumption per day, and the
        # consumption per day of every other reading
        self._month = [0.0]
        self._month_per_day = [0.0]
        self._other_per_day = [0.0]
        for p in self._readings:
            monthly = p.days in _MONTH_DAYS
            self._month.append(self._month[-1] + (p.consumption if monthly else 0.0))
            per_day = p.consumption / p.days
            self._month_per_day.append(self._month_per_day[-1] + (per_day if monthly else 0.0))
            self._other_per_day.append(self._other_per_day[-1] + (0.0 if monthly else per_day))

    def _window(self, new: Period) -> tuple[int, int]:
        low = bisect.bisect_left(self._ends, days_before(new.start, WINDOW_DAYS))
        return low, bisect.bisect_left(self._ends, new.start)

    def average(self, new: Period) -> float | None:
        """The 12-month average, computed exactly over the window's readings."""
        low, high = self._window(new)
        return twelve_month_average(self._readings[low:high], new)

    def _fast_average(self, new: Period) -> tuple[float, float] | None:
        """(average, bound on its rounding error) from the running sums, or None (no history)."""
        low, high = self._window(new)
        count = high - low
        if count < MIN_HISTORY:
            return None
        per_day = (self._other_per_day, self._month_per_day)
        monthly = new.days in _MONTH_DAYS
        sums = per_day[:1] if monthly else per_day
        total = sum(s[high] - s[low] for s in sums) * new.days
        # The sums only grow (negative readings are left out), so their size bounds the error
        # that subtracting them can leave, however small the difference is.
        size = sum(s[high] + s[low] for s in sums) * new.days
        if monthly:
            total += self._month[high] - self._month[low]
            size += self._month[high] + self._month[low]
        return total / count, self._ERROR * size / count

    def flags(self, consumption: float, new: Period) -> list[str]:
        if consumption < 0:
            return ["negative"]
        fast = self._fast_average(new)
        if fast is None:
            return []
        average, error = fast
        # Too close to zero or to a threshold to trust the last bits: sum the window exactly.
        if average <= error or any(
            abs(consumption - f * average) <= f * error * 2 for f in (SPIKE_FACTOR, DROP_FACTOR)
        ):
            return anomaly_flags(consumption, self.average(new))
        return anomaly_flags(consumption, average)


def anomaly_flags(consumption: float, average: float | None) -> list[str]:
    if consumption < 0:
        return ["negative"]
    if average is None or average <= 0:
        return []
    if consumption >= SPIKE_FACTOR * average:
        return ["spike"]
    if consumption < DROP_FACTOR * average:
        return ["drop"]
    return []


@dataclass(frozen=True)
class StoredReading:
    id: str
    period: Period


@dataclass(frozen=True)
class Rejection:
    code: str
    message: str
    status: int
    field: str | None = None
    extra: tuple[tuple[str, object], ...] = ()


def check_periods(
    candidates: list[tuple[int, Period]],
    stored: list[StoredReading],
    *,
    locked_through: dt.date | None,
    last_allowed_end: dt.date,
) -> dict[int, Rejection]:
    """Decide which candidate periods (in submission order) may be stored.

    A candidate is refused when it reaches into the building's locked period, ends after
    `last_allowed_end`, or overlaps a stored reading or an earlier accepted candidate of the batch.
    `stored` must hold every stored reading that could overlap a candidate. Returns the refused
    candidates by index; every other candidate is accepted.
    """
    # Accepted periods sorted by start; they never overlap, so only the neighbours can conflict.
    taken: list[tuple[dt.date, dt.date, str, object]] = sorted(
        (s.period.start, s.period.end, "stored", s.id) for s in stored
    )
    rejected: dict[int, Rejection] = {}
    for index, period in candidates:
        if locked_through is not None and period.start <= locked_through:
            rejected[index] = Rejection(
                "building_locked",
                f"The building's readings are locked through {locked_through}; "
                f"a reading starting {period.start} falls in the locked period.",
                403,
                field="start_date",
                extra=(("locked_through", locked_through.isoformat()),),
            )
            continue
        if period.end > last_allowed_end:
            rejected[index] = Rejection(
                "future_date", f"end_date {period.end} is in the future.", 422, field="end_date"
            )
            continue
        pos = bisect.bisect_left(taken, (period.start,))
        conflict = None
        if pos > 0 and taken[pos - 1][1] >= period.start:
            conflict = taken[pos - 1]
        elif pos < len(taken) and taken[pos][0] <= period.end:
            conflict = taken[pos]
        if conflict is not None:
            c_start, c_end, kind, ref = conflict
            if kind == "stored":
                what, extra = f"stored reading {ref}", (("conflicting_reading_id", ref),)
            else:
                what, extra = f"reading [{ref}] of this batch", (("conflicting_index", ref),)
            rejected[index] = Rejection(
                "reading_overlap",
                f"{period.start}..{period.end} overlaps {what} ({c_start}..{c_end}); "
                "both dates of a reading are inclusive.",
                409,
                field="start_date",
                extra=extra,
            )
            continue
        bisect.insort(taken, (period.start, period.end, "batch", index))
    return rejected
