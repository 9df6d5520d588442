"""The columnar core: a table's rows, in chunks, as columns → mapped readings → normalised and
collected per meter, with the same row-level problems the per-row engine gave (decisions IN-series;
tests/ingest/differential holds the proof).

Each chunk is a few hundred thousand rows held as one object array per column. Work is done per
*distinct value* of a column (dates, units, meters and flags repeat; each is parsed once by the
same scalar parser bpsync always used: `parse_date`, `parse_number`, `lookup_unit`…) and spread
back to the rows with numpy; numbers, mostly distinct, go through a tight float() loop with the
scalar parser behind it for anything else. A row's first problem wins, checked in the order a
person reads the row: meter, meter type, period, consumption, unit, cost, currency, demand,
estimated; then the meter lookup and unit conversion. Wide layouts are unpivoted into one item per
filled value cell. Memory is bounded by the chunk size plus about 70 bytes per accepted reading."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.dates import DateError, DateOrder, parse_date, parse_month
from bpsync.ingest.normalise import MeterCatalog, MeterInfo
from bpsync.ingest.problems import Problem, Where
from bpsync.ingest.readers.base import Row, Table, is_total_row
from bpsync.ingest.templates import Template
from bpsync.ingest.units import UnitError, conversion_factor, lookup_meter_type, lookup_unit
from bpsync.ingest.values import (
    MAX_MAGNITUDE,
    Header,
    NumberError,
    cell_text,
    is_blank,
    parse_flag,
    parse_number,
)

CHUNK_ROWS = 200_000
_NAN = float("nan")


# ---- chunks ---------------------------------------------------------------------------------------


@dataclass
class Chunk:
    """Rows `numbers` (as Excel shows them) with one object array per column. `lengths` is each
    row's own cell count (a ragged row's reject report shows its cells, no more and no fewer);
    `text` says every cell is a str (CSV), which allows pandas' hashing of values."""

    numbers: np.ndarray
    cells: list[np.ndarray]
    lengths: np.ndarray | None  # None: up to the last filled cell, at least the header's width
    text: bool = False

    def __len__(self) -> int:
        return len(self.numbers)

    def column(self, index: int) -> np.ndarray:
        if index < len(self.cells):
            return self.cells[index]
        return np.full(len(self), "" if self.text else None, dtype=object)

    def row_values(self, pos: int, width: int) -> tuple[str, ...]:
        if self.lengths is not None:
            n = max(width, int(self.lengths[pos]))
        else:
            n = len(self.cells)
            while n > width and self.cells[n - 1][pos] in ("", None):
                n -= 1
            n = max(n, width)
        return tuple(cell_text(self.column(j)[pos]) for j in range(n))


def chunks_of_rows(rows: Iterable[Row], size: int, *, text: bool) -> Iterator[Chunk]:
    """Rows transposed into chunks (workbooks, Green Button, the CSV reader's fallback)."""
    numbers: list[int] = []
    cells: list[tuple[object, ...]] = []
    for row in rows:
        numbers.append(row.number)
        cells.append(row.cells)
        if len(cells) >= size:
            yield _transpose(numbers, cells, text)
            numbers, cells = [], []
    if cells:
        yield _transpose(numbers, cells, text)


def _transpose(numbers: list[int], rows: list[tuple[object, ...]], text: bool) -> Chunk:
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    width = int(lengths.max()) if len(rows) else 0
    fill = "" if text else None
    cells = []
    for j in range(width):
        col = np.empty(len(rows), dtype=object)
        col[:] = [r[j] if j < len(r) else fill for r in rows]
        cells.append(col)
    return Chunk(np.asarray(numbers, dtype=np.int64), cells, lengths, text)


# ---- per distinct value -------------------------------------------------------------------------


def factorize(values: np.ndarray, text: bool) -> tuple[np.ndarray, list[Any]]:
    """Codes into the distinct values, in order of appearance. Hashing is pandas'; where Python
    equality would merge different cells (True == 1 == 1.0 from a workbook) the values are keyed
    with their type instead. Empty cells (None) stay None."""
    if text:
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        return codes, list(uniques)
    # The types present (not only the distinct values' types: pandas keeps the first of equal
    # values, so a 0 after a False would vanish into it).
    numeric = set(pd.unique(_type_of(values))) & {bool, int, float}
    if len(numeric) > 1:
        return _factorize_typed(values)
    codes, found = pd.factorize(values)  # None → -1
    uniques = list(found)
    if len(codes) and codes.min() < 0:
        codes = np.where(codes < 0, len(uniques), codes)
        uniques.append(None)
    return codes, uniques


_type_of = np.frompyfunc(type, 1, 1)


