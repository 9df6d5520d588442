"""The mapped stage as objects, one `MappedRow` per reading as the file states it: for planning
meter creation, template previews and tests of the mapping alone. Imports themselves stay
column-wise (`map_chunks`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bpsync.ingest.problems import Problem
from bpsync.ingest.readers.base import Table
from bpsync.ingest.readings.map_chunk import map_chunks
from bpsync.ingest.understand.evidence import Plan, plan_table
from bpsync.ingest.understand.templates import Template


@dataclass(slots=True)  # not frozen: frozen dataclasses are slow to build per row
class MappedRow:
    """One reading as the file states it (quantity in the file's unit, not yet the meter's)."""

    row: int
    meter_key: str
    start: dt.date
    end: dt.date
    consumption: float
    unit: str | None
    cost: float | None = None
    currency: str | None = None
    demand_kw: float | None = None
    estimated: bool = False
    building: str | None = None  # with meter.by = "building_name"
    column: str | None = None  # the value column of a wide layout
    column_index: int | None = None
    meter_type: str | None = None  # the service meter type the file states for the row


def mapped_rows(table: Table, plan: Plan) -> Iterator[Any]:
    """The mapped stage as objects (MappedRow or Problem, in file order): for planning
    meter creation and for tests of the mapping alone."""
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


def map_table(table: Table, template: Template) -> Iterator[MappedRow | Problem]:
    """Every reading of the table as the file states it, or a Problem for each row (or wide
    cell) that cannot be read, in file order (the columnar engine's mapped stage as objects)."""
    return mapped_rows(table, plan_table(table, template))
