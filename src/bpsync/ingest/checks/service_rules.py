"""The service's rules, reimplemented so a dry run says what the service will do: the anomaly
flags it sets (spike, drop, negative; docs/decisions.md D20; mirrors bpservice.domain.readings,
and tests/ingest/test_anomaly_agree.py checks they agree), and the period lengths it calls long.

The scalar rule (`flags_by_ordinal`) and the column-wise one (`window_sums`, `anomaly_codes`) sum
the 12-month average in the service's order with the same float operations, one window position
at a time across all readings, so the 3x / 25 % comparisons come out identical
(tests/ingest/differential and tests/ingest/test_checks.py)."""

from __future__ import annotations

import bisect
import datetime as dt
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

SPIKE_FACTOR = 3.0
DROP_FACTOR = 0.25
WINDOW_DAYS = 365
MIN_HISTORY = 1
_MONTH_DAYS = range(27, 33)
LONG_PERIOD_DAYS = 366
# Day ordinals stay below 3,652,060 (9999-12-31): adding meter * SPAN keeps meters apart in one
# sorted array.
SPAN = 4_000_000
_LONG = np.dtype(f"i{array('l').itemsize}")
_BLOCK = 1 << 17  # readings per block of the window average


# ---- the service's anomaly rule, reimplemented ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PastReading:
    start: dt.date
    end: dt.date
    consumption: float

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def days_before(day: dt.date, days: int) -> dt.date:
    if (day - dt.date.min).days < days:
        return dt.date.min
    return day - dt.timedelta(days=days)


def twelve_month_average(
    history: Iterable[PastReading], start: dt.date, end: dt.date
) -> float | None:
    """The average the service compares a new start..end reading with (D20): earlier readings
    ending in the 365 days before `start`, per day scaled to the new length, monthly bills (27-32
    days) compared bill to bill, negative ones left out; None below one reading."""
    new_days = (end - start).days + 1
    since = days_before(start, WINDOW_DAYS)
    values = [
        p.consumption
        if p.days in _MONTH_DAYS and new_days in _MONTH_DAYS
        else p.consumption * new_days / p.days
        for p in history
        if since <= p.end < start and p.consumption >= 0
    ]
    if len(values) < MIN_HISTORY:
        return None
    return sum(values) / len(values)


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


def predict_flags(
    readings: Sequence[PastReading], stored: Sequence[PastReading] = ()
) -> list[list[str]]:
    """The flags the service will give each of `readings` (one meter, non-overlapping, in the
    order they will be submitted: by start date) when `stored` is already there."""
    order = sorted(range(len(readings)), key=lambda i: readings[i].start)
    stored = sorted(stored, key=lambda p: p.start)
    flags = flags_by_ordinal(
        [readings[i].start.toordinal() for i in order],
        [readings[i].end.toordinal() for i in order],
        [readings[i].consumption for i in order],
        [p.start.toordinal() for p in stored],
        [p.end.toordinal() for p in stored],
        [p.consumption for p in stored],
    )
    out: list[list[str]] = [[] for _ in readings]
    for pos, i in enumerate(order):
        out[i] = flags[pos]
    return out


def flags_by_ordinal(
    starts: Sequence[int],
    ends: Sequence[int],
    consumption: Sequence[float],
    stored_starts: Sequence[int],
    stored_ends: Sequence[int],
    stored_consumption: Sequence[float],
) -> list[list[str]]:
    """`predict_flags` on day ordinals, both lists sorted by start (the hot path of `validate`).

    The service's history is the stored readings (by start) followed by the batch; only readings
    ending in the year before a reading starts count, and readings of a meter never overlap, so the
    window is one slice of each list. Values are summed in the service's order with the same
    arithmetic, so the comparisons at the 3x / 25 % thresholds come out identical."""
    out: list[list[str]] = []
    for pos in range(len(starts)):
        start, c = starts[pos], consumption[pos]
        if c < 0:
            out.append(["negative"])
            continue
        new_days = ends[pos] - start + 1
        monthly = 27 <= new_days <= 32
        since = max(start - WINDOW_DAYS, 1)  # date.min is ordinal 1
        values = []
        for e_list, s_list, c_list, hi in (
            (stored_ends, stored_starts, stored_consumption, len(stored_ends)),
            (ends, starts, consumption, pos),
        ):
            lo = bisect.bisect_left(e_list, since, 0, hi)
            top = bisect.bisect_left(e_list, start, lo, hi)
            for k in range(lo, top):
                past = c_list[k]
                if past < 0:
                    continue
                days = e_list[k] - s_list[k] + 1
                values.append(past if monthly and 27 <= days <= 32 else past * new_days / days)
        average = sum(values) / len(values) if len(values) >= MIN_HISTORY else None
        out.append(anomaly_flags(c, average))
    return out


