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

from bpsync.ingest.checks.collected import (
    MeterSet,
    Replacement,
    StoredReading,
    ValidationResult,
)
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
    # Against what the service already holds: identical (skipped), a correction (the same
    # period, other figures) or a rebill (other periods over stored ones), sent with --update.
    stored = sorted(stored_readings, key=lambda s: s.start)
    stored_starts = [s.start.toordinal() for s in stored]
    meets: dict[int, list[int]] = {}  # row index → the stored readings it overlaps
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
        # Stored readings never overlap, so their ends rise with their starts: walk back from
        # the last one starting before this row ends while they still reach into it.
        over = []
        j = bisect.bisect_right(stored_starts, m.ends[i]) - 1
        while j >= 0 and stored[j].end.toordinal() >= m.starts[i]:
            over.append(j)
            j -= 1
        if not over:
            continue
        over.reverse()
        s = stored[over[0]]
        if len(over) == 1 and _same_period(s, m, i) and not _differences(s, m, i):
            result.already_stored += 1
            add(
                "already_stored",
                "already stored on the service with the same values; skipped",
                m.rows[i],
                m.key,
                "notice",
            )
            rejected.add(i)
            continue
        meets[i] = over
        rejected.add(i)
    for rows, olds in _groups(meets):
        _replacement(result, m, stored, rows, olds, add)
    accepted = [i for i in kept if i not in rejected]
    result.accepted[key] = array("l", accepted)
    _warnings(m, accepted, stored, add, context.consumption_column)
    # Its anomaly flags are worked out with every other such meter's (`flag_stored_meters`),
    # from the meter's arrays: its Python lists would be kept for every such meter till then
    # (about 150 MB for a million rows over meters holding readings).
    context.stored_flags.append((meter, accepted, stored, add))


def _same_period(s: StoredReading, m: Any, i: int) -> bool:
    return s.start.toordinal() == m.starts[i] and s.end.toordinal() == m.ends[i]


def _equal(a: float | None, b: float | None) -> bool:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _differences(s: StoredReading, m: Any, i: int) -> list[tuple[str, float | None, float | None]]:
    """(field, stored, file) for each figure that differs; cost and demand only when the
    stored reading's were fetched."""
    out: list[tuple[str, float | None, float | None]] = []
    if not _equal(s.consumption, m.consumption[i]):
        out.append(("consumption", s.consumption, m.consumption[i]))
    if s.extras_known:
        for name, old, new in (("cost", s.cost, m.cost[i]), ("demand_kw", s.demand, m.demand[i])):
            if not _equal(old, new):
                out.append((name, old, None if math.isnan(new) else new))
    return out


def _groups(meets: dict[int, list[int]]) -> list[tuple[list[int], list[int]]]:
    """Rows and the stored readings they overlap, joined where they share one (a stored
    reading split by two rows is replaced once, by both): (rows, stored) by start."""
    out: list[tuple[list[int], list[int]]] = []
    owner: dict[int, int] = {}  # stored index → group
    for i, over in sorted(meets.items(), key=lambda kv: kv[1][0]):
        shared = sorted({owner[j] for j in over if j in owner})
        if shared:
            g = shared[0]
            for other in shared[1:]:  # rows are taken by start, so at most a neighbour joins
                out[g][0].extend(out[other][0])
                out[g][1].extend(out[other][1])
                for j in out[other][1]:
                    owner[j] = g
                out[other] = ([], [])
        else:
            g = len(out)
            out.append(([], []))
        out[g][0].append(i)
        for j in over:
            if j not in owner:
                owner[j] = g
                out[g][1].append(j)
    return [(sorted(r), sorted(s)) for r, s in out if r]


def _figure(value: float | None, unit: str = "") -> str:
    return "none" if value is None else f"{value:g}{unit}"


def _replacement(
    result: ValidationResult,
    m: Any,
    stored: Sequence[StoredReading],
    rows: list[int],
    olds: list[int],
    add: Callable[..., None],
) -> None:
    """One correction or rebill: a notice on each of its rows naming what it replaces."""
    fmt = dt.date.fromordinal
    unit = f" {m.unit}" if m.unit else ""
    old = tuple(stored[j] for j in olds)
    first = old[0]
    kind = (
        "correction"
        if len(rows) == 1 and len(old) == 1 and _same_period(first, m, rows[0])
        else "rebill"
    )
    result.replacements.append(Replacement(kind, m.key, tuple(rows), old))
    for i in rows:
        if kind == "correction":
            changes = ", ".join(
                f"{name} {_figure(a, unit if name == 'consumption' else '')} → "
                f"{_figure(b, unit if name == 'consumption' else '')}"
                for name, a, b in _differences(first, m, i)
            )
            reason = (
                f"corrects stored reading {first.id or ''} ({first.start}..{first.end}): "
                f"{changes}; applied with --update"
            )
        else:
            replaced = ", ".join(
                f"{s.id or ''} ({s.start}..{s.end}, {_figure(s.consumption, unit)})" for s in old
            )
            reason = (
                f"rebill {fmt(m.starts[i])}..{fmt(m.ends[i])} "
                f"({_figure(m.consumption[i], unit)}) replaces stored reading(s) {replaced}; "
                "applied with --update"
            )
        add(kind, reason.replace("  ", " "), m.rows[i], m.key, "warning")


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
        parts = [getattr(m, field)[np.asarray(acc, np.int64)] for m, acc, _, _ in pending]
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)

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
        row, col = int(m.rows[i]), int(m.cols[i])
        result.flags[(m.meter_id or m.key, row)] = [flag]
        if flag in ("spike", "drop"):
            add(
                flag,
                flag_reason(flag),
                row,
                m.key,
                "warning",
                f"{float(m.consumption[i]):g}",
                col if col >= 0 else context.consumption_column,
            )
