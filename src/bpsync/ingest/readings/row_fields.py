"""One chunk's cells read into each row's fields under the file's plan: meter, meter type,
period, unit, cost, currency, demand and the estimated flag, each cell parser run once per
distinct value of its column (`ColumnReader`). A row's first problem wins (`RowErrors`), checked
in the order a person reads the row: meter, meter type, period, consumption, unit, cost,
currency, demand, estimated."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.cells.columnar import (
    Cells,
    Chunk,
    Factors,
    Fault,
    blank_mask,
    distinct,
    filled,
    parse_numbers,
    per_value,
    present,
    spread,
)
from bpsync.ingest.cells.dates import DateError, DateOrder, parse_date, parse_month
from bpsync.ingest.cells.units import lookup_meter_type, lookup_unit
from bpsync.ingest.cells.values import (
    Header,
    NumberError,
    cell_text,
    is_blank,
    parse_flag,
    parse_number,
)
from bpsync.ingest.readers.base import Table
from bpsync.ingest.understand.evidence import Plan
from bpsync.ingest.understand.templates import Template

_NAN = float("nan")


class RowErrors:
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


class ColumnReader:
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


def _convention_key(meter: str, building: str | None) -> str:
    return meter if building is None else f"{building}\x1f{meter}"


class RowFields:
    """The fields of one chunk's rows under the plan, as arrays (one entry per row)."""

    def __init__(self, chunk: Chunk, table: Table, plan: Plan) -> None:
        self.plan = plan
        self.t = plan.template
        self.c = plan.columns
        self.f: dict[str, Header] = plan.columns.fields
        self.n = len(chunk)
        self.text = chunk.text
        self.r = ColumnReader(chunk, table, self.t, self.f, plan.order, plan.decimal)

    def meters(self, errors: RowErrors) -> tuple[np.ndarray, np.ndarray]:
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

    def meter_types(self, errors: RowErrors) -> np.ndarray:
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

    def period(
        self, errors: RowErrors, next_start: np.ndarray, keys: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) ordinals per row. With read dates only, `keys` (each row's meter key)
        finds the meter's previous read; a meter's first read is left in `self.first_reads`."""
        f, r = self.f, self.r
        ns = next_start.astype(np.int64)
        self.first_reads = np.zeros(self.n, dtype=bool)
        if self.plan.previous_read is not None and keys is not None:
            end, bad = r.dates("bill_date")
            errors.faults(bad, f["bill_date"], r.cells(f["bill_date"]))
            known = self.plan.previous_read
            before = np.array(
                [known.get(k, {}).get(int(d), -1) for k, d in zip(keys, end, strict=True)],
                dtype=np.int64,
            )
            self.first_reads = (before < 0) & ~errors.has
            return np.where(before < 0, end, before + 1), end
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

    def extras(self, errors: RowErrors) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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

    def meter_keys(self, meter: np.ndarray, building: np.ndarray) -> np.ndarray | None:
        """Each row's meter key as the plan keeps read dates (None unless it reads them)."""
        if self.plan.previous_read is None:
            return None
        out = np.empty(self.n, dtype=object)
        out[:] = [_convention_key(str(m), b) for m, b in zip(meter, building, strict=True)]
        return out

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
