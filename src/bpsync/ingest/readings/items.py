"""What mapping makes of a chunk: `Items`, one entry per reading as the file states it (quantities
in the file's units), and the row problems found reading them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bpsync.ingest.cells.columnar import take
from bpsync.ingest.problems import Problem


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
        return Items(**{k: take(v, positions) for k, v in self.__dict__.items()})

    @staticmethod
    def concat(parts: Sequence[Items]) -> Items:
        return Items(
            **{k: np.concatenate([getattr(p, k) for p in parts]) for k in Items.__annotations__}
        )


@dataclass
class ChunkResult:
    items: Items
    problems: list[tuple[int, int, Problem]]  # (row, order, problem): sorted later
