"""The file-level checks for a meter with readings already on the service, reading by reading
against them: duplicates, overlaps within the file and with stored readings (one stored with the
same dates and quantity is "already there" and skipped), future dates, negative values, unusual
period lengths and gaps; then the anomaly flags of all such meters together
(`flag_stored_meters`), over their stored readings and the file's earlier ones."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import math
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bpsync.ingest.checks.collected import MeterSet, StoredReading, ValidationResult
from bpsync.ingest.checks.service_rules import (
    FLAG_NAMES,
    LONG_PERIOD_DAYS,
    anomaly_codes,
    averages,
    flag_reason,
    window_sums,
)
from bpsync.ingest.problems import Problem, Severity


def _nan_safe(value: float) -> float:
    return -math.inf if math.isnan(value) else value  # NaN never equals itself


def check_meter_with_stored(
    result: ValidationResult,
    context: Any,
    position: int,
    key: str,
    meter: MeterSet,
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
    # Its anomaly flags are worked out with every other such meter's (`flag_stored_meters`).
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


def flag_stored_meters(result: ValidationResult, context: Any) -> None:
    """The anomaly flags of the meters checked against stored readings, all at once: each
    accepted reading's 12-month window over the meter's stored readings, then over the file's
    earlier readings, summed in that order as the service sums them (`flags_by_ordinal`'s
    arithmetic on arrays; tests/ingest/test_checks.py holds the two equal)."""
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
