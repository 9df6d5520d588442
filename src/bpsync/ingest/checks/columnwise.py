"""The file-level checks, column-wise, for meters with no readings stored on the service (the
usual first import, and the whole of a dry run into an empty organisation): every meter's
readings in one set of numpy arrays, sorted by meter, start, end and row.

The rules and sentences are those of `against_stored` (duplicates, overlaps, future dates,
negative values, unusual period lengths, gaps, and the spike/drop flags the service will set,
`service_rules`), so a meter reads the same whichever way it is checked."""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpsync.ingest.checks.service_rules import (
    FLAG_NAMES,
    LONG_PERIOD_DAYS,
    SPAN,
    anomaly_codes,
    flag_reason,
    window_averages,
)
from bpsync.ingest.memory import give_back_memory
from bpsync.ingest.problems import Problem, Where

_LONG = np.dtype(f"i{array('l').itemsize}")


@dataclass
class Context:
    where: Callable[..., Where]
    last_allowed: int | None
    consumption_column: int | None
    keyed: list[tuple[tuple[Any, ...], Problem]]
    # Meters checked against stored readings, waiting for their anomaly flags (done together).
    stored_flags: list[Any] = field(default_factory=list)


class _Add:
    """Problems with their place in the output: (row, errors first, meter, check, reading, sub)."""

    def __init__(self, context: Context, keys: np.ndarray, positions: np.ndarray) -> None:
        self.context, self.keys, self.positions = context, keys, positions

    def __call__(
        self,
        order: tuple[int, int, int],
        g: int,
        code: str,
        reason: str,
        row: int,
        severity: str = "error",
        value: str | None = None,
        column: int | None = None,
    ) -> None:
        problem = Problem(
            code,
            reason,
            self.context.where(row, column),
            value,
            severity,  # type: ignore[arg-type]
            self.keys[g],
        )
        self.context.keyed.append(
            ((False, row, severity != "error", 1, int(self.positions[g]), *order), problem)
        )


