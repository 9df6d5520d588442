"""The problems of one chunk's rows, each with its place as the user sees it and the row's own
cells (for the reject report), and the rows that are not readings, each skipped with a notice
that says why: total rows; rows whose "skip if filled" column says the source already holds the
entry (PM's Meter Consumption ID); rows of a long layout with no dates, usage or cost at all
(an upload template's blank row, its meter columns pre-filled); and rows whose usage is Portfolio
Manager's "Not Available" with no cost (a report's month without data)."""

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
        if skip_if_filled:
            self._skip_filled(r, skip_if_filled)
        self._skip_without_entry(r)

    def _skip_filled(self, r: ColumnReader, skip_if_filled: list[Header]) -> None:
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

    def skip_first_reads(self, mask: np.ndarray, header: Header | None) -> None:
        """Read dates only: a meter's first read starts no period (its usage covers days before
        the file), so it is skipped and said, not refused."""
        mask = mask & self.active
        for pos in np.flatnonzero(mask):
            self.add(
                pos,
                -1,
                "first_read",
                "the meter's first read date in the file: its usage covers days since a read "
                "the file does not have, so it starts no period",
                header,
                None,
                severity="notice",
            )
        self.active &= ~mask

    def _skip_without_entry(self, r: ColumnReader) -> None:
        """Rows of a long layout that state no reading: no dates, usage or cost (a blank row of an
        upload template whose meter columns came pre-filled), or, in a report by calendar month,
        a month with neither usage nor cost (PM writes "Not Available", which reads as empty).
        Neither is an error; both are said. A bill row with its dates but no usage stays an
        error: that is a reading someone left unfinished."""
        usage = r.f.get("consumption")
        if usage is None:
            return
        blank = {
            k: blank_mask(r.raw(r.f[k]), self.text, r.fac(r.f[k]))
            for k in _ENTRY_FIELDS
            if k in r.f
        }
        empty = self.active.copy()
        for mask in blank.values():
            empty &= mask
        for pos in np.flatnonzero(empty):
            self.add(
                pos,
                -1,
                "no_entry",
                "the row has no dates, usage or cost: a blank row of the template, nothing to "
                "import",
                None,
                None,
                severity="notice",
            )
        self.active &= ~empty
        if "month" not in blank:
            return
        no_usage = self.active & blank["consumption"] & blank.get("cost", True)
        for pos in np.flatnonzero(no_usage):
            self.add(
                pos,
                -1,
                "no_usage",
                f"{usage.label} is empty or 'Not Available': the report holds no reading for "
                "this month",
                usage,
                None,
                severity="notice",
            )
        self.active &= ~no_usage


# The cells that make a row a reading; a long-layout row with all of them blank states none.
_ENTRY_FIELDS = (
    "start_date",
    "end_date",
    "bill_date",
    "month",
    "days",
    "consumption",
    "cost",
    "demand",
)
