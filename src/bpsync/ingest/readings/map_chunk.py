"""Map: one chunk of a table under one template → `Items` (readings as the file states them) and
the row problems found reading them, with the per-row engine's exact codes, reasons, places and
values (decisions C4).

The row's fields are read by `RowFields` (a row's first problem wins) and its problems kept by
`RowProblems`; here the layout decides what a reading is. Wide layouts are unpivoted into one
item per filled value cell; an empty cell is no reading."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from bpsync.ingest.cells.columnar import Chunk, blank_mask, filled, parse_numbers, take
from bpsync.ingest.cells.values import Header
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import Table
from bpsync.ingest.readers.chunks import CHUNK_ROWS, table_chunks
from bpsync.ingest.readings.items import ChunkResult, Items
from bpsync.ingest.readings.limits import MAP_ROWS, PROBE_ROWS
from bpsync.ingest.readings.row_fields import RowErrors, RowFields
from bpsync.ingest.readings.row_problems import RowProblems
from bpsync.ingest.understand.evidence import Plan

_NAN = float("nan")


class _Chunk:
    """Maps one chunk: row checks in reading order, then one item per reading."""

    def __init__(self, chunk: Chunk, table: Table, plan: Plan) -> None:
        self.chunk, self.plan = chunk, plan
        self.t = plan.template
        self.c = plan.columns
        self.f: dict[str, Header] = plan.columns.fields
        self.n = len(chunk)
        self.text = chunk.text
        self.fields = RowFields(chunk, table, plan)
        self.r = self.fields.r
        self.rows = RowProblems(chunk, table)

    def run(self) -> ChunkResult:
        self.rows.skip_totals_and_filled(self.r, self.c.skip_if_filled)
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
        errors = RowErrors(self.n)
        errors.has |= ~self.rows.active
        meter, building = self.fields.meters(errors)
        meter_type = self.fields.meter_types(errors)
        keys = self.fields.meter_keys(meter, building)
        start, end = self.fields.period(errors, self.fields.next_start(meter, building), keys)
        self.rows.skip_first_reads(self.fields.first_reads & ~errors.has, f.get("bill_date"))
        h = f["consumption"]
        consumption, blank, bad = r.numbers(h, "consumption")
        errors.faults(bad, h, r.cells(h))
        errors.fixed(blank, h, "missing_consumption", "consumption is empty")
        unit, bad = self.fields.units(h)
        errors.faults(bad, f.get("unit"), r.cells(f.get("unit")))
        cost, currency, demand, estimated = self.fields.extras(errors)
        self.rows.row_errors(errors)
        pos = np.flatnonzero(self.rows.active)
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
        return ChunkResult(items, self.rows.problems)

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
            ok = self.rows.active & ~blank_mask(col, self.text, self.r.fac(h))
            number, _, bad = parse_numbers(
                col, self.text, self.plan.decimal, "consumption", self.r.fac(h)
            )
            unit, unit_bad = self.fields.units(h)
            for pos in np.flatnonzero(ok & bad.astype(bool)):
                self.rows.add(
                    pos, k, bad[pos].code, bad[pos].reason, h, col[pos], meter=meter_of(pos, h)
                )
            uh = self.f.get("unit")
            for pos in np.flatnonzero(ok & ~bad.astype(bool) & unit_bad.astype(bool)):
                self.rows.add(
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
        errors = RowErrors(self.n)
        errors.has |= ~self.rows.active
        none = np.full(self.n, None, dtype=object)
        start, end = self.fields.period(errors, np.full(self.n, self.t.end_date == "next_start"))
        _, currency, _, estimated = self.fields.extras(errors)
        self.rows.row_errors(errors)
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
        return ChunkResult(Items.concat(parts), self.rows.problems) if parts else self._empty()

    def wide_months(self) -> ChunkResult:
        errors = RowErrors(self.n)
        errors.has |= ~self.rows.active
        meter, building = self.fields.meters(errors)
        meter_type = self.fields.meter_types(errors)
        self.rows.row_errors(errors)
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
        return ChunkResult(Items.concat(parts), self.rows.problems) if parts else self._empty()

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
            self.rows.problems,
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