def check_meters(result: Any, context: Context, meters: Sequence[tuple[int, str, Any]]) -> None:
    """Check `meters` ((position in the file's meter order, key, MeterSet)); fill
    result.accepted and result.flags, append problems to context.keyed."""
    if not meters:
        return
    sizes = np.array([len(m) for _, _, m in meters], dtype=np.int64)
    g_all = np.repeat(np.arange(len(meters)), sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    columns = meters[0][2]._columns
    if sum(sizes) == len(columns["rows"]):
        pick: Any = slice(None)  # every meter of the file: the columns as they are
    else:
        pick = np.concatenate([np.arange(m.lo, m.hi) for _, _, m in meters])
    rows, starts, ends = columns["rows"][pick], columns["starts"][pick], columns["ends"][pick]
    consumption, cost = columns["consumption"][pick], columns["cost"][pick]
    demand, cols = columns["demand"][pick], columns["cols"][pick]
    keys = np.array([m.key for _, _, m in meters], dtype=object)
    ids = [m.meter_id or m.key for _, _, m in meters]
    add = _Add(context, keys, np.array([p for p, _, _ in meters], dtype=np.int64))
    fmt = dt.date.fromordinal

    order = np.lexsort((rows, ends, starts, g_all))
    g, r, s, e = g_all[order], rows[order], starts[order], ends[order]
    c, cost_s, dem_s, col_s = consumption[order], cost[order], demand[order], cols[order]
    n = len(order)

    # Duplicates: the same period and values as an earlier row of the meter (NaN equals NaN).
    def same(x: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(x), -np.inf, x) + 0.0  # and -0.0 equals 0.0

    # Readings are sorted by (meter, start, end, row); only readings of one period can be
    # duplicates, and periods rarely hold two, so compare within runs of equal periods.
    same_period = np.zeros(n, dtype=bool)
    if n > 1:
        same_period[1:] = (g[1:] == g[:-1]) & (s[1:] == s[:-1]) & (e[1:] == e[:-1])
    duplicate = np.zeros(n, dtype=bool)
    first_row = r
    if same_period.any():
        # The positions in runs of two or more readings with one period, compared by value.
        in_run = same_period.copy()
        in_run[:-1] |= same_period[1:]
        run = np.flatnonzero(in_run)
        sig = (g[run], s[run], e[run], same(c[run]), same(cost_s[run]), same(dem_s[run]))
        by_sig = run[np.lexsort((r[run], *reversed(sig)))]  # equal readings together, by row
        keys = np.column_stack([x[np.searchsorted(run, by_sig)] for x in sig])
        equal = np.zeros(len(by_sig), dtype=bool)
        equal[1:] = (keys[1:] == keys[:-1]).all(axis=1)
        starts = np.maximum.accumulate(np.where(~equal, np.arange(len(by_sig)), 0))
        duplicate[by_sig[equal]] = True
        first_row = r.copy()
        first_row[by_sig] = r[by_sig[starts]]
    for p in np.flatnonzero(duplicate):
        add(
            (0, int(p), 0),
            int(g[p]),
            "duplicate_row",
            f"the same reading as row {first_row[p]}; sent once",
            int(r[p]),
            "warning",
        )
    kept = np.flatnonzero(~duplicate)
    rejected = duplicate
    # A million readings make each of these 8 MB: what a phase no longer needs goes now, so the
    # checks' peak stays near a few columns' worth (docs/performance.md).
    del cost_s, dem_s, same_period, first_row
    give_back_memory()

    # Overlaps between kept readings: with the one reaching furthest so far.
    gk, sk, ek = g[kept], s[kept] + g[kept] * SPAN, e[kept] + g[kept] * SPAN
    reach = np.maximum.accumulate(ek) if len(kept) else ek
    before = np.concatenate([[-1], reach[:-1]])[: len(kept)]
    record = ek > before
    last_record = np.maximum.accumulate(np.where(record, np.arange(len(kept)), -1))
    latest = np.concatenate([[-1], last_record[:-1]])[: len(kept)]
    overlapping = (sk <= before) & (before >= gk * SPAN)
    for q in np.flatnonzero(overlapping):
        i, j = kept[q], kept[latest[q]]
        for sub, (a, b) in enumerate(((i, j), (j, i))):
            add(
                (1, int(q), sub),
                int(g[i]),
                "overlap",
                f"{fmt(s[a])}..{fmt(e[a])} overlaps row {r[b]} ({fmt(s[b])}..{fmt(e[b])}); "
                "both dates are inclusive",
                int(r[a]),
            )
        rejected[i] = rejected[j] = True
    del kept, gk, sk, ek, reach, before, record, last_record, latest, overlapping
    give_back_memory()

    # The service refuses periods ending after tomorrow.
    if context.last_allowed is not None:
        future = ~rejected & (e > context.last_allowed)  # duplicates are among the rejected
        for p in np.flatnonzero(future):
            add(
                (2, int(p), 0),
                int(g[p]),
                "future_date",
                f"the period ends {fmt(e[p])}, in the future",
                int(r[p]),
            )
        rejected |= future

    accepted = np.flatnonzero(~rejected)
    del rejected
    local = order - offsets[g_all[order]]
    del order, g_all, offsets
    if not len(accepted):
        for _, key, _ in meters:
            result.accepted[key] = array("l")
        return
    ga = g[accepted]
    bounds = np.searchsorted(ga, np.arange(len(meters) + 1))
    local_accepted = local[accepted].astype(_LONG)
    for k, (_, key, _) in enumerate(meters):
        result.accepted[key] = array("l", local_accepted[bounds[k] : bounds[k + 1]].tobytes())
    del local, local_accepted
    if len(accepted) < n:  # else the sorted columns are the accepted readings' already
        r, s, e, c, col_s = r[accepted], s[accepted], e[accepted], c[accepted], col_s[accepted]
    del g, accepted
    give_back_memory()
    _warnings(add, context, ga, r, s, e, c, col_s, bounds)
    _flags(add, context, result, ga, r, s, e, c, col_s, ids)


def _warnings(
    add: _Add,
    context: Context,
    ga: np.ndarray,
    ra: np.ndarray,
    sa: np.ndarray,
    ea: np.ndarray,
    ca: np.ndarray,
    cols: np.ndarray,
    bounds: np.ndarray,
) -> None:
    """Negative values, unusual period lengths and gaps among the accepted readings (`ga`…:
    meter, row, start, end, consumption, value column; sorted by meter and start)."""
    fmt = dt.date.fromordinal
    days = ea - sa + 1
    # Each meter's usual length: the upper median of its accepted readings (3 or more).
    counts = np.diff(bounds)
    by_length = np.lexsort((days, ga))
    middle = bounds[:-1] + counts // 2
    median = np.where(counts >= 3, days[by_length][np.minimum(middle, len(days) - 1)], -1)
    med = median[ga] if len(ga) else np.empty(0, dtype=np.int64)
    first_of_meter = np.ones(len(ga), dtype=bool)
    first_of_meter[1:] = ga[1:] != ga[:-1]
    prev_end = np.concatenate([[0], ea[:-1]])
    prev_row = np.concatenate([[0], ra[:-1]])
    value_col = np.where(
        cols >= 0, cols, -1 if context.consumption_column is None else context.consumption_column
    )
    negative = ca < 0
    long = days > LONG_PERIOD_DAYS
    odd = ~long & (med >= 0) & ((days > 2 * med) | (days * 2 < med))
    gap = ~first_of_meter & (sa > prev_end + 1)
    for q in np.flatnonzero(negative | long | odd | gap):
        gq, row = int(ga[q]), int(ra[q])
        column = None if value_col[q] < 0 else int(value_col[q])
        if negative[q]:
            add(
                (3, int(q), 0),
                gq,
                "negative",
                "the consumption is negative (the service flags it 'negative')",
                row,
                "warning",
                f"{ca[q]:g}",
                column,
            )
        if long[q]:
            add(
                (3, int(q), 1),
                gq,
                "long_period",
                f"the period is {days[q]} days long",
                row,
                "warning",
            )
        elif odd[q]:
            kind = "long_period" if days[q] > med[q] else "short_period"
            add(
                (3, int(q), 1),
                gq,
                kind,
                f"the period is {days[q]} days; this meter's readings are usually {med[q]}",
                row,
                "warning",
            )
        if gap[q]:
            add(
                (3, int(q), 2),
                gq,
                "gap",
                f"{sa[q] - prev_end[q] - 1} days without data between row {prev_row[q]} "
                f"(ends {fmt(prev_end[q])}) and this reading",
                row,
                "warning",
            )


def _flags(
    add: _Add,
    context: Context,
    result: Any,
    ga: np.ndarray,
    ra: np.ndarray,
    sa: np.ndarray,
    ea: np.ndarray,
    ca: np.ndarray,
    cols: np.ndarray,
    ids: list[str],
) -> None:
    """The spike/drop/negative flags the service will set on the accepted readings."""
    codes = anomaly_codes(ca, window_averages(ga, sa, ea, ca))
    for q in np.flatnonzero(codes):
        flag = FLAG_NAMES[codes[q]]
        result.flags[(ids[ga[q]], int(ra[q]))] = [flag]
        if flag == "negative":
            continue  # a warning of its own already (see _warnings)
        col = cols[q]
        column = int(col) if col >= 0 else context.consumption_column
        add(
            (4, int(q), 0),
            int(ga[q]),
            flag,
            flag_reason(flag),
            int(ra[q]),
            "warning",
            f"{ca[q]:g}",
            column,
        )
