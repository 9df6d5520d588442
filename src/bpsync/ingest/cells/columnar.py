"""The columnar core's building blocks: a table's rows in chunks held as columns, work done once
per *distinct value* of a column, and numbers parsed column-wise with exactly `parse_number`'s
results (decisions C4; tests/ingest/test_frame.py pins each fast path to the scalar rule).

Each chunk is a few hundred thousand rows held as one object array per column. Dates, units,
meters and flags repeat: each distinct value is parsed once by the same scalar parser bpsync
always used (`parse_date`, `parse_number`, `lookup_unit`…) and spread back to the rows with
numpy; numbers, mostly distinct, are converted in C (by Arrow for a CSV column, by numpy's
float() cast for others) with the scalar parser behind them for anything unusual. Readers make
the chunks (`bpsync.ingest.readers.chunks`); mapping turns them into readings
(`bpsync.ingest.readings`)."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.cells.values import MAX_MAGNITUDE, NumberError, cell_text, is_blank, parse_number

_NAN = float("nan")


# ---- chunks ---------------------------------------------------------------------------------------


@dataclass
class Chunk:
    """Rows `numbers` (as Excel shows them) with one array per column: an object array, or for
    CSV read by Arrow a string array, kept as it is (no Python object per cell) and turned into
    an object array only where a column is needed whole (`column`). `lengths` is each row's own
    cell count (a ragged row's reject report shows its cells, no more and no fewer); `text` says
    every cell is a str (CSV), which allows hashing values without their types."""

    numbers: np.ndarray
    cells: list[Any]  # np.ndarray (object) or pyarrow.StringArray
    lengths: np.ndarray | None  # None: up to the last filled cell, at least the header's width
    text: bool = False
    _factors: dict[int, tuple[np.ndarray, list[Any]]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.numbers)

    def head(self, n: int) -> Chunk:
        """The first `n` rows (a probe of a large chunk; its columns are views, not copies)."""
        return self.rows(0, n)

    def rows(self, start: int, stop: int) -> Chunk:
        """Rows `start` to `stop` (positions in the chunk) as a chunk of views, not copies."""
        return Chunk(
            self.numbers[start:stop],
            [
                c[start:stop] if isinstance(c, np.ndarray) else c.slice(start, stop - start)
                for c in self.cells
            ],
            None if self.lengths is None else self.lengths[start:stop],
            self.text,
        )

    def pieces(self, size: int) -> Iterator[Chunk]:
        """The chunk in consecutive pieces of at most `size` rows (itself when it fits)."""
        if len(self) <= size:
            yield self
            return
        for start in range(0, len(self), size):
            yield self.rows(start, min(start + size, len(self)))

    def factors(self, index: int) -> tuple[np.ndarray, list[Any]]:
        """The column's codes into its distinct values (computed once per chunk and column)."""
        found = self._factors.get(index)
        if found is None:
            raw = self.raw(index)
            if isinstance(raw, np.ndarray):
                found = factorize(raw, self.text)
            else:  # Arrow's dictionary encoding: distinct values in order of appearance
                encoded = raw.dictionary_encode()
                codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
                found = (codes, encoded.dictionary.to_pylist())
            self._factors[index] = found
        return found

    def raw(self, index: int) -> Any:
        """The column as held: an object array or an Arrow string array."""
        if index < len(self.cells):
            return self.cells[index]
        return np.full(len(self), "" if self.text else None, dtype=object)

    def column(self, index: int) -> np.ndarray:
        """The column as an object array (made once from an Arrow column)."""
        raw = self.raw(index)
        if not isinstance(raw, np.ndarray):
            raw = self.cells[index] = raw.to_numpy(zero_copy_only=False).astype(object)
        return raw

    def cell(self, index: int, pos: int) -> Any:
        raw = self.raw(index)
        return raw[pos] if isinstance(raw, np.ndarray) else raw[pos].as_py()

    def row_values(self, pos: int, width: int) -> tuple[str, ...]:
        if self.lengths is not None:
            n = max(width, int(self.lengths[pos]))
        else:
            n = len(self.cells)
            while n > width and self.cell(n - 1, pos) in ("", None):
                n -= 1
            n = max(n, width)
        return tuple(cell_text(self.cell(j, pos)) for j in range(n))


class Cells:
    """One column's cells read one at a time (the offending value of a problem row), without
    making the whole column into Python objects."""

    def __init__(self, chunk: Chunk, index: int | None) -> None:
        self.chunk, self.index = chunk, index

    def __getitem__(self, pos: int) -> Any:
        return None if self.index is None else self.chunk.cell(self.index, int(pos))


# ---- per distinct value -------------------------------------------------------------------------


def factorize(values: np.ndarray, text: bool) -> tuple[np.ndarray, list[Any]]:
    """Codes into the distinct values, in order of appearance. Hashing is pandas'; where Python
    equality would merge different cells (True == 1 == 1.0 from a workbook) the values are keyed
    with their type instead. Empty cells (None) stay None. An array made by `per_value`,
    `filled` or `take` is not hashed again: its values' codes are known (`_KNOWN`)."""
    known = _KNOWN.recall(values)
    if known is not None:
        return _from_known(*known, text)
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


class _Known:
    """The codes of arrays made from codes: `per_value`'s results spread over a column, a
    constant column, and rows taken from either. The normaliser codes the meters, units and
    currencies mapping has just made from coded columns; hashing a million of them again cost
    more than all its other work. Held by the array's id while the array lives."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, np.ndarray, np.ndarray]] = {}

    def remember(self, array: np.ndarray, codes: np.ndarray, values: np.ndarray) -> None:
        """`array` is `values[codes]` (`values` may repeat a value: `factorize` merges them).
        The array is made read-only: a cell written afterwards would make its codes wrong."""
        array.flags.writeable = False
        key = id(array)
        gone = lambda _ref: self._by_id.pop(key, None)  # noqa: E731
        self._by_id[key] = (weakref.ref(array, gone), codes, values)

    def recall(self, array: Any) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._by_id.get(id(array))
        if found is None or found[0]() is not array:
            return None
        return found[1], found[2]


_KNOWN = _Known()


def _from_known(codes: np.ndarray, values: np.ndarray, text: bool) -> tuple[np.ndarray, list[Any]]:
    """`factorize(values[codes])` without hashing each row. Its result depends only on each
    distinct value's first appearance, so the values present, in order of first appearance
    (one row each), are factorized, and every row takes its value's code."""
    m = len(values)
    first = np.full(m, len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))  # each value's first row
    present = np.flatnonzero(first < len(codes))
    order = present[np.argsort(first[present], kind="stable")]
    representatives = np.empty(len(order), dtype=object)
    representatives[:] = [values[j] for j in order]
    merged, uniques = factorize(representatives, text)
    code_of = np.zeros(m, dtype=np.int64)
    code_of[order] = merged
    return code_of[codes], uniques


