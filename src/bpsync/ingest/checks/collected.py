"""What the file said, collected for the file-level checks: each meter's readings as views of
compact columns (about 60 bytes a reading, never one object per row, so a million-row file is
checked in bounded memory), the readings already stored on the service, and the result of the
checks: what may be sent, by meter and start date, and every problem with its row."""

from __future__ import annotations

import datetime as dt
import math
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from bpsync.ingest.checks.service_rules import WINDOW_DAYS, days_before
from bpsync.ingest.problems import Problem
from bpsync.ingest.readings.assign_meters import Candidate


@dataclass(frozen=True, slots=True)
class StoredReading:
    """A reading already on the service (fetched once per meter by the network stage)."""

    start: dt.date
    end: dt.date
    consumption: float
    id: str | None = None
    cost: float | None = None
    demand: float | None = None
    currency: str | None = None
    # Whether cost, demand and currency were fetched (a caller giving only the period and
    # consumption leaves them unknown: only those are compared then).
    extras_known: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The stored reading as the journal's trail keeps it (and `--json` shows it)."""
        out: dict[str, Any] = {
            "id": self.id,
            "start_date": self.start.isoformat(),
            "end_date": self.end.isoformat(),
            "consumption": self.consumption,
        }
        if self.extras_known:
            out.update(cost=self.cost, cost_currency=self.currency, demand_kw=self.demand)
        return out


@dataclass(frozen=True)
class Replacement:
    """Rows of the file that replace readings already stored: a *correction* (one row, the same
    period, another consumption, cost or demand) or a *rebill* (periods that span or split stored
    ones). `rows` index the meter's readings in the file; `old` are the stored readings replaced."""

    kind: str  # correction | rebill
    meter: str  # the meter's key in Collected.meters
    rows: tuple[int, ...]
    old: tuple[StoredReading, ...]


# Row numbers, day ordinals (below 3,652,060) and column numbers all fit 32 bits: a million
# readings' columns are 44 MB instead of 60, and so are the checks' sorted copies of them.
COLUMNS = {
    "rows": np.int32,
    "starts": np.int32,  # day ordinals
    "ends": np.int32,
    "consumption": np.float64,
    "cost": np.float64,  # NaN: none
    "demand": np.float64,  # NaN: none
    "currency": np.int16,  # index into Collected.currencies, -1: none
    "estimated": np.int8,
    "cols": np.int32,  # the value column of a wide layout, -1: none
}


class MeterSet:
    """One meter's readings from the file: views of the collection's columns (about 44 bytes a
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
        collected.meters[meter_id or key] = MeterSet(key, meter_id, unit, columns, lo, hi)
        lo = hi
    return collected


@dataclass
class Collected:
    """Everything the file said, before the file-level checks: readings grouped by meter, and the
    row problems found so far."""

    meters: dict[str, MeterSet] = field(default_factory=dict)
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
                days_before(first, WINDOW_DAYS + 1),
                dt.date.fromordinal(int(m.ends.max())),
            )
        return out


# Problems whose row is skipped with a stated reason rather than refused (row accounting).
SKIP_CODES = (
    "already_stored",
    "duplicate_row",
    "already_in_source",
    "no_entry",
    "no_usage",
    "total_row",
    "first_read",
)


@dataclass
class ValidationResult:
    """What may be sent (by meter, by start date), and every problem with its row."""

    collected: Collected
    accepted: dict[str, array] = field(default_factory=dict)  # meter key → indices, by start
    flags: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # predicted anomalies
    problems: list[Problem] = field(default_factory=list)
    already_stored: int = 0
    # Rows meeting stored readings with other figures or periods: sent only with --update.
    replacements: list[Replacement] = field(default_factory=list)

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
        for i in self.accepted.get(meter, ()):
            yield self._candidate(m, i)

    def replacing(self, replacement: Replacement) -> list[Candidate]:
        """The file's readings of one replacement, by start date."""
        m = self.collected.meters[replacement.meter].lists()
        return [self._candidate(m, i) for i in replacement.rows]

    def row_accounting(self) -> dict[str, Any]:
        """Every row read, accounted for (issue 27 item 6): rows giving readings (to send, or
        correcting stored ones), rows refused (an error), rows skipped by reason (already stored,
        a duplicate, a Portfolio Manager entry, a blank template row, a month without usage, a
        totals row), and any row that gave nothing else. A wide row counts once."""
        # Row numbers as marks in arrays as long as the file, not sets of Python ints (100 MB
        # at a million rows) nor sorted copies of every reading's row (70 MB at the peak).
        refused_rows = np.fromiter(self.rejected_rows, np.int64)
        skip = [
            (p.where.row, p.code)
            for p in self.problems
            if p.code in SKIP_CODES and p.where.row is not None
        ]
        skip_rows = np.fromiter((row for row, _ in skip), np.int64, len(skip))
        every = self.collected.columns.get("rows", np.empty(0, np.int64))
        size = 1 + max(int(a.max()) if len(a) else 0 for a in (every, refused_rows, skip_rows))
        used = np.zeros(size, dtype=bool)
        for meter, idx in self.accepted.items():
            if len(idx):
                used[self.collected.meters[meter].rows[np.asarray(idx, dtype=np.int64)]] = True
        for r in self.replacements:
            used[self.collected.meters[r.meter].rows[np.asarray(r.rows, dtype=np.int64)]] = True
        refused = np.zeros(size, dtype=bool)
        refused[refused_rows] = True
        taken = used | refused
        # Each row counted once, under the first reason (in the order the reasons first
        # appear among rows neither giving readings nor refused) that names it.
        keep = ~taken[skip_rows]
        rows = skip_rows[keep]
        codes = np.array([code for _, code in skip], dtype=object)[keep]
        by_reason: dict[str, int] = {}
        for code in dict.fromkeys(codes.tolist()):
            these = np.unique(rows[codes == code])
            fresh = these[~taken[these]]
            by_reason[code] = len(fresh)
            taken[fresh] = True
        read = self.collected.rows_read
        return {
            "rows_read": read,
            "with_readings": int(np.count_nonzero(used & ~refused)),
            "refused": int(np.count_nonzero(refused)),
            "skipped": by_reason,
            "nothing_to_import": max(0, read - int(np.count_nonzero(taken))),
        }

    def replacement_counts(self) -> dict[str, int]:
        """Rows of corrections and of rebills, and the stored readings they replace."""
        out = {"corrections": 0, "rebills": 0, "replaced": 0}
        for r in self.replacements:
            out["corrections" if r.kind == "correction" else "rebills"] += len(r.rows)
            out["replaced"] += len(r.old)
        return out

    def _candidate(self, m: SimpleNamespace, i: int) -> Candidate:
        cur = self.collected.currencies
        cost, demand = m.cost[i], m.demand[i]
        return Candidate(
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
