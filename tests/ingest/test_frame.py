"""The columnar parsers give exactly what the scalar ones give, cell by cell: numbers (with the
fast paths for plain and grouped numbers), and the distinct-value machinery on workbook cells
where Python's equality would merge different cells (True == 1 == 1.0)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest.cells.columnar import factorize, parse_numbers, per_value
from bpsync.ingest.cells.values import NumberError, cell_text, parse_number

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


# What Arrow converts itself (cells.columnar._ARROW_NUMBERS), with long mantissas where rounding is hard.
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


def _fresh(values: np.ndarray) -> np.ndarray:
    """The same cells in a new array, which factorize has never seen."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


@settings(max_examples=300, deadline=None)
@given(
    cells=st.lists(
        st.one_of(st.sampled_from([None, "", " a", "a", "A ", "b", "kWh", "KWH"]), CELLS),
        min_size=0,
        max_size=40,
    ),
    text=st.booleans(),
    picks=st.lists(st.integers(0, 39), max_size=40),
)
def test_known_codes_equal_a_fresh_factorize(cells, text, picks):
    """Arrays made from codes (per_value's results, spread, a constant column, rows taken from
    any of them) are coded from what made them, not hashed again: the codes and values are
    exactly factorize's of the same cells in a fresh array, merged values, order of first
    appearance and values no longer present included."""
    from bpsync.ingest.cells.columnar import filled, spread, take

    if text:
        cells = [c if c is None or isinstance(c, str) else cell_text(c) for c in cells]
    values = np.empty(len(cells), dtype=object)
    values[:] = cells
    merging = per_value(values, text, lambda v: v.strip().lower() if isinstance(v, str) else v)
    positions = np.array([p for p in picks if p < len(cells)], dtype=np.int64)
    made = [merging, take(merging, positions), filled(len(cells), "kWh"), filled(3, None)]
    codes, uniques = factorize(values, text)
    made.append(spread(np.array(["x" if j % 2 else None for j in range(len(uniques))]), codes))
    for array in made:
        got_codes, got = factorize(array, text)
        want_codes, want = factorize(_fresh(array), text)
        assert list(got_codes) == list(want_codes)
        assert [(type(v), repr(v)) for v in got] == [(type(v), repr(v)) for v in want]  # NaN too
        assert not array.flags.writeable  # a cell written later would make the codes wrong
    mask = np.array([i % 2 == 1 for i in range(len(cells))], dtype=bool)
    assert list(take(merging, mask)) == list(merging[mask])  # a mask is not a list of rows


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from([None, "mtr_1", "mtr_2"]), st.sampled_from(["a", "b", " c"])),
        max_size=30,
    ),
    picks=st.lists(st.integers(0, 29), max_size=30),
)
def test_first_present_per_pair_equals_row_by_row(pairs, picks):
    """A meter's id, else its key: per distinct pair when both columns come from the same codes
    (also after rows are taken from both), row by row otherwise; the same cells either way."""
    from bpsync.ingest.cells.columnar import first_present, spread, take

    ids = np.array([i for i, _ in pairs] + [None], dtype=object)[:-1]
    keys = np.array([k for _, k in pairs] + [None], dtype=object)[:-1]
    codes, _ = factorize(np.array([f"{i}|{k}" for i, k in pairs] + [""], dtype=object)[:-1], True)
    id_of = np.empty(max(codes, default=-1) + 1, dtype=object)
    key_of = np.empty(len(id_of), dtype=object)
    for row, code in enumerate(codes):
        id_of[code], key_of[code] = pairs[row]
    known_ids, known_keys = spread(id_of, codes), spread(key_of, codes)
    positions = np.array([p for p in picks if p < len(pairs)], dtype=np.int64)
    for a, b, want_rows in (
        (known_ids, known_keys, range(len(pairs))),
        (take(known_ids, positions), take(known_keys, positions), positions),
        (_fresh(ids), _fresh(keys), range(len(pairs))),
    ):
        got = first_present(a, b)
        want = [pairs[r][0] if pairs[r][0] is not None else pairs[r][1] for r in want_rows]
        assert list(got) == want
        fresh_codes, fresh_values = factorize(_fresh(got), True)
        known_codes, known_values = factorize(got, True)
        assert list(known_codes) == list(fresh_codes) and known_values == fresh_values
