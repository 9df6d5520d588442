"""The columnar parsers give exactly what the scalar ones give, cell by cell: numbers (with the
fast paths for plain and grouped numbers), and the distinct-value machinery on workbook cells
where Python's equality would merge different cells (True == 1 == 1.0)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest.frame import factorize, parse_numbers, per_value
from bpsync.ingest.values import NumberError, cell_text, parse_number

NUMBERISH = st.text(alphabet=st.sampled_from(list("0123456789,.-+ ()$€e_")), max_size=14)
CELLS = st.one_of(
    NUMBERISH,
    st.none(),
    st.booleans(),
    st.integers(-(10**16), 10**16),
    st.floats(allow_nan=False, width=64),
    st.dates(dt.date(1990, 1, 1), dt.date(2040, 1, 1)),
)


def _scalar(value: object, decimal: str) -> object:
    try:
        return parse_number(value, decimal)
    except NumberError as exc:
        return f"ERR {exc}"


def _outcome(numbers: np.ndarray, blank: np.ndarray, faults: np.ndarray, i: int) -> object:
    """Cell i of parse_numbers' result, as `_scalar` states it."""
    if faults[i] is not None:
        return f"ERR {faults[i].reason.removeprefix('cost is not a number: ')}"
    return None if blank[i] else float(numbers[i])


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(NUMBERISH, min_size=1, max_size=40), decimal=st.sampled_from([".", ","]))
def test_numbers_typed_as_text(texts, decimal):
    numbers, blank, faults = parse_numbers(np.array(texts, dtype=object), True, decimal, "cost")
    for i, text in enumerate(texts):
        assert _outcome(numbers, blank, faults, i) == _scalar(text, decimal), text


# What Arrow converts itself (frame._ARROW_NUMBERS), with long mantissas where rounding is hard.
DIGITS = st.from_regex(r"\A-?(\d{1,15}|\d{1,3}(,\d{3}){1,4})(\.\d{1,17})?\Z")
DIGITS_COMMA = st.from_regex(r"\A-?(\d{1,15}|\d{1,3}(\.\d{3}){1,4})(,\d{1,17})?\Z")


def _bits(x: object) -> object:
    return np.float64(x).view(np.int64) if isinstance(x, float) else x


@settings(max_examples=300, deadline=None)
@given(data=st.data(), decimal=st.sampled_from([".", ","]))
def test_numbers_of_an_arrow_column(data, decimal):
    """A CSV column read by Arrow: Arrow's own conversion of the usual numbers and the scalar
    rule for the rest give parse_number's result bit for bit (the sign of zero included)."""
    usual = DIGITS if decimal == "." else DIGITS_COMMA
    texts = data.draw(st.lists(st.one_of(usual, NUMBERISH), min_size=1, max_size=40))
    numbers, blank, faults = parse_numbers(pa.array(texts, pa.string()), True, decimal, "cost")
    for i, text in enumerate(texts):
        got, want = _outcome(numbers, blank, faults, i), _scalar(text, decimal)
        assert _bits(got) == _bits(want), text


@settings(max_examples=200, deadline=None)
@given(cells=st.lists(CELLS, min_size=1, max_size=40))
def test_workbook_cells(cells):
    values = np.empty(len(cells), dtype=object)
    values[:] = cells
    numbers, blank, faults = parse_numbers(values, False, ".", "cost")
    for i, cell in enumerate(cells):
        want = _scalar(cell, ".")
        got = "ERR" if faults[i] is not None else (None if blank[i] else float(numbers[i]))
        assert got == want or (got == "ERR" and str(want).startswith("ERR")), cell
    # per distinct value, never across types: True and 1 and 1.0 stay three cells
    texts = per_value(values, False, lambda v: (type(v).__name__, cell_text(v)))
    assert list(texts) == [(type(c).__name__, cell_text(c)) for c in cells]
    codes, uniques = factorize(values, False)
    rebuilt = [uniques[k] for k in codes]
    assert all(type(a) is type(b) and a == b for a, b in zip(rebuilt, cells, strict=True))
