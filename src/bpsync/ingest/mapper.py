"""Map: one chunk of a table under one template → `Items` (readings as the file states them) and
the row problems found reading them, with the per-row engine's exact codes, reasons, places and
values (decisions C4).

A row's first problem wins, checked in the order a person reads the row: meter, meter type,
period, consumption, unit, cost, currency, demand, estimated. Wide layouts are unpivoted into
one item per filled value cell; an empty cell is no reading."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.dates import DateError, DateOrder, parse_date, parse_month
from bpsync.ingest.frame import (
    CHUNK_ROWS,
    MAP_ROWS,
    PROBE_ROWS,
    Cells,
    Chunk,
    ChunkResult,
    Factors,
    Fault,
    Items,
    blank_mask,
    distinct,
    filled,
    parse_numbers,
    per_value,
    per_value_mask,
    present,
    spread,
    table_chunks,
    take,
)
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Table, is_total_row
from bpsync.ingest.templates import Template
from bpsync.ingest.units import lookup_meter_type, lookup_unit
from bpsync.ingest.values import Header, NumberError, cell_text, is_blank, parse_flag, parse_number

_NAN = float("nan")


class _Errors:
    """The first problem of each row of a chunk: code, reason, header and the offending value."""

    def __init__(self, n: int) -> None:
        self.has = np.zeros(n, dtype=bool)
        self.info: dict[int, tuple[str, str, Header | None, object]] = {}

    def faults(self, faults: np.ndarray, header: Header | None, values: np.ndarray) -> None:
        """Rows whose cell has a Fault (object array of Fault or None)."""
        take = present(faults) & ~self.has
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

    def raw(self, h: Header | None) -> Any:
        """The column as the chunk holds it (see Chunk.raw): for parsers that take either."""
        if h is None:
            return np.full(len(self.chunk), None, dtype=object)
        return self.chunk.raw(h.index)

    def numbers(self, h: Header, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`parse_numbers` of the column: an Arrow column converts itself (its distinct values,
        nearly one per row, are never listed); others per distinct value."""
        raw = self.chunk.raw(h.index)
        factors = self.fac(h) if isinstance(raw, np.ndarray) else None
        return parse_numbers(raw, self.text, self.decimal, name, factors)

    def cells(self, h: Header | None) -> Cells:
        """The column's cells one at a time (a problem's offending value)."""
        return Cells(self.chunk, None if h is None else h.index)

    def fac(self, h: Header | None) -> Factors | None:
        """The column's distinct values, shared by every check of this chunk."""
        return self.chunk.factors(h.index) if h is not None else None

    def each(self, h: Header | None, fn: Callable[[Any], Any]) -> tuple[np.ndarray, np.ndarray]:
        """(codes, fn of each distinct value) of the column under `h`."""
        return distinct(self.raw(h), self.text, fn, self.fac(h))

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

        return _split(*self.each(self.f[name], one))

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

        codes, res = self.each(self.f["month"], one)
        bad = _faulty(res)
        starts = np.zeros(len(res), dtype=np.int64)
        ends = np.zeros(len(res), dtype=np.int64)
        for i in np.flatnonzero(~bad):
            starts[i], ends[i] = res[i]
        return starts[codes], ends[codes], spread(np.where(bad, res, None), codes)

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

        return _split(*self.each(self.f["days"], one))


def _faulty(results: np.ndarray) -> np.ndarray:
    return np.fromiter((type(r) is Fault for r in results), dtype=bool, count=len(results))