def filled(n: int, value: Any) -> np.ndarray:
    """An object column of `n` times `value`, known to `factorize` as one value."""
    out = np.full(n, value, dtype=object)
    held = np.empty(1, dtype=object)
    held[0] = out[0] if n else value  # as stored (np.full makes a numpy scalar a Python one)
    _KNOWN.remember(out, np.zeros(n, dtype=np.int64), held)
    return out


def spread(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """`values[codes]` (a value per distinct cell, spread over the rows), known to `factorize`."""
    out = values[codes]
    _KNOWN.remember(out, codes, values)
    return out


def take(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """`values[positions]`, still known to `factorize` if `values` was (and then, being
    read-only, `values` itself when `positions` are all its rows in order)."""
    known = _KNOWN.recall(values)
    every = (
        positions.dtype != bool
        and len(positions) == len(values)
        and np.array_equal(positions, np.arange(len(values)))
    )
    if known is not None and every:
        return values
    out = values[positions]
    if known is not None:
        _KNOWN.remember(out, known[0][positions], known[1])
    return out


def present(values: np.ndarray) -> np.ndarray:
    """Cells that are not None (a Fault array's faults), once per distinct value when known."""
    known = _KNOWN.recall(values)
    if known is None:
        return values != None  # noqa: E711  (element-wise, twice astype's speed)
    codes, found = known
    return np.array([v is not None for v in found], dtype=bool)[codes]


def first_present(values: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
    """`values` where not None, else `otherwise`; per distinct pair when both are known by the
    same codes (a meter's id, else its key)."""
    a, b = _KNOWN.recall(values), _KNOWN.recall(otherwise)
    if a is None or b is None or not _same_codes(a, b):
        return np.where(np.equal(values, None), otherwise, values)
    (codes, firsts), (_, seconds) = a, b
    chosen = np.empty(len(firsts), dtype=object)
    chosen[:] = [x if x is not None else y for x, y in zip(firsts, seconds, strict=True)]
    return spread(chosen, codes)


def _same_codes(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    return len(a[1]) == len(b[1]) and (a[0] is b[0] or np.array_equal(a[0], b[0]))


def truthy(values: np.ndarray) -> np.ndarray:
    """`values.astype(bool)`, asked once per distinct value when the array is known (an object
    column's astype asks each cell)."""
    known = _KNOWN.recall(values)
    if known is None:
        return values.astype(bool)
    codes, found = known
    return np.array([bool(v) for v in found], dtype=bool)[codes]


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
    return spread(results, codes)


def per_value_mask(
    values: np.ndarray, text: bool, fn: Callable[[Any], Any], factors: Factors | None = None
) -> np.ndarray:
    """bool(fn) of each cell as a bool array, fn called once per distinct value."""
    codes, results = distinct(values, text, fn, factors)
    return np.array([bool(r) for r in results], dtype=bool)[codes]


def blank_mask(values: np.ndarray, text: bool, factors: Factors | None = None) -> np.ndarray:
    """Cells that are empty or a placeholder ("N/A", "-"), as `is_blank` says."""
    if text or factors is not None:
        codes, results = distinct(values, text, is_blank, factors)
        return results.astype(bool)[codes]
    types = _type_of(values)
    out = np.equal(types, type(None))  # numpy compares element by element
    strings = np.equal(types, str)
    if strings.any():
        out[strings] = per_value_mask(values[strings], True, is_blank)
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


# Numbers Arrow converts (RE2 patterns; its string-to-double cast is correctly rounded, as
# float() is): plain and regularly grouped decimals with bounded digits, so none can overflow
# or pass MAX_MAGNITUDE. Anything else goes to parse_number, once per distinct value.
_ARROW_NUMBERS = {
    ".": (r"^-?(?:\d{1,15}|\d{1,3}(?:,\d{3}){1,4})(?:\.\d{1,17})?$", ((",", ""),)),
    ",": (r"^-?(?:\d{1,15}|\d{1,3}(?:\.\d{3}){1,4})(?:,\d{1,17})?$", ((".", ""), (",", "."))),
}


def _arrow_numbers(
    values: Any, decimal: str, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`parse_numbers` of an Arrow string column: the usual numbers converted by Arrow, the
    rest (blanks, placeholders, currency, odd formats, faults) by the scalar rule."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pattern, swaps = _ARROW_NUMBERS[decimal]
    usual = pc.match_substring_regex(values, pattern)
    text = pc.if_else(usual, values, "0")
    for old, new in swaps:
        text = pc.replace_substring(text, old, new)
    out = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False).copy()
    rest = np.flatnonzero(~usual.to_numpy(zero_copy_only=False))
    blank = np.zeros(len(values), dtype=bool)
    if not len(rest):
        return out, blank, filled(len(values), None)
    faults = np.empty(len(values), dtype=object)
    if len(rest):
        others = np.asarray(values.take(pa.array(rest)).to_pylist(), dtype=object)
        out[rest], blank[rest], faults[rest] = parse_numbers(others, True, decimal, name)
    return out, blank, faults


def parse_numbers(
    values: Any, text: bool, decimal: str, name: str, factors: Factors | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, blank, faults) for a column: NaN where blank or bad; `faults` holds a Fault
    where the cell is not a number. The same results as `parse_number`, cell by cell.
    `values` may be an Arrow string column (CSV): then Arrow converts the usual numbers."""
    if not isinstance(values, np.ndarray) and decimal in _ARROW_NUMBERS:
        return _arrow_numbers(values, decimal, name)
    if not isinstance(values, np.ndarray):
        values = values.to_numpy(zero_copy_only=False).astype(object)
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
    return out[codes], blank[codes], spread(faults, codes)