def window_averages(g: np.ndarray, s: np.ndarray, e: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The service's 12-month average for each reading (NaN where it has no history): readings
    of the same meter (`g`, sorted by start, not overlapping) ending in the 365 days before it
    starts, monthly bills bill to bill, others per day scaled, negative ones left out; summed
    oldest first, as the service does, one window position at a time."""
    return averages(*window_sums((g, s, e, c), (g, s, e)))


def averages(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The window average where the window holds enough readings, else NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count >= MIN_HISTORY, total / np.maximum(count, 1), np.nan)


def window_sums(
    history: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    targets: tuple[np.ndarray, np.ndarray, np.ndarray],
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each target reading (meter group, start, end): the sum and count of its 12-month
    window over `history` (group, start, end, consumption; sorted by group then start, not
    overlapping), added in history order onto `start` (sums and counts carried over from an
    earlier part of the history: the service sums its stored readings, then the batch)."""
    hg, hs, he, c = history
    g, s, e = targets
    days = he - hs + 1
    monthly = (days >= 27) & (days <= 32)
    target_days = e - s + 1
    target_monthly = (target_days >= 27) & (target_days <= 32)
    keyed_end = he + hg * SPAN
    since = np.maximum(s - WINDOW_DAYS, 1) + g * SPAN
    lo = np.searchsorted(keyed_end, since, side="left")
    hi = np.searchsorted(keyed_end, s + g * SPAN, side="left")
    if start is None:
        total, count = np.zeros(len(s)), np.zeros(len(s), dtype=np.int64)
    else:
        total, count = start[0].copy(), start[1].copy()
    # In blocks of readings: each reading's sum is its own, and a block's temporaries stay a
    # few MB however long the file is. Within a block the readings still summing are kept as
    # compact arrays (their own days, partial sums, next past reading), written back as each
    # window ends.
    for block in range(0, len(s), _BLOCK):
        active = block + np.flatnonzero(hi[block : block + _BLOCK] > lo[block : block + _BLOCK])
        k, end = lo[active], hi[active]
        own_days, own_monthly = target_days[active], target_monthly[active]
        sums, counts = total[active], count[active]
        while len(active):
            past = c[k]
            both = own_monthly & monthly[k]
            # Bills of a monthly pair count as they are; others per day, scaled to this one.
            value = past if both.all() else np.where(both, past, past * own_days / days[k])
            use = past >= 0
            if use.all():
                sums += value
                counts += 1
            else:  # adding 0.0 leaves a sum unchanged (values >= 0 from +0.0: never -0.0)
                sums += np.where(use, value, 0.0)
                counts += use
            k = k + 1
            more = k < end
            if not more.all():
                done = ~more
                total[active[done]], count[active[done]] = sums[done], counts[done]
                active, k, end = active[more], k[more], end[more]
                own_days, own_monthly = own_days[more], own_monthly[more]
                sums, counts = sums[more], counts[more]
    return total, count


FLAG_NAMES = ("", "negative", "spike", "drop")  # by `anomaly_codes`' code


def flag_reason(flag: str) -> str:
    """The warning that says a reading will be flagged "spike" or "drop"."""
    what = "3 times or more" if flag == "spike" else "under a quarter of"
    return f"the service will flag this reading '{flag}': {what} the meter's 12-month average"


def anomaly_codes(consumption: np.ndarray, average: np.ndarray) -> np.ndarray:
    """`anomaly_flags` of each reading as a code: 0 none, 1 negative, 2 spike, 3 drop."""
    has = ~np.isnan(average) & (average > 0)
    negative = consumption < 0
    base = np.where(has, average, 0)
    spike = ~negative & has & (consumption >= SPIKE_FACTOR * base)
    drop = ~negative & has & ~spike & (consumption < DROP_FACTOR * base)
    return np.select([negative, spike, drop], [1, 2, 3], 0)