def _split(codes: np.ndarray, results: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values' results (int or Fault) into each row's int and fault (None where fine)."""
    bad = _faulty(results)
    values = np.where(bad, 0, results).astype(np.int64)
    return values[codes], spread(np.where(bad, results, None), codes)


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
            maybe |= per_value_mask(
                chunk.cells[j], self.text, lambda v: is_total_row((v,)), chunk.factors(j)
            )
        for pos in np.flatnonzero(maybe):
            if is_total_row([chunk.cell(j, pos) for j in range(3)]):
                self.problem(
                    pos, -1, "total_row", "skipped a total row", None, None, severity="notice"
                )
                self.active[pos] = False
        if not self.c.skip_if_filled:
            return
        first = np.full(self.n, -1, dtype=np.int64)
        for k, h in enumerate(self.c.skip_if_filled):
            filled = ~blank_mask(self.r.raw(h), self.text, self.r.fac(h))
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
                self.r.cells(h)[pos],
                severity="notice",
            )
            self.active[pos] = False

    # -- row fields

    def meters(self, errors: _Errors) -> tuple[np.ndarray, np.ndarray]:
        """(meter key, building) per row (object arrays)."""
        n, text = self.n, self.text
        if self.t.fixed_meter:
            return filled(n, self.t.fixed_meter), filled(n, None)
        if self.t.meter.by == "building_name":
            b_h, n_h = self.c.building, self.c.meter_name
            b_col, n_col = self.r.raw(b_h), self.r.raw(n_h)
            b_blank = blank_mask(b_col, text, self.r.fac(b_h))
            errors.fixed(b_blank, b_h, "missing_meter", "the building name is empty")
            n_blank = blank_mask(n_col, text, self.r.fac(n_h))
            errors.fixed(n_blank, n_h, "missing_meter", "the meter name is empty")
            strip = lambda v: cell_text(v).strip()  # noqa: E731
            return (
                per_value(n_col, text, strip, self.r.fac(n_h)),
                per_value(b_col, text, strip, self.r.fac(b_h)),
            )
        h = self.c.meter
        col = self.r.raw(h)
        errors.fixed(blank_mask(col, text, self.r.fac(h)), h, "missing_meter", "the meter is empty")
        keys = per_value(col, text, lambda v: cell_text(v).strip(), self.r.fac(h))
        return keys, filled(n, None)

    def meter_types(self, errors: _Errors) -> np.ndarray:
        h = self.f.get("meter_type")
        if h is None:
            return filled(self.n, None)
        col = self.r.cells(h)

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

        codes, res = self.r.each(h, one)
        bad = _faulty(res)
        errors.faults(spread(np.where(bad, res, None), codes), h, col)
        return spread(np.where(bad, None, res), codes)

    def period(self, errors: _Errors, next_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, r = self.f, self.r
        ns = next_start.astype(np.int64)
        if "start_date" in f and "end_date" in f:
            start, bad = r.dates("start_date")
            errors.faults(bad, f["start_date"], r.cells(f["start_date"]))
            end, bad = r.dates("end_date")
            errors.faults(bad, f["end_date"], r.cells(f["end_date"]))
            end = end - ns
        elif "month" in f:
            start, end, bad = r.months()
            errors.faults(bad, f["month"], r.cells(f["month"]))
            return start, end
        elif "start_date" in f:
            start, bad = r.dates("start_date")
            errors.faults(bad, f["start_date"], r.cells(f["start_date"]))
            days, bad = r.days()
            errors.faults(bad, f["days"], r.cells(f["days"]))
            end = start + days - 1
        else:
            name = "bill_date" if "bill_date" in f else "end_date"
            read, bad = r.dates(name)
            errors.faults(bad, f[name], r.cells(f[name]))
            days, bad = r.days()
            errors.faults(bad, f["days"], r.cells(f["days"]))
            end = read - ns
            start = end - (days - 1)
        header = f.get("end_date") or f.get("bill_date")
        cells = r.cells(header)
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
            return filled(self.n, fallback), np.full(self.n, None, dtype=object)

        def one(v: object) -> object:
            if is_blank(v):
                return fallback
            unit = lookup_unit(str(v))
            if unit is None:
                return Fault("unknown_unit", "the unit is not one bpsync knows")
            return unit.name

        codes, res = self.r.each(self.f["unit"], one)
        bad = _faulty(res)
        return spread(np.where(bad, None, res), codes), spread(np.where(bad, res, None), codes)

    def extras(self, errors: _Errors) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(cost, currency, demand, estimated) per row, in the per-row engine's order."""
        f, r, n, text = self.f, self.r, self.n, self.text
        cost = np.full(n, _NAN)
        if "cost" in f:
            cost, _, bad = r.numbers(f["cost"], "cost")
            errors.faults(bad, f["cost"], r.cells(f["cost"]))
        default = self.t.fixed_currency
        if "cost" in f and f["cost"].currency:
            default = f["cost"].currency
        currency = filled(n, default)
        if "currency" in f:
            codes, stated = distinct(
                r.raw(f["currency"]),
                text,
                lambda v: None if is_blank(v) else str(v).strip().upper(),
                r.fac(f["currency"]),
            )
            currency = spread(np.array([c or default for c in stated], dtype=object), codes)
        demand = np.full(n, _NAN)
        if "demand" in f:
            demand, _, bad = r.numbers(f["demand"], "demand")
            errors.faults(bad, f["demand"], r.cells(f["demand"]))
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

            codes, res = r.each(f["estimated"], one)
            bad = _faulty(res)
            errors.faults(
                spread(np.where(bad, res, None), codes), f["estimated"], r.cells(f["estimated"])
            )
            estimated = np.array([x is True for x in res], dtype=bool)[codes]
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
            meter=take(meter, pos),
            building=take(building, pos),
            start=start[pos],
            end=end[pos],
            consumption=consumption[pos],
            unit=take(unit, pos),
            cost=cost[pos],
            currency=take(currency, pos),
            demand=demand[pos],
            estimated=estimated[pos],
            column=np.full(k, header.index if header else -1, dtype=np.int64),
            column_text=filled(k, header.text if header else None),
            meter_type=take(meter_type, pos),
        )

    def long(self) -> ChunkResult:
        f, r = self.f, self.r
        errors = _Errors(self.n)
        errors.has |= ~self.active
        meter, building = self.meters(errors)
        meter_type = self.meter_types(errors)
        start, end = self.period(errors, self.next_start(meter, building))
        h = f["consumption"]
        consumption, blank, bad = r.numbers(h, "consumption")
        errors.faults(bad, h, r.cells(h))
        errors.fixed(blank, h, "missing_consumption", "consumption is empty")
        unit, bad = self.units(h)
        errors.faults(bad, f.get("unit"), r.cells(f.get("unit")))
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
            ok = self.active & ~blank_mask(col, self.text, self.r.fac(h))
            number, _, bad = parse_numbers(
                col, self.text, self.plan.decimal, "consumption", self.r.fac(h)
            )
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
                    self.r.cells(uh)[pos],
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


