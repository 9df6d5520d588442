"""Validate: the checks that need every reading of a meter at once, before anything is sent.

Errors (the row is not sent): duplicate rows beyond the first copy are dropped (reported), two
rows whose periods overlap are both rejected (the file cannot say which is right), a reading that
overlaps one already stored is rejected (one stored with the same dates and quantity is "already
there" and skipped), and an end date after tomorrow is refused as the service would (D22).

Warnings (sent anyway): gaps between consecutive readings, periods far longer or shorter than the
meter's usual ones, negative values, and the spike/drop flags the service will set, computed
exactly as the service does (docs/decisions.md D20; `anomaly_flags` below mirrors
bpservice.domain.readings, and tests/ingest/test_anomaly_agree.py checks they agree).

Readings are kept in compact per-meter arrays (about 60 bytes a reading), never one object per
row, so a million-row file validates in bounded memory."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from bpsync.ingest.normalise import Candidate
from bpsync.ingest.problems import Problem, Severity, Where

SPIKE_FACTOR = 3.0
DROP_FACTOR = 0.25
WINDOW_DAYS = 365
MIN_HISTORY = 1
_MONTH_DAYS = range(27, 33)
LONG_PERIOD_DAYS = 366
_NAN = math.nan


# ---- the service's anomaly rule, reimplemented ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PastReading:
    start: dt.date
    end: dt.date
    consumption: float

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def _days_before(day: dt.date, days: int) -> dt.date:
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
    since = _days_before(start, WINDOW_DAYS)
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


# ---- collecting ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredReading:
    """A reading already on the service (fetched once per meter by the network stage)."""

    start: dt.date
    end: dt.date
    consumption: float
    id: str | None = None


COLUMNS = {
    "rows": np.int64,
    "starts": np.int64,  # day ordinals
    "ends": np.int64,
    "consumption": np.float64,
    "cost": np.float64,  # NaN: none
    "demand": np.float64,  # NaN: none
    "currency": np.int16,  # index into Collected.currencies, -1: none
    "estimated": np.int8,
    "cols": np.int64,  # the value column of a wide layout, -1: none
}


class _MeterSet:
    """One meter's readings from the file: views of the collection's columns (about 60 bytes a
    reading in all), rows lo..hi of them."""

    __slots__ = ("_columns", "hi", "key", "lo", "meter_id", "unit")

    def __init__(
        self,
        key: str,
        meter_id: str | None,
        unit: str | None,
        columns: Mapping[str, np.ndarray],
        lo: int,
        hi: int,
    ) -> None:
        self.key, self.meter_id, self.unit = key, meter_id, unit
        self._columns, self.lo, self.hi = columns, lo, hi

    def __len__(self) -> int:
        return self.hi - self.lo

    def __getattr__(self, name: str) -> np.ndarray:
        if name in COLUMNS:
            return self._columns[name][self.lo : self.hi]
        raise AttributeError(name)

    def lists(self) -> SimpleNamespace:
        """The readings as Python lists (for the reading-by-reading checks)."""
        return SimpleNamespace(
            key=self.key,
            meter_id=self.meter_id,
            unit=self.unit,
            **{name: getattr(self, name).tolist() for name in COLUMNS},
        )


def collected_from(
    meters: Sequence[tuple[str, str | None, str | None, Mapping[str, Sequence[Any]]]],
    **fields: Any,
) -> Collected:
    """A Collected from per-meter columns ((key, meter id, unit, {column: values})), in order."""
    columns = {
        name: np.concatenate(
            [np.asarray(cols.get(name, ()), dtype=dtype) for _, _, _, cols in meters]
        )
        if meters
        else np.empty(0, dtype=dtype)
        for name, dtype in COLUMNS.items()
    }
    collected = Collected(columns=columns, **fields)
    lo = 0
    for key, meter_id, unit, cols in meters:
        hi = lo + len(cols["rows"])
        collected.meters[meter_id or key] = _MeterSet(key, meter_id, unit, columns, lo, hi)
        lo = hi
    return collected


@dataclass
class Collected:
    """Everything the file said, before the file-level checks: readings grouped by meter, and the
    row problems found so far."""

    meters: dict[str, _MeterSet] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    currencies: list[str] = field(default_factory=list)
    file: str = ""
    sheet: str | None = None
    rows_read: int = 0
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # every meter's, meter by meter

    @property
    def count(self) -> int:
        return sum(len(m) for m in self.meters.values())

    def meter_ranges(self) -> dict[str, tuple[dt.date, dt.date]]:
        """meter id → (first start, last end) of the file's readings, widened a year back: the
        range of stored readings the network stage should fetch (overlaps and anomaly history)."""
        out = {}
        for m in self.meters.values():
            if m.meter_id is None or not len(m):
                continue
            first = dt.date.fromordinal(int(m.starts.min()))
            out[m.meter_id] = (
                _days_before(first, WINDOW_DAYS + 1),
                dt.date.fromordinal(int(m.ends.max())),
            )
        return out


def _nan_safe(value: float) -> float:
    return -math.inf if math.isnan(value) else value  # NaN never equals itself


# ---- validating ---------------------------------------------------------------------------------


@dataclass
class ValidationResult:
    """What may be sent (by meter, by start date), and every problem with its row."""

    collected: Collected
    accepted: dict[str, array] = field(default_factory=dict)  # meter key → indices, by start
    flags: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # predicted anomalies
    problems: list[Problem] = field(default_factory=list)
    already_stored: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def rejected_rows(self) -> set[int]:
        return {p.where.row for p in self.problems if p.is_error and p.where.row is not None}

    @property
    def accepted_count(self) -> int:
        return sum(len(v) for v in self.accepted.values())

    def meters(self) -> list[str]:
        return list(self.accepted)

    def candidates(self, meter: str) -> Iterator[Candidate]:
        """The readings of one meter that passed, by start date (what the planner batches)."""
        m = self.collected.meters[meter].lists()
        cur = self.collected.currencies
        for i in self.accepted.get(meter, ()):
            cost, demand = m.cost[i], m.demand[i]
            yield Candidate(
                m.rows[i],
                m.key,
                m.meter_id,
                dt.date.fromordinal(m.starts[i]),
                dt.date.fromordinal(m.ends[i]),
                m.consumption[i],
                m.unit,
                None if math.isnan(cost) else cost,
                cur[m.currency[i]] or None if m.currency[i] >= 0 else None,
                None if math.isnan(demand) else demand,
                bool(m.estimated[i]),
                None if m.cols[i] < 0 else m.cols[i],
            )

    def counts_by_meter_id(self) -> dict[str, int]:
        """How many readings passed, per meter id (what a dry run plans without building them)."""
        out: dict[str, int] = {}
        for meter, accepted in self.accepted.items():
            meter_id = self.collected.meters[meter].meter_id
            if meter_id is not None and len(accepted):
                out[meter_id] = out.get(meter_id, 0) + len(accepted)
        return out

    def all_candidates(self) -> Iterator[Candidate]:
        for meter in self.accepted:
            yield from self.candidates(meter)

    def summary(self) -> dict[str, int]:
        return {
            "rows_read": self.collected.rows_read,
            "readings": self.accepted_count,
            "meters": sum(1 for v in self.accepted.values() if len(v)),
            "rejected_rows": len(self.rejected_rows),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "already_stored": self.already_stored,
        }


def validate(
    collected: Collected,
    *,
    existing: Mapping[str, Sequence[StoredReading]] | None = None,
    today: dt.date | None = None,
    start_column: tuple[str, int] | None = None,
    value_columns: Mapping[int, str] | None = None,
    consumption_column: int | None = None,
) -> ValidationResult:
    """Run the file-level checks. `existing` maps a meter id to its stored readings (in and a year
    before the file's range, see `Collected.meter_ranges`); `today` enables the future-date check
    (the service allows ends up to one day ahead of its UTC date). `start_column` names the column
    period problems point at; value problems point at the reading's consumption column
    (`consumption_column`, or the wide layout's own column), named by `value_columns`.

    Meters without stored readings are checked column-wise (`bpsync.ingest.checks`); a meter with
    stored readings reading by reading against them, and the anomaly flags of all such meters
    together at the end (`_flag_stored_meters`). Problems come out in row order, errors first
    within a row, then in the order the checks run."""
    from bpsync.ingest.checks import Context, check_meters

    result = ValidationResult(collected)
    last_allowed = (today + dt.timedelta(days=1)).toordinal() if today else None
    col_name, col_index = start_column or (None, None)
    names = value_columns or {}

    def where(row: int, column: int | None = None) -> Where:
        if column is None or column < 0:
            return Where(collected.file, collected.sheet, row, col_name, col_index)
        return Where(collected.file, collected.sheet, row, names.get(column), column)

    keyed: list[tuple[tuple[Any, ...], Problem]] = [
        ((p.where.row is None, p.where.row or 0, p.severity != "error", 0, i), p)
        for i, p in enumerate(collected.problems)
    ]
    context = Context(where, last_allowed, consumption_column, keyed)
    # Stored readings still arriving (an importer's ArrivingStored): the meters not waiting for
    # any go first, and those without stored readings are checked before the rest arrive.
    # Problems are keyed by the meter's place in the file, so the order checked changes nothing.
    awaited = getattr(existing, "awaited", None)
    later: dict[str, int] = awaited() if callable(awaited) else {}  # meter → expected arrival
    meters = sorted(
        enumerate(collected.meters.items()), key=lambda pm: later.get(pm[1][1].meter_id, -1)
    )
    plain: list[tuple[int, str, _MeterSet]] = []
    plain_later: list[tuple[int, str, _MeterSet]] = []
    ready_checked = False
    for position, (key, m) in meters:
        if m.meter_id in later and not ready_checked:
            check_meters(result, context, plain)
            ready_checked = True
        stored = existing.get(m.meter_id, ()) if existing is not None and m.meter_id else ()
        if stored:
            _check_meter_with_stored(result, context, position, key, m, stored)
        else:
            (plain_later if ready_checked else plain).append((position, key, m))
    check_meters(result, context, sorted(plain_later) if ready_checked else plain)
    _flag_stored_meters(result, context)
    result.accepted = {key: result.accepted[key] for key in collected.meters}  # file order
    keyed.sort(key=lambda kp: kp[0])
    result.problems = [p for _, p in keyed]
    return result


def _check_meter_with_stored(
    result: ValidationResult,
    context: Any,
    position: int,
    key: str,
    meter: _MeterSet,
    stored_readings: Sequence[StoredReading],
) -> None:
    """One meter with readings already on the service, reading by reading."""
    where, last_allowed = context.where, context.last_allowed
    emitted = itertools.count()
    n = len(meter)
    m = meter.lists()

    def add(
        code: str,
        reason: str,
        row: int,
        meter: str,
        severity: Severity = "error",
        value: str | None = None,
        column: int | None = None,
    ) -> None:
        problem = Problem(code, reason, where(row, column), value, severity, meter)
        context.keyed.append(
            ((False, row, severity != "error", 1, position, next(emitted)), problem)
        )

    fmt = dt.date.fromordinal
    order = sorted(range(n), key=lambda i: (m.starts[i], m.ends[i], m.rows[i]))
    rejected: set[int] = set()
    # Duplicates and overlaps inside the file.
    # Sorted by period, identical readings are neighbours: compare within one period only.
    seen: dict[tuple[float, float, float], int] = {}
    period: tuple[int, int] | None = None
    kept: list[int] = []
    for i in order:
        if (m.starts[i], m.ends[i]) != period:
            period, seen = (m.starts[i], m.ends[i]), {}
        sig = tuple(_nan_safe(v) for v in (m.consumption[i], m.cost[i], m.demand[i]))
        first = seen.get(sig)  # type: ignore[arg-type]
        if first is not None:
            add(
                "duplicate_row",
                f"the same reading as row {m.rows[first]}; sent once",
                m.rows[i],
                m.key,
                "warning",
            )
            rejected.add(i)  # not an error: dropped, the first copy goes
            continue
        seen[sig] = i  # type: ignore[index]
        kept.append(i)
    latest: int | None = None  # the kept reading reaching furthest so far
    for i in kept:
        if latest is not None and m.starts[i] <= m.ends[latest]:
            for a, b in ((i, latest), (latest, i)):
                add(
                    "overlap",
                    f"{fmt(m.starts[a])}..{fmt(m.ends[a])} overlaps row {m.rows[b]} "
                    f"({fmt(m.starts[b])}..{fmt(m.ends[b])}); both dates are inclusive",
                    m.rows[a],
                    m.key,
                )
            rejected.update((i, latest))
        if latest is None or m.ends[i] > m.ends[latest]:
            latest = i
    # Against what the service already holds.
    stored = sorted(stored_readings, key=lambda s: s.start)
    stored_starts = [s.start.toordinal() for s in stored]
    for i in kept:
        if i in rejected:
            continue
        if last_allowed is not None and m.ends[i] > last_allowed:
            add(
                "future_date",
                f"the period ends {fmt(m.ends[i])}, in the future",
                m.rows[i],
                m.key,
            )
            rejected.add(i)
            continue
        pos = bisect.bisect_right(stored_starts, m.ends[i])
        for s in stored[max(pos - 2, 0) : pos] if stored else ():
            if s.start.toordinal() <= m.ends[i] and m.starts[i] <= s.end.toordinal():
                same = (
                    s.start.toordinal() == m.starts[i]
                    and s.end.toordinal() == m.ends[i]
                    and math.isclose(s.consumption, m.consumption[i], rel_tol=1e-9, abs_tol=1e-9)
                )
                if same:
                    result.already_stored += 1
                    add(
                        "already_stored",
                        "already stored on the service with the same values; skipped",
                        m.rows[i],
                        m.key,
                        "notice",
                    )
                else:
                    value_same = math.isclose(
                        s.consumption, m.consumption[i], rel_tol=1e-9, abs_tol=1e-9
                    )
                    unit = f" {m.unit}" if m.unit else ""
                    add(
                        "overlap_stored",
                        f"{fmt(m.starts[i])}..{fmt(m.ends[i])} overlaps stored reading "
                        f"{s.id or ''} ({s.start}..{s.end})".replace("  ", " ")
                        + (
                            f" with the same value ({s.consumption:g}{unit})"
                            if value_same
                            else f" with a different value ({s.consumption:g}{unit} stored, "
                            f"{m.consumption[i]:g}{unit} in the file)"
                        ),
                        m.rows[i],
                        m.key,
                    )
                rejected.add(i)
                break
    accepted = [i for i in kept if i not in rejected]
    result.accepted[key] = array("l", accepted)
    _warnings(m, accepted, stored, add, context.consumption_column)
    # Its anomaly flags are worked out with every other such meter's (`_flag_stored_meters`).
    context.stored_flags.append((m, accepted, stored, add))


def _warnings(
    m: Any,
    accepted: list[int],
    stored: Sequence[StoredReading],
    add: Callable[..., None],
    consumption_column: int | None,
) -> None:
    fmt = dt.date.fromordinal
    lengths = sorted(m.ends[i] - m.starts[i] + 1 for i in accepted)
    median = lengths[len(lengths) // 2] if len(lengths) >= 3 else None
    previous_end: int | None = None
    previous_row: int | None = None
    stored_ends = sorted(s.end.toordinal() for s in stored)
    for i in accepted:
        days = m.ends[i] - m.starts[i] + 1
        value_col = m.cols[i] if m.cols[i] >= 0 else consumption_column
        if m.consumption[i] < 0:
            add(
                "negative",
                "the consumption is negative (the service flags it 'negative')",
                m.rows[i],
                m.key,
                "warning",
                f"{m.consumption[i]:g}",
                value_col,
            )
        if days > LONG_PERIOD_DAYS:
            add("long_period", f"the period is {days} days long", m.rows[i], m.key, "warning")
        elif median is not None and (days > 2 * median or days * 2 < median):
            kind = "long_period" if days > median else "short_period"
            add(
                kind,
                f"the period is {days} days; this meter's readings are usually {median}",
                m.rows[i],
                m.key,
                "warning",
            )
        before = previous_end
        pos = bisect.bisect_left(stored_ends, m.starts[i])
        if pos:
            before = max(before or 0, stored_ends[pos - 1])
        if before is not None and m.starts[i] > before + 1:
            gap = m.starts[i] - before - 1
            after = f"row {previous_row}" if before == previous_end else "a stored reading"
            add(
                "gap",
                f"{gap} days without data between {after} (ends {fmt(before)}) and this reading",
                m.rows[i],
                m.key,
                "warning",
            )
        previous_end, previous_row = m.ends[i], m.rows[i]


def _flag_stored_meters(result: ValidationResult, context: Any) -> None:
    """The anomaly flags of the meters checked against stored readings, all at once: each
    accepted reading's 12-month window over the meter's stored readings, then over the file's
    earlier readings, summed in that order as the service sums them (`flags_by_ordinal`'s
    arithmetic on arrays; tests/ingest/test_checks.py holds the two equal)."""
    from bpsync.ingest.checks import (
        FLAG_NAMES,
        anomaly_codes,
        averages,
        flag_reason,
        window_sums,
    )

    pending = context.stored_flags
    if not pending:
        return
    n_new = [len(accepted) for _, accepted, _, _ in pending]
    n_old = [len(stored) for _, _, stored, _ in pending]
    tg = np.repeat(np.arange(len(pending), dtype=np.int64), n_new)
    hg = np.repeat(np.arange(len(pending), dtype=np.int64), n_old)

    def new(field: str, dtype: Any) -> np.ndarray:
        return np.fromiter(
            (getattr(m, field)[i] for m, acc, _, _ in pending for i in acc), dtype, len(tg)
        )

    def old(read: Callable[[StoredReading], Any], dtype: Any) -> np.ndarray:
        return np.fromiter((read(r) for _, _, st, _ in pending for r in st), dtype, len(hg))

    ts, te, tc = new("starts", np.int64), new("ends", np.int64), new("consumption", float)
    hs = old(lambda r: r.start.toordinal(), np.int64)
    he = old(lambda r: r.end.toordinal(), np.int64)
    hc = old(lambda r: r.consumption, float)
    stored_part = window_sums((hg, hs, he, hc), (tg, ts, te))
    codes = anomaly_codes(tc, averages(*window_sums((tg, ts, te, tc), (tg, ts, te), stored_part)))
    flagged = np.flatnonzero(codes)
    first = np.concatenate(([0], np.cumsum(n_new)))
    meter_of = np.searchsorted(first, flagged, side="right") - 1
    for q, p in zip(flagged.tolist(), meter_of.tolist(), strict=True):
        m, accepted, _, add = pending[p]
        i = accepted[q - int(first[p])]
        flag = FLAG_NAMES[codes[q]]
        result.flags[(m.meter_id or m.key, m.rows[i])] = [flag]
        if flag in ("spike", "drop"):
            add(
                flag,
                flag_reason(flag),
                m.rows[i],
                m.key,
                "warning",
                f"{m.consumption[i]:g}",
                m.cols[i] if m.cols[i] >= 0 else context.consumption_column,
            )
