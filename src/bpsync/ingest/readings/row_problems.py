"""The problems of one chunk's rows, each with its place as the user sees it and the row's own
cells (for the reject report), and the rows that are not readings: total rows, and rows whose
"skip if filled" column says the source already holds the entry."""

from __future__ import annotations

import numpy as np

from bpsync.ingest.cells.columnar import Chunk, blank_mask, per_value_mask
from bpsync.ingest.cells.values import Header, cell_text
from bpsync.ingest.problems import Problem
from bpsync.ingest.readers.base import Table, is_total_row
from bpsync.ingest.readings.row_fields import ColumnReader, RowErrors


class RowProblems:
    """The problems found in one chunk, keyed (row, order) for sorting, and the rows still
    `active` (not refused, not skipped)."""

    def __init__(self, chunk: Chunk, table: Table) -> None:
        self.chunk, self.table = chunk, table
        self.n = len(chunk)
        self.text = chunk.text
        self.width = len(table.headers)
        self.problems: list[tuple[int, int, Problem]] = []
        self.active = np.ones(self.n, dtype=bool)

    def add(
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

    def row_errors(self, errors: RowErrors) -> None:
        for pos, (code, reason, header, value) in sorted(errors.info.items()):
            self.add(pos, -1, code, reason, header, value)
        self.active &= ~errors.has

    def skip_totals_and_filled(self, r: ColumnReader, skip_if_filled: list[Header]) -> None:
        """Total rows, and rows with a filled `skip_if_filled` column, are notices, not readings."""
        chunk = self.chunk
        maybe = np.zeros(self.n, dtype=bool)
        for j in range(min(3, len(chunk.cells))):
            maybe |= per_value_mask(
                chunk.cells[j], self.text, lambda v: is_total_row((v,)), chunk.factors(j)
            )
        for pos in np.flatnonzero(maybe):
            if is_total_row([chunk.cell(j, pos) for j in range(3)]):
                self.add(pos, -1, "total_row", "skipped a total row", None, None, severity="notice")
                self.active[pos] = False
        if not skip_if_filled:
            return
        first = np.full(self.n, -1, dtype=np.int64)
        for k, h in enumerate(skip_if_filled):
            filled = ~blank_mask(r.raw(h), self.text, r.fac(h))
            first = np.where((first < 0) & filled & self.active, k, first)
        for pos in np.flatnonzero(first >= 0):
            h = skip_if_filled[first[pos]]
            self.add(
                pos,
                -1,
                "already_in_source",
                f"{h.label} is filled: Portfolio Manager already holds this entry, so the row is "
                "not inserted",
                h,
                r.cells(h)[pos],
                severity="notice",
            )
            self.active[pos] = False
