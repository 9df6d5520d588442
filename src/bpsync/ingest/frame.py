"""The columnar core's building blocks: a table's rows in chunks held as columns, work done once
per *distinct value* of a column, and numbers parsed column-wise with exactly `parse_number`'s
results (decisions C4; tests/ingest/test_frame.py pins each fast path to the scalar rule).

Each chunk is a few hundred thousand rows held as one object array per column. Dates, units,
meters and flags repeat: each distinct value is parsed once by the same scalar parser bpsync
always used (`parse_date`, `parse_number`, `lookup_unit`…) and spread back to the rows with
numpy; numbers, mostly distinct, go through a tight float() loop with the scalar parser behind
it for anything else. `Items` is what mapping makes of a chunk: one entry per reading."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.problems import Problem
from bpsync.ingest.readers.base import Row, Table
from bpsync.ingest.values import MAX_MAGNITUDE, NumberError, cell_text, is_blank, parse_number

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
    _factors: dict[int, tuple[np.ndarray, list[Any]]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.numbers)

    def factors(self, index: int) -> tuple[np.ndarray, list[Any]]:
        """The column's codes into its distinct values (computed once per chunk and column)."""
        found = self._factors.get(index)
        if found is None:
            found = self._factors[index] = factorize(self.column(index), self.text)
        return found

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


Factors = tuple[np.ndarray, list[Any]]


def distinct(
    values: np.ndarray, text: bool, fn: Callable[[Any], Any], factors: Factors | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, fn of each distinct value): fn called once per distinct value."""
    codes, uniques = factors or factorize(values, text)
    results = np.empty(len(uniques), dtype=object)
    for j, u in enumerate(uniques):
        results[j] = fn(u)
    return codes, results


def per_value(
    values: np.ndarray, text: bool, fn: Callable[[Any], Any], factors: Factors | None = None
) -> np.ndarray:
    """fn of each cell, called once per distinct value (an object array)."""
    codes, results = distinct(values, text, fn, factors)
    return results[codes]


def blank_mask(values: np.ndarray, text: bool, factors: Factors | None = None) -> np.ndarray:
    """Cells that are empty or a placeholder ("N/A", "-"), as `is_blank` says."""
    if text or factors is not None:
        codes, results = distinct(values, text, is_blank, factors)
        return results.astype(bool)[codes]
    types = _type_of(values)
    out = np.equal(types, type(None))  # numpy compares element by element
    strings = np.equal(types, str)
    if strings.any():
        out[strings] = per_value(values[strings], True, is_blank).astype(bool)
    return out.astype(bool)


def _plain_numbers(uniques: list[Any], decimal: str, out: np.ndarray) -> Iterable[int]:
    """Text that is a plain number, converted in C: pandas finds the candidates, float() (numpy's
    cast of each str) gives the value, exactly as parse_number's fast path; then numbers with
    thousands grouping. Returns the positions still to read one by one."""
    if not uniques or decimal not in _GROUPED_FAST:
        return range(len(uniques))
    texts = np.asarray(uniques, dtype=object)
    todo = np.ones(len(texts), dtype=bool)
    if decimal == ".":
        found = np.flatnonzero(~np.isnan(pd.to_numeric(texts, errors="coerce")))
        try:
            exact = texts[found].astype(np.float64)  # float(str) for each: parse_number's own
        except (ValueError, TypeError):
            exact = None
        if exact is not None:
            fine = np.abs(exact) <= MAX_MAGNITUDE
            out[found[fine]] = exact[fine]
            todo[found[fine]] = False
    grouped, (a, b), (c, d) = _GROUPED_FAST[decimal], *_SWAP[decimal]
    rest = np.flatnonzero(todo)
    matched = [j for j in rest if grouped.fullmatch(texts[j])]
    if matched:
        numbers = np.array([float(texts[j].replace(a, b).replace(c, d)) for j in matched])
        fine = np.abs(numbers) <= MAX_MAGNITUDE
        picked = np.asarray(matched)[fine]
        out[picked] = numbers[fine]
        todo[picked] = False
    return np.flatnonzero(todo)


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
    values: np.ndarray, text: bool, decimal: str, name: str, factors: Factors | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, blank, faults) for a column: NaN where blank or bad; `faults` holds a Fault
    where the cell is not a number. The same results as `parse_number`, cell by cell."""
    codes, uniques = factors or factorize(values, text)
    n = len(uniques)
    out = np.full(n, _NAN)
    blank = np.zeros(n, dtype=bool)
    faults = np.empty(n, dtype=object)
    grouped = _GROUPED_FAST.get(decimal)
    todo = _plain_numbers(uniques, decimal, out) if text else range(n)
    for j in todo:
        u = uniques[j]
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


# ---- what mapping makes of a chunk ---------------------------------------------------------------------------


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


def table_chunks(table: Table, size: int = CHUNK_ROWS) -> Iterator[Chunk]:
    """The reader's own chunks when it has them (CSV through pandas), else its rows transposed."""
    if table.chunks is not None:
        return table.chunks(size)
    return chunks_of_rows(table.rows(), size, text=table.kind == "csv")
