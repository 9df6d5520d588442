"""A table's data rows in chunks of columns (`Chunk`): the reader's own chunks when it reads
columns directly (CSV through Arrow or pandas, workbooks through calamine), else its rows
transposed a chunk at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bpsync.ingest.cells.columnar import Chunk
from bpsync.ingest.readers.base import Row, Table

CHUNK_ROWS = 200_000  # rows per chunk: a few hundred thousand rows as one array per column


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


def table_chunks(table: Table, size: int = CHUNK_ROWS) -> Iterator[Chunk]:
    """The reader's own chunks when it has them (CSV through pandas), else its rows transposed."""
    if table.chunks is not None:
        return table.chunks(size)
    return chunks_of_rows(table.rows(), size, text=table.kind == "csv")