def _factorize_typed(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    index: dict[tuple[type, object], int] = {}
    out = np.empty(len(values), dtype=np.int64)
    uniques: list[Any] = []
    for i, v in enumerate(values):
        key = (v.__class__, v)
        code = index.get(key)
        if code is None:
            code = index[key] = len(uniques)
            uniques.append(v)
        out[i] = code
    return out, uniques


def per_value(values: np.ndarray, text: bool, fn: Callable[[Any], Any]) -> np.ndarray:
    """fn of each cell, called once per distinct value (an object array)."""
    codes, uniques = factorize(values, text)
    results = np.empty(len(uniques), dtype=object)
    for j, u in enumerate(uniques):
        results[j] = fn(u)
    return results[codes]


def blank_mask(values: np.ndarray, text: bool) -> np.ndarray:
    """Cells that are empty or a placeholder ("N/A", "-"), as `is_blank` says."""
    if text:
        return per_value(values, True, is_blank).astype(bool)
    types = _type_of(values)
    out = np.equal(types, type(None))  # numpy compares element by element
    strings = np.equal(types, str)
    if strings.any():
        out[strings] = per_value(values[strings], True, is_blank).astype(bool)
    return out.astype(bool)


# Numbers typed with regular thousands grouping (or a plain decimal comma), and how to make them
# a float. A sign may lead; anything else (currency, spaces, parentheses) takes parse_number.
_GROUPED_FAST = {
    ".": re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"),
    ",": re.compile(r"-?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?"),
}
_SWAP = {".": ((",", ""), ("", "")), ",": ((".", ""), (",", "."))}


@dataclass(slots=True)
class Fault:
    """Why a cell cannot be read: the problem's code and sentence. `blank` faults (an empty
    cell) name no value."""

    code: str
    reason: str
    blank: bool = False


def parse_numbers(
    values: np.ndarray, text: bool, decimal: str, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, blank, faults) for a column: NaN where blank or bad; `faults` holds a Fault
    where the cell is not a number. The same results as `parse_number`, cell by cell."""
    codes, uniques = factorize(values, text)
    n = len(uniques)
    out = np.full(n, _NAN)
    blank = np.zeros(n, dtype=bool)
    faults = np.empty(n, dtype=object)
    grouped = _GROUPED_FAST.get(decimal)
    for j, u in enumerate(uniques):
        if type(u) is float:  # a workbook's number: parse_number checks it is finite and in range
            if abs(u) <= MAX_MAGNITUDE:
                out[j] = u
                continue
        elif type(u) is str:
            if decimal == ".":
                try:  # parse_number's own fast path, inline
                    number = float(u)
                except ValueError:
                    pass
                else:
                    if abs(number) <= MAX_MAGNITUDE and "_" not in u:
                        out[j] = number
                        continue
            # "1,234.5" / "1.234,5" / "12,5": exactly what parse_number makes of them.
            if grouped is not None and grouped.fullmatch(u):
                number = float(u.replace(*_SWAP[decimal][0]).replace(*_SWAP[decimal][1]))
                if abs(number) <= MAX_MAGNITUDE:
                    out[j] = number
                    continue
        try:
            number = parse_number(u, decimal)
        except NumberError as exc:
            faults[j] = Fault(f"bad_{name}", f"{name.replace('_', ' ')} is not a number: {exc}")
            continue
        if number is None:
            blank[j] = True
        else:
            out[j] = number
    return out[codes], blank[codes], faults[codes]


# ---- the mapped stage ---------------------------------------------------------------------------


@dataclass
class Items:
    """One chunk's readings as the file states them (quantities in the file's units), one entry
    per reading, in file order (row, then value column)."""

    row: np.ndarray  # int64, the row number
    order: np.ndarray  # int64, position among the row's value columns (0 for long)
    meter: np.ndarray  # object: the meter key (a meter id, reference or meter name)
    building: np.ndarray  # object: building name (meter.by = "building_name") or None
    start: np.ndarray  # int64 ordinals
    end: np.ndarray
    consumption: np.ndarray  # float64
    unit: np.ndarray  # object: unit name or None
    cost: np.ndarray  # float64, NaN = none
    currency: np.ndarray  # object
    demand: np.ndarray  # float64, NaN = none
    estimated: np.ndarray  # bool
    column: np.ndarray  # int64 value column index, -1 = none (long layout)
    column_text: np.ndarray  # object: the value column's header text, or None
    meter_type: np.ndarray  # object

    def __len__(self) -> int:
        return len(self.row)

    def take(self, positions: np.ndarray) -> Items:
        return Items(**{k: v[positions] for k, v in self.__dict__.items()})

    @staticmethod
    def concat(parts: Sequence[Items]) -> Items:
        return Items(
            **{k: np.concatenate([getattr(p, k) for p in parts]) for k in Items.__annotations__}
        )


@dataclass
class ChunkResult:
    items: Items
    problems: list[tuple[int, int, Problem]]  # (row, order, problem): sorted later


class _Errors:
    """The first problem of each row of a chunk: code, reason, header and the offending value."""

    def __init__(self, n: int) -> None:
        self.has = np.zeros(n, dtype=bool)
        self.info: dict[int, tuple[str, str, Header | None, object]] = {}

    def faults(self, faults: np.ndarray, header: Header | None, values: np.ndarray) -> None:
        """Rows whose cell has a Fault (object array of Fault or None)."""
        take = faults.astype(bool) & ~self.has
        for pos in np.flatnonzero(take):
            fault = faults[pos]
            value = None if fault.blank else values[pos]
            self.info[int(pos)] = (fault.code, fault.reason, header, value)
        self.has |= take

    def fixed(
        self, mask: np.ndarray, header: Header | None, code: str, reason: str, values=None
    ) -> None:
        take = mask & ~self.has
        for pos in np.flatnonzero(take):
            value = None if values is None else values[pos]
            self.info[int(pos)] = (code, reason, header, value)
        self.has |= take

    def each(
        self,
        mask: np.ndarray,
        header: Header | None,
        make: Callable[[int], tuple[str, str, object]],
    ) -> None:
        take = mask & ~self.has
        for pos in np.flatnonzero(take):
            code, reason, value = make(int(pos))
            self.info[int(pos)] = (code, reason, header, value)
        self.has |= take


class _Reader:
    """One chunk under one template: the cell parsers, each run once per distinct value."""

    def __init__(
        self,
        chunk: Chunk,
        table: Table,
        template: Template,
        fields: dict[str, Header],
        order: DateOrder | None,
        decimal: str,
    ) -> None:
        self.chunk, self.table, self.t, self.f = chunk, table, template, fields
        self.order, self.decimal = order, decimal
        self.text = chunk.text

    def col(self, h: Header | None) -> np.ndarray:
        if h is None:
            return np.full(len(self.chunk), None, dtype=object)
        return self.chunk.column(h.index)

    def dates(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(day ordinals, faults) of a date field."""
        label = name.replace("_", " ")
        fmt, epoch, order = self.t.date_format, self.table.date_epoch, self.order

        def one(v: object) -> object:
            if is_blank(v):
                return Fault("missing_date", f"{label} is empty", blank=True)
            try:
                return parse_date(v, order, fmt, epoch).toordinal()
            except DateError as exc:
                return Fault("bad_date", f"{label} is not a date: {exc}")

        return _split(per_value(self.col(self.f[name]), self.text, one))

    def months(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        epoch, order = self.table.date_epoch, self.order

        def one(v: object) -> object:
            if is_blank(v):
                return Fault("missing_date", "month is empty", blank=True)
            try:
                first, last = parse_month(v, order, epoch)
            except DateError as exc:
                return Fault("bad_date", f"month is not a month: {exc}")
            return (first.toordinal(), last.toordinal())

        res = per_value(self.col(self.f["month"]), self.text, one)
        bad = np.fromiter((type(r) is Fault for r in res), dtype=bool, count=len(res))
        starts = np.zeros(len(res), dtype=np.int64)
        ends = np.zeros(len(res), dtype=np.int64)
        for i in np.flatnonzero(~bad):
            starts[i], ends[i] = res[i]
        return starts, ends, np.where(bad, res, None)

    def days(self) -> tuple[np.ndarray, np.ndarray]:
        decimal = self.decimal

        def one(v: object) -> object:
            try:
                number = parse_number(v, decimal)
            except NumberError:
                number = None
            if number is None or number != int(number) or not 1 <= number <= 3660:
                return Fault("bad_days", "the number of days must be a whole number from 1")
            return int(number)

        return _split(per_value(self.col(self.f["days"]), self.text, one))


def _split(results: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Object results (int or Fault) into an int array and the faults (None where fine)."""
    bad = np.fromiter((type(r) is Fault for r in results), dtype=bool, count=len(results))
    values = np.where(bad, 0, results).astype(np.int64)
    return values, np.where(bad, results, None)


def _fault_reason(faults: np.ndarray) -> Callable[[int], tuple[str, str]]:
    return lambda pos: (faults[pos].code, faults[pos].reason)


def _fixed(code: str, reason: str) -> Callable[[int], tuple[str, str]]:
    return lambda pos: (code, reason)


# ---- one chunk: map ------------------------------------------------------------------------------


def _convention_key(meter: str, building: str | None) -> str:
    return meter if building is None else f"{building}\x1f{meter}"


@dataclass
class Plan:
    """What the pre-scans decided for the whole file (see mapping.py)."""

    template: Template
    columns: Any  # mapping.Columns
    order: DateOrder | None
    decimal: str
    next_start_meters: frozenset[str] | None


class _Chunk:
    """Maps one chunk: row checks in reading order, then one item per reading."""

    def __init__(self, chunk: Chunk, table: Table, plan: Plan) -> None:
        self.chunk, self.table, self.plan = chunk, table, plan
        self.t = plan.template
        self.c = plan.columns
        self.f: dict[str, Header] = plan.columns.fields
        self.n = len(chunk)
        self.text = chunk.text
        self.width = len(table.headers)
        self.r = _Reader(chunk, table, self.t, self.f, plan.order, plan.decimal)
        self.problems: list[tuple[int, int, Problem]] = []
        self.active = np.ones(self.n, dtype=bool)

    # -- problems

    def problem(
        self,
        pos: int,
        order: int,
        code: str,
        reason: str,
        header: Header | None,
        value: object,
        *,
        meter: str | None = None,
        severity: str = "error",
    ) -> None:
        row = int(self.chunk.numbers[pos])
        self.problems.append(
            (
                row,
                order,
                Problem(
                    code,
                    reason,
                    self.table.where(row, header),
                    value=None if value is None else cell_text(value),
                    severity=severity,  # type: ignore[arg-type]
                    meter=meter,
                    row_values=self.chunk.row_values(pos, self.width),
                ),
            )
        )

    def row_errors(self, errors: _Errors) -> None:
        for pos, (code, reason, header, value) in sorted(errors.info.items()):
            self.problem(pos, -1, code, reason, header, value)
        self.active &= ~errors.has

    # -- rows that are not readings

    def skip_totals_and_filled(self) -> None:
        chunk = self.chunk
        maybe = np.zeros(self.n, dtype=bool)
        for j in range(min(3, len(chunk.cells))):
            maybe |= per_value(chunk.cells[j], self.text, lambda v: is_total_row((v,))).astype(bool)
        for pos in np.flatnonzero(maybe):
            if is_total_row([chunk.column(j)[pos] for j in range(3)]):
                self.problem(
                    pos, -1, "total_row", "skipped a total row", None, None, severity="notice"
                )
                self.active[pos] = False
        if not self.c.skip_if_filled:
            return
        first = np.full(self.n, -1, dtype=np.int64)
        for k, h in enumerate(self.c.skip_if_filled):
            filled = ~blank_mask(self.r.col(h), self.text)
            first = np.where((first < 0) & filled & self.active, k, first)
        for pos in np.flatnonzero(first >= 0):
            h = self.c.skip_if_filled[first[pos]]
            self.problem(
                pos,
                -1,
                "already_in_source",
                f"{h.label} is filled: Portfolio Manager already holds this entry, so the row is "
                "not inserted",
                h,
                self.r.col(h)[pos],
                severity="notice",
            )
            self.active[pos] = False

    # -- row fields

    def meters(self, errors: _Errors) -> tuple[np.ndarray, np.ndarray]:
        """(meter key, building) per row (object arrays)."""
        n, text = self.n, self.text
        if self.t.fixed_meter:
            return np.full(n, self.t.fixed_meter, dtype=object), np.full(n, None, dtype=object)
        if self.t.meter.by == "building_name":
            b_h, n_h = self.c.building, self.c.meter_name
            b_col, n_col = self.r.col(b_h), self.r.col(n_h)
            errors.fixed(
                blank_mask(b_col, text), b_h, "missing_meter", "the building name is empty"
            )
            errors.fixed(blank_mask(n_col, text), n_h, "missing_meter", "the meter name is empty")
            strip = lambda v: cell_text(v).strip()  # noqa: E731
            return per_value(n_col, text, strip), per_value(b_col, text, strip)
        h = self.c.meter
        col = self.r.col(h)
        errors.fixed(blank_mask(col, text), h, "missing_meter", "the meter is empty")
        return per_value(col, text, lambda v: cell_text(v).strip()), np.full(n, None, dtype=object)

    def meter_types(self, errors: _Errors) -> np.ndarray:
        h = self.f.get("meter_type")
        if h is None:
            return np.full(self.n, None, dtype=object)
        col = self.r.col(h)

        def one(v: object) -> object:
            if is_blank(v):
                return None
            known = lookup_meter_type(cell_text(v).strip())
            if known is None:
                return Fault(
                    "unknown_meter_type",
                    "the meter type is not one bpsync knows, so the row cannot be put in a meter "
                    "safely",
                )
            return known

        res = per_value(col, self.text, one)
        faults = np.where([type(x) is Fault for x in res], res, None) if len(res) else res
        errors.faults(faults, h, col)
        return np.where(faults.astype(bool), None, res) if len(res) else res

    def period(self, errors: _Errors, next_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, r = self.f, self.r
        ns = next_start.astype(np.int64)
        if "start_date" in f and "end_date" in f:
            start, bad = r.dates("start_date")
            errors.faults(bad, f["start_date"], r.col(f["start_date"]))
            end, bad = r.dates("end_date")
            errors.faults(bad, f["end_date"], r.col(f["end_date"]))
            end = end - ns
        elif "month" in f:
            start, end, bad = r.months()
            errors.faults(bad, f["month"], r.col(f["month"]))
            return start, end
        elif "start_date" in f:
            start, bad = r.dates("start_date")
            errors.faults(bad, f["start_date"], r.col(f["start_date"]))
            days, bad = r.days()
            errors.faults(bad, f["days"], r.col(f["days"]))
            end = start + days - 1
        else:
            name = "bill_date" if "bill_date" in f else "end_date"
            read, bad = r.dates(name)
            errors.faults(bad, f[name], r.col(f[name]))
            days, bad = r.days()
            errors.faults(bad, f["days"], r.col(f["days"]))
            end = read - ns
            start = end - (days - 1)
        header = f.get("end_date") or f.get("bill_date")
        cells = r.col(header)
        fmt = dt.date.fromordinal

        def why(pos: int) -> tuple[str, str, object]:
            return (
                "end_before_start",
                f"the period ends ({fmt(end[pos])}) before it starts ({fmt(start[pos])})"
                + (" once the end date is made inclusive" if next_start[pos] else ""),
                cells[pos],
            )

        errors.each((end < start) & ~errors.has, header, why)
        return start, end

    def units(self, value_header: Header | None) -> tuple[np.ndarray, np.ndarray]:
        """(unit name or None, faults) per row for readings of `value_header`'s column."""
        fallback = (value_header.unit if value_header is not None else None) or self.t.fixed_unit
        if "unit" not in self.f:
            return np.full(self.n, fallback, dtype=object), np.full(self.n, None, dtype=object)

        def one(v: object) -> object:
            if is_blank(v):
                return fallback
            unit = lookup_unit(str(v))
            if unit is None:
                return Fault("unknown_unit", "the unit is not one bpsync knows")
            return unit.name

        res = per_value(self.r.col(self.f["unit"]), self.text, one)
        bad = np.fromiter((type(x) is Fault for x in res), dtype=bool, count=len(res))
        return np.where(bad, None, res), np.where(bad, res, None)

    def extras(self, errors: _Errors) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(cost, currency, demand, estimated) per row, in the per-row engine's order."""
        f, r, n, text = self.f, self.r, self.n, self.text
        cost = np.full(n, _NAN)
        if "cost" in f:
            cost, _, bad = parse_numbers(r.col(f["cost"]), text, self.plan.decimal, "cost")
            errors.faults(bad, f["cost"], r.col(f["cost"]))
        default = self.t.fixed_currency
        if "cost" in f and f["cost"].currency:
            default = f["cost"].currency
        currency = np.full(n, default, dtype=object)
        if "currency" in f:
            stated = per_value(
                r.col(f["currency"]),
                text,
                lambda v: None if is_blank(v) else str(v).strip().upper(),
            )
            currency = np.where(stated.astype(bool), stated, currency)
        demand = np.full(n, _NAN)
        if "demand" in f:
            demand, _, bad = parse_numbers(r.col(f["demand"]), text, self.plan.decimal, "demand")
            errors.faults(bad, f["demand"], r.col(f["demand"]))
        estimated = np.zeros(n, dtype=bool)
        if "estimated" in f:
            true_values = frozenset(v.strip().casefold() for v in self.t.estimated_values) or None

            def one(v: object) -> object:
                flag = parse_flag(v, true_values) if true_values else parse_flag(v)
                if flag is None:
                    if true_values:
                        return False
                    return Fault("bad_estimated", "the estimated flag is not yes/no")
                return flag

            res = per_value(r.col(f["estimated"]), text, one)
            bad = np.where([type(x) is Fault for x in res], res, None) if n else res
            errors.faults(bad, f["estimated"], r.col(f["estimated"]))
            estimated = np.array([x is True for x in res], dtype=bool)
        return cost, currency, demand, estimated

    # -- layouts

    def next_start(self, meter: np.ndarray, building: np.ndarray) -> np.ndarray:
        if self.t.end_date == "next_start":
            return np.ones(self.n, dtype=bool)
        chosen = self.plan.next_start_meters
        if not chosen:
            return np.zeros(self.n, dtype=bool)
        pairs = pd.factorize(
            pd.Series([_convention_key(str(m), b) for m, b in zip(meter, building, strict=True)])
        )
        hit = np.array([k in chosen for k in pairs[1]], dtype=bool)
        return hit[pairs[0]]

    def run(self) -> ChunkResult:
        self.skip_totals_and_filled()
        layout = self.t.layout
        if layout == "long":
            return self.long()
        if layout == "wide_meters":
            return self.wide_meters()
        return self.wide_months()

    def _items(
        self,
        pos: np.ndarray,
        order: int,
        meter: np.ndarray,
        building: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        consumption: np.ndarray,
        unit: np.ndarray,
        cost: np.ndarray,
        currency: np.ndarray,
        demand: np.ndarray,
        estimated: np.ndarray,
        header: Header | None,
        meter_type: np.ndarray,
    ) -> Items:
        k = len(pos)
        return Items(
            row=self.chunk.numbers[pos],
            order=np.full(k, order, dtype=np.int64),
            meter=meter[pos],
            building=building[pos],
            start=start[pos],
            end=end[pos],
            consumption=consumption[pos],
            unit=unit[pos],
            cost=cost[pos],
            currency=currency[pos],
            demand=demand[pos],
            estimated=estimated[pos],
            column=np.full(k, header.index if header else -1, dtype=np.int64),
            column_text=np.full(k, header.text if header else None, dtype=object),
            meter_type=meter_type[pos],
        )

    def long(self) -> ChunkResult:
        f, r = self.f, self.r
        errors = _Errors(self.n)
        errors.has |= ~self.active
        meter, building = self.meters(errors)
        meter_type = self.meter_types(errors)
        start, end = self.period(errors, self.next_start(meter, building))
        h = f["consumption"]
        consumption, blank, bad = parse_numbers(
            r.col(h), self.text, self.plan.decimal, "consumption"
        )
        errors.faults(bad, h, r.col(h))
        errors.fixed(blank, h, "missing_consumption", "consumption is empty")
        unit, bad = self.units(h)
        errors.faults(bad, f.get("unit"), r.col(f.get("unit")))
        cost, currency, demand, estimated = self.extras(errors)
        self.row_errors(errors)
        pos = np.flatnonzero(self.active)
        items = self._items(
            pos,
            0,
            meter,
            building,
            start,
            end,
            consumption,
            unit,
            cost,
            currency,
            demand,
            estimated,
            None,
            meter_type,
        )
        return ChunkResult(items, self.problems)

    def _values(
        self,
        errors_has: np.ndarray,
        make: Callable[[np.ndarray, int, Header, np.ndarray, np.ndarray], Items],
        meter_of: Callable[[int, Header], str],
    ) -> list[Items]:
        """One item per filled value cell of a wide row; a cell that is not a number, or whose
        unit is unknown, is its own problem."""
        parts = []
        for k, (h, _, _) in enumerate(self.c.values):
            col = self.r.col(h)
            ok = self.active & ~blank_mask(col, self.text)
            number, _, bad = parse_numbers(col, self.text, self.plan.decimal, "consumption")
            unit, unit_bad = self.units(h)
            for pos in np.flatnonzero(ok & bad.astype(bool)):
                self.problem(
                    pos, k, bad[pos].code, bad[pos].reason, h, col[pos], meter=meter_of(pos, h)
                )
            uh = self.f.get("unit")
            for pos in np.flatnonzero(ok & ~bad.astype(bool) & unit_bad.astype(bool)):
                self.problem(
                    pos,
                    k,
                    "unknown_unit",
                    unit_bad[pos].reason,
                    uh,
                    self.r.col(uh)[pos],
                    meter=meter_of(pos, h),
                )
            good = np.flatnonzero(ok & ~bad.astype(bool) & ~unit_bad.astype(bool))
            parts.append(make(good, k, h, number, unit))
        return parts

    def wide_meters(self) -> ChunkResult:
        errors = _Errors(self.n)
        errors.has |= ~self.active
        none = np.full(self.n, None, dtype=object)
        start, end = self.period(errors, np.full(self.n, self.t.end_date == "next_start"))
        _, currency, _, estimated = self.extras(errors)
        self.row_errors(errors)
        nan = np.full(self.n, _NAN)

        def make(pos: np.ndarray, k: int, h: Header, number: np.ndarray, unit: np.ndarray):
            label = np.full(self.n, h.label, dtype=object)
            return self._items(
                pos,
                k,
                label,
                none,
                start,
                end,
                number,
                unit,
                nan,
                currency,
                nan,
                estimated,
                h,
                none,
            )

        parts = self._values(errors.has, make, lambda pos, h: h.label)
        return ChunkResult(Items.concat(parts), self.problems) if parts else self._empty()

    def wide_months(self) -> ChunkResult:
        errors = _Errors(self.n)
        errors.has |= ~self.active
        meter, building = self.meters(errors)
        meter_type = self.meter_types(errors)
        self.row_errors(errors)
        none = np.full(self.n, None, dtype=object)
        nan = np.full(self.n, _NAN)
        no = np.zeros(self.n, dtype=bool)
        firsts = {k: (a, b) for k, (_, a, b) in enumerate(self.c.values)}

        def make(pos: np.ndarray, k: int, h: Header, number: np.ndarray, unit: np.ndarray):
            first, last = firsts[k]
            start = np.full(self.n, first.toordinal(), dtype=np.int64)
            end = np.full(self.n, last.toordinal(), dtype=np.int64)
            return self._items(
                pos,
                k,
                meter,
                building,
                start,
                end,
                number,
                unit,
                nan,
                none,
                nan,
                no,
                h,
                meter_type,
            )

        parts = self._values(errors.has, make, lambda pos, h: meter[pos])
        return ChunkResult(Items.concat(parts), self.problems) if parts else self._empty()

    def _empty(self) -> ChunkResult:
        none = np.empty(0, dtype=object)
        ints = np.empty(0, dtype=np.int64)
        floats = np.empty(0)
        return ChunkResult(
            Items(
                ints,
                ints,
                none,
                none,
                ints,
                ints,
                floats,
                none,
                floats,
                none,
                floats,
                np.empty(0, dtype=bool),
                ints,
                none,
                none,
            ),
            self.problems,
        )


# ---- one chunk: normalise -----------------------------------------------------------------------


def _full_key(meter: object, building: object) -> str:
    return f"{building} / {meter}" if building else str(meter)


class Normaliser:
    """Meters resolved and units converted per distinct (meter, unit); the file's problems with
    currency, demand, meters and units found here, item by item."""

    def __init__(self, table: Table, by: str, catalog: MeterCatalog | None) -> None:
        self.table, self.by, self.catalog = table, by, catalog
        self.resolved: dict[tuple[str, str | None], MeterInfo | str] = {}
        self.factors: dict[tuple[str, str, str], float | UnitError | None] = {}

    def resolve(self, meter: str, building: str | None) -> MeterInfo | str:
        found = self.resolved.get((meter, building))
        if found is None:
            assert self.catalog is not None
            found = self.resolved[(meter, building)] = self.catalog.resolve(
                self.by,  # type: ignore[arg-type]
                meter,
                building,
            )
        return found

    def factor(self, unit: str, meter: MeterInfo) -> float | UnitError | None:
        key = (unit, meter.type, meter.unit)
        if key not in self.factors:
            try:
                self.factors[key] = conversion_factor(unit, meter.type, meter.unit)
            except UnitError as exc:
                self.factors[key] = exc
        return self.factors[key]

    def run(
        self, items: Items, chunk: Chunk, width: int, problems: list[tuple[int, int, Problem]]
    ) -> tuple[Items, np.ndarray, np.ndarray]:
        """(accepted items, their keys, their meter ids or None); problems appended."""
        n = len(items)
        keys = np.array(
            [_full_key(m, b) for m, b in zip(items.meter, items.building, strict=True)]
            if items.building.astype(bool).any()
            else items.meter,
            dtype=object,
        )
        ok = np.ones(n, dtype=bool)
        position = {int(r): i for i, r in enumerate(chunk.numbers)}

        def fail(i: int, code: str, reason: str, value: str | None) -> None:
            ok[i] = False
            row = int(items.row[i])
            column = items.column_text[i]
            index = int(items.column[i])
            where = Where(
                self.table.file, self.table.sheet, row, column, None if index < 0 else index
            )
            problems.append(
                (
                    row,
                    int(items.order[i]),
                    Problem(
                        code,
                        reason,
                        where,
                        value=value,
                        meter=items.meter[i],
                        row_values=chunk.row_values(position[row], width),
                    ),
                )
            )

        currencies = per_value(
            items.currency,
            False,
            lambda c: c is not None and (len(c) != 3 or not c.isalpha()),
        ).astype(bool)
        for i in np.flatnonzero(currencies):
            fail(
                int(i),
                "bad_currency",
                "the currency is not a 3-letter ISO 4217 code",
                items.currency[i],
            )
        for i in np.flatnonzero(ok & (items.demand < 0)):
            fail(int(i), "bad_demand", "demand cannot be negative", str(float(items.demand[i])))
        consumption = items.consumption.copy()
        units = items.unit.copy()
        meter_ids = np.full(n, None, dtype=object)
        if self.catalog is None:
            units = per_value(
                units, False, lambda u: lookup_unit(u).name if u and lookup_unit(u) else u
            )
            good = np.flatnonzero(ok)
            return self._take(items, good, consumption, units), keys[good], meter_ids[good]
        codes, pairs = self._pairs(items)
        infos = [self.resolve(m, b) for m, b in pairs]
        unknown = np.array([isinstance(x, str) for x in infos], dtype=bool)
        for i in np.flatnonzero(ok & unknown[codes]):
            fail(int(i), "unknown_meter", infos[codes[i]], keys[i])  # type: ignore[arg-type]
        known_type = np.array([None if isinstance(x, str) else x.type for x in infos], dtype=object)
        stated = items.meter_type
        clash = ok & stated.astype(bool) & (stated != known_type[codes])
        for i in np.flatnonzero(clash):
            info = infos[codes[i]]
            assert isinstance(info, MeterInfo)
            fail(
                int(i),
                "meter_type_mismatch",
                f"the file says this is a {stated[i].replace('_', ' ')} meter but {keys[i]!r} "
                f"is linked to a {info.type.replace('_', ' ')} meter",
                stated[i],
            )
        # One factor per distinct (unit, meter).
        unit_codes, unit_names = factorize(units, False)
        pair = unit_codes * max(len(infos), 1) + codes
        distinct, inverse = np.unique(pair[ok], return_inverse=True) if ok.any() else ([], [])
        factors = np.ones(len(distinct))
        broken = np.zeros(len(distinct), dtype=bool)
        reasons: dict[int, str] = {}
        for j, p in enumerate(distinct):
            unit, info = (
                unit_names[int(p) // max(len(infos), 1)],
                infos[int(p) % max(len(infos), 1)],
            )
            if unit is None or isinstance(info, str):
                continue
            factor = self.factor(unit, info)
            if isinstance(factor, UnitError):
                broken[j], reasons[j] = True, str(factor)
            elif factor is not None:
                factors[j] = factor
        where_ok = np.flatnonzero(ok)
        if len(where_ok):
            for i, j in zip(where_ok[broken[inverse]], inverse[broken[inverse]], strict=True):
                fail(int(i), "unit_mismatch", reasons[int(j)], units[i])
            # Multiply only where a factor applies ("same unit" is not even multiplied by 1.0).
            applies = np.zeros(n, dtype=bool)
            scale = np.ones(n)
            applies[where_ok] = factors[inverse] != 1.0
            scale[where_ok] = factors[inverse]
            consumption = np.where(applies, consumption * scale, consumption)
        unit_of = np.array([None if isinstance(x, str) else x.unit for x in infos], dtype=object)
        id_of = np.array([None if isinstance(x, str) else x.id for x in infos], dtype=object)
        if n:
            units = unit_of[codes]
            meter_ids = id_of[codes]
        good = np.flatnonzero(ok)
        return self._take(items, good, consumption, units), keys[good], meter_ids[good]

    @staticmethod
    def _pairs(items: Items) -> tuple[np.ndarray, list[tuple[str, str | None]]]:
        if not items.building.astype(bool).any():
            codes, meters = factorize(items.meter, False)
            return codes, [(m, None) for m in meters]
        index: dict[tuple[str, str | None], int] = {}
        codes = np.empty(len(items), dtype=np.int64)
        for i, pair in enumerate(zip(items.meter, items.building, strict=True)):
            code = index.get(pair)
            if code is None:
                code = index[pair] = len(index)
            codes[i] = code
        return codes, list(index)

    @staticmethod
    def _take(items: Items, good: np.ndarray, consumption: np.ndarray, units: np.ndarray) -> Items:
        out = items.take(good)
        out.consumption = consumption[good]
        out.unit = units[good]
        return out


# ---- the whole file -----------------------------------------------------------------------------


def table_chunks(table: Table, size: int = CHUNK_ROWS) -> Iterator[Chunk]:
    """The reader's own chunks when it has them (CSV through pandas), else its rows transposed."""
    if table.chunks is not None:
        return table.chunks(size)
    return chunks_of_rows(table.rows(), size, text=table.kind == "csv")


def map_chunks(
    table: Table, plan: Plan, size: int = CHUNK_ROWS
) -> Iterator[tuple[Chunk, ChunkResult]]:
    for chunk in table_chunks(table, size):
        yield chunk, _Chunk(chunk, table, plan).run()


def collect_table(
    table: Table, plan: Plan, catalog: MeterCatalog | None, size: int = CHUNK_ROWS
) -> Any:
    """Read, map, normalise and collect the whole table (validate.Collected)."""
    from bpsync.ingest.validate import Collected, _MeterSet

    normaliser = Normaliser(table, plan.template.meter.by, catalog)
    width = len(table.headers)
    problems: list[Problem] = list(table.problems)
    # rows_read counts a row once however many readings or problems it has (the reader's own
    # problems, e.g. Green Button's, come first, as the per-row engine counted them).
    rows_read, last_row = 0, None
    for p in table.problems:
        if p.where.row is not None and p.where.row != last_row:
            rows_read, last_row = rows_read + 1, p.where.row
    parts: list[Items] = []
    part_keys: list[np.ndarray] = []
    part_ids: list[np.ndarray] = []
    for chunk, result in map_chunks(table, plan, size):
        found = result.problems
        items, keys, ids = normaliser.run(result.items, chunk, width, found)
        rows = np.unique(
            np.concatenate([items.row, np.array([r for r, _, _ in found], dtype=np.int64)])
        )
        if len(rows):
            rows_read += len(rows) - (1 if rows[0] == last_row else 0)
            last_row = int(rows[-1])
        found.sort(key=lambda x: (x[0], x[1]))
        problems.extend(p for _, _, p in found)
        # Items in file order: row, then value column.
        order = np.lexsort((items.order, items.row))
        parts.append(items.take(order))
        part_keys.append(keys[order])
        part_ids.append(ids[order])
    if not parts:
        return Collected(file=table.file, sheet=table.sheet, problems=problems, rows_read=rows_read)
    items = Items.concat(parts)
    keys = np.concatenate(part_keys)
    ids = np.concatenate(part_ids)
    group = np.array([k if i is None else i for k, i in zip(keys, ids, strict=True)], dtype=object)
    codes, groups = pd.factorize(group)
    # Currencies are numbered in order of first appearance, None is -1.
    currency_codes, currency_names = pd.factorize(items.currency)
    by_meter = np.argsort(codes, kind="stable")
    columns = {
        "rows": items.row[by_meter].astype(np.int64),
        "starts": items.start[by_meter].astype(np.int64),
        "ends": items.end[by_meter].astype(np.int64),
        "consumption": items.consumption[by_meter].astype(np.float64),
        "cost": items.cost[by_meter].astype(np.float64),
        "demand": items.demand[by_meter].astype(np.float64),
        "currency": currency_codes[by_meter].astype(np.int16),
        "estimated": items.estimated[by_meter].astype(np.int8),
        "cols": items.column[by_meter].astype(np.int64),
    }
    collected = Collected(
        file=table.file,
        sheet=table.sheet,
        problems=problems,
        rows_read=rows_read,
        currencies=[str(c) for c in currency_names],
        columns=columns,
    )
    bounds = np.searchsorted(codes[by_meter], np.arange(len(groups) + 1))
    for k, name in enumerate(groups):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        first = by_meter[lo]
        collected.meters[name] = _MeterSet(
            keys[first], ids[first], items.unit[first], columns, lo, hi
        )
    return collected


def mapped_rows(table: Table, plan: Plan) -> Iterator[Any]:
    """The mapped stage as objects (mapping.MappedRow or Problem, in file order): for planning
    meter creation and for tests of the mapping alone."""
    from bpsync.ingest.mapping import MappedRow

    yield from table.problems
    for _, result in map_chunks(table, plan):
        items = result.items
        entries: list[tuple[int, int, Any]] = list(result.problems)
        for i in range(len(items)):
            cost, demand = float(items.cost[i]), float(items.demand[i])
            col = int(items.column[i])
            entries.append(
                (
                    int(items.row[i]),
                    int(items.order[i]),
                    MappedRow(
                        int(items.row[i]),
                        items.meter[i],
                        dt.date.fromordinal(int(items.start[i])),
                        dt.date.fromordinal(int(items.end[i])),
                        float(items.consumption[i]),
                        items.unit[i],
                        None if cost != cost else cost,
                        items.currency[i],
                        None if demand != demand else demand,
                        bool(items.estimated[i]),
                        items.building[i],
                        items.column_text[i],
                        None if col < 0 else col,
                        items.meter_type[i],
                    ),
                )
            )
        entries.sort(key=lambda x: (x[0], x[1]))
        yield from (e for _, _, e in entries)