def map_chunks(
    table: Table, plan: Plan, size: int = CHUNK_ROWS
) -> Iterator[tuple[Chunk, ChunkResult]]:
    for i, chunk in enumerate(table_chunks(table, size)):
        if i == 0 and len(chunk) > PROBE_ROWS:
            refuse_unreadable(table, plan, _Chunk(chunk.head(PROBE_ROWS), table, plan).run())
        for piece in chunk.pieces(MAP_ROWS):
            yield piece, _Chunk(piece, table, plan).run()


def refuse_unreadable(table: Table, plan: Plan, probe: ChunkResult) -> None:
    """Raise when every row of the probe was refused and none gave a reading."""
    if len(probe.items) or not probe.problems:
        return
    rows = {row for row, _, p in probe.problems if p.severity == "error"}
    if len(rows) < PROBE_ROWS:
        return
    first = min(probe.problems, key=lambda x: (x[0], x[1]))[2]
    column = f", column {first.where.column!r}" if first.where.column else ""
    raise IngestError(
        f"rows {min(rows):,} to {max(rows):,} were all refused, not one gave a reading (the "
        f"first, row {first.where.row}{column}: {first.reason}): this is not a file of bills "
        f"the template "
        f"{plan.template.name!r} reads. Nothing was imported from this file",
        where=Where(table.file, sheet=table.sheet),
        code="no_readable_rows",
    )


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
