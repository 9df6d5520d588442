"""Interval exports (hourly, 15-minute, a day per row of 96 quarter-hours) turned into one
reading per meter and local day, each the sum of the intervals that start on that day.

`recognise_intervals(table, meter=…)` is tried when no template matches a file: it returns the
daily table and the template that reads it, or None when the table is not an interval export."""

from __future__ import annotations

from bpsync.ingest.readers.base import Table
from bpsync.ingest.understand.templates import Template


def recognise_intervals(table: Table, *, meter: str | None = None) -> tuple[Table, Template] | None:
    """The daily table and its template, or None when `table` is not an interval export."""
    return None
