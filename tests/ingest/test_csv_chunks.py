"""The CSV reader's two ways of reading the same rows agree: pandas' C parser (the import's
chunks) and the stdlib csv module (header search, pre-scans, reject reports). Same row numbers,
same cells, for any mix of quoting, embedded line breaks, carriage returns, blank and
separator-only rows, ragged rows, and rows wider than any the header search saw (where the stdlib
reader carries on from the row pandas stopped at)."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest.readers import read_csv
from bpsync.ingest.readers.chunks import table_chunks

FIELD = st.text(alphabet=st.sampled_from(list('ab1,;" \n\r\t.-é')), max_size=6)


def _flat(table) -> list[tuple[int, tuple[str, ...]]]:
    out = []
    for chunk in table_chunks(table, size=7):
        width = len(chunk.cells)
        for pos in range(len(chunk)):
            cells = tuple(chunk.cell(j, pos) for j in range(width))
            out.append((int(chunk.numbers[pos]), cells))
    return out


def _rows(table, widths: int) -> list[tuple[int, tuple[str, ...]]]:
    return [(r.number, tuple(r.cells) + ("",) * (widths - len(r.cells))) for r in table.rows()]


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(st.lists(FIELD, min_size=0, max_size=6), min_size=1, max_size=30),
    raw=st.lists(st.text(alphabet=st.sampled_from(list('ab1,;" .')), max_size=12), max_size=5),
    delimiter=st.sampled_from([",", ";"]),
    newline=st.sampled_from(["\n", "\r\n"]),
)
def test_pandas_chunks_and_stdlib_rows_agree(records, raw, delimiter, newline):
    """`raw` lines are written as they are: stray quotes inside unquoted fields, as hand-edited
    exports have them."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator=newline)
    writer.writerow(["Meter ID", "Start Date", "End Date", "Consumption"])
    writer.writerows(records)
    for line in raw:
        if line.count('"') % 2 == 0:  # an open quote would swallow the rest of the file
            buffer.write(line + newline)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bills.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
        table = read_csv(path, delimiter=delimiter)
        chunks = _flat(table)
        widest = max([len(cells) for _, cells in chunks] + [len(table.headers)])
        rows = [(n, cells[:widest]) for n, cells in _rows(table, widest)]
    assert [n for n, _ in chunks] == [n for n, _ in rows]
    for (n, got), (_, want) in zip(chunks, rows, strict=True):
        width = max(len(got), len(want))
        assert _pad(got, width) == _pad(want, width), n


def _pad(cells: tuple[str, ...], width: int) -> tuple[str, ...]:
    return tuple(cells) + ("",) * (width - len(cells))


def test_a_row_wider_than_the_header_search_saw(tmp_path: Path) -> None:
    """Row 40 has nine fields; pandas stops there and the stdlib reader carries on."""
    lines = ["Meter ID,Start Date,End Date,Consumption"]
    lines += [f"m{i},2024-01-01,2024-01-31,{i}" for i in range(2, 40)]
    lines += ["m40,2024-01-01,2024-01-31,40,x,y,z,w,v"]
    lines += [f"m{i},2024-01-01,2024-01-31,{i}" for i in range(41, 60)]
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_csv(path)
    got = _flat(table)
    assert [n for n, _ in got] == list(range(2, 60))
    assert got[38] == (40, ("m40", "2024-01-01", "2024-01-31", "40", "x", "y", "z", "w", "v"))


REGULAR = st.text(alphabet=st.sampled_from(list('ab1,;" \n\r\t.-é\u3000\x1c')), max_size=6)


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(st.lists(REGULAR, min_size=4, max_size=4), min_size=1, max_size=30),
    bom=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    trailing_blank=st.booleans(),
)
def test_arrow_chunks_of_a_regular_file_and_stdlib_rows_agree(
    records, bom, newline, trailing_blank
):
    """Every record has the header's four fields (quoted line breaks, delimiters and quotes
    inside fields, rows of spaces that Python calls spaces: U+3000, \\x1c): Arrow reads it all,
    blank rows are dropped but counted, as the stdlib reader counts them. A blank line at the
    end hands over to the next reader after the last whole chunk."""
    buffer = io.StringIO()
    buffer.write("Meter ID,Start Date,End Date,Consumption" + newline)
    # Every field quoted, as many exports write them (unquoted, a bare \r ends a record).
    csv.writer(buffer, lineterminator=newline, quoting=csv.QUOTE_ALL).writerows(records)
    if trailing_blank:
        buffer.write(newline)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bills.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8-sig" if bom else "utf-8", newline="")
        table = read_csv(path, delimiter=",")
        chunks = list(table_chunks(table, size=7))
        got = _flat(table)
        want = _rows(table, 4)
    assert got == want
    if not trailing_blank and chunks:  # Arrow read it: no Python object per cell
        assert all(not isinstance(c, np.ndarray) for c in chunks[0].cells)


def test_a_blank_line_midway_hands_over_to_pandas(tmp_path: Path) -> None:
    """A blank line is a record of one field: Arrow stops at its chunk, pandas carries on from
    the last row Arrow gave, and every row keeps its number (the blank line's row 12 is none)."""
    lines = ["Meter ID,Start Date,End Date,Consumption"]
    lines += [f"m{i},2024-01-01,2024-01-31,{i}" for i in range(2, 12)]
    lines += [""]
    lines += [f"m{i},2024-01-01,2024-01-31,{i}" for i in range(13, 30)]
    path = tmp_path / "gap.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_csv(path)
    got = _flat(table)
    assert [n for n, _ in got] == [*range(2, 12), *range(13, 30)]
    assert got[-1] == (29, ("m29", "2024-01-01", "2024-01-31", "29"))


def _name(text: str) -> str | None:
    return text.strip() or None


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(st.lists(REGULAR, min_size=4, max_size=4), min_size=1, max_size=30),
    ragged=st.booleans(),
    bom=st.booleans(),
    column=st.integers(0, 3),
)
def test_one_column_read_alone_gives_the_chunks_distinct_values(records, ragged, bom, column):
    """The meter lookup reads one column by itself (`Table.distinct_texts`, Arrow parsing every
    record but converting one field): the distinct names are those of the whole read, blank
    rows and cells giving none. A file Arrow does not take (a short row) answers None, and the
    caller reads its chunks instead."""
    if ragged:
        records = [*records, ["short"]]
    buffer = io.StringIO()
    buffer.write("Meter ID,Start Date,End Date,Consumption\n")
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(records)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bills.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8-sig" if bom else "utf-8", newline="")
        table = read_csv(path, delimiter=",")
        alone = table.distinct_texts(column, _name, 1_000)
        want = {_name(cells[column]) for _, cells in _flat(table) if column < len(cells)}
    if ragged:
        assert alone is None
    else:
        assert alone == want - {None}


def test_one_column_read_alone_stops_past_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "bills.csv"
    path.write_text(
        "Meter ID,Usage\n" + "".join(f"m{i},1\n" for i in range(50)) + " m1 ,2\n", "utf-8"
    )
    table = read_csv(path)
    assert table.distinct_texts(0, _name, 50) == {f"m{i}" for i in range(50)}  # " m1 " is m1
    assert len(table.distinct_texts(0, _name, 10)) > 10  # stopped reading, said it is over
