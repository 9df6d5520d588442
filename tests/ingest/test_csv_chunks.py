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

from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest.frame import table_chunks
from bpsync.ingest.readers import read_csv

FIELD = st.text(alphabet=st.sampled_from(list('ab1,;" \n\r\t.-é')), max_size=6)


def _flat(table) -> list[tuple[int, tuple[str, ...]]]:
    out = []
    for chunk in table_chunks(table, size=7):
        width = len(chunk.cells)
        for pos in range(len(chunk)):
            cells = tuple(chunk.cells[j][pos] for j in range(width))
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
