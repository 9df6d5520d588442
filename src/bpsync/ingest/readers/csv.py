"""CSV and text exports: encoding and delimiter detection, any line ending, quoted fields, ragged
and blank rows, title rows above the header.

The import reads the data in chunks (`Table.chunks`): through Arrow's CSV reader while every
record has the header's fields (no Python object per cell), then from the first irregular record
(a blank line, a short row, bytes that are not UTF-8) through pandas' C parser; the header search,
the pre-scans and reject reports read rows one at a time through the stdlib csv module. All count
records the same way (a blank line is a row; a quoted line break is not). A row wider than the
widest row of the header search stops pandas, and the stdlib reader carries on from that row."""

from __future__ import annotations

import codecs
import csv
import itertools
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from bpsync.ingest.cells.columnar import Chunk
from bpsync.ingest.memory import give_back_memory
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import (
    HEADER_SEARCH_ROWS,
    Row,
    Table,
    check_width,
    find_header,
    make_headers,
    max_columns,
    too_wide,
)
from bpsync.ingest.readers.chunks import chunks_of_rows
from bpsync.ingest.readers.guard import env_limit

SAMPLE_BYTES = 256 * 1024
# The longest line a CSV may have, in bytes. Real exports' lines are under 1 KB (the widest, a
# 2,048-column row of numbers, is about 20 KB); a 50 MB single line never finished reading
# (issue 33 item 7). Checked for every line before any parser runs (BPSYNC_CSV_MAX_LINE_BYTES).
MAX_LINE_BYTES = 1 << 20
_LINE_SCAN_BYTES = 16 << 20
DELIMITERS = (",", ";", "\t", "|")
_FALLBACK = "bpsync-cp1252"


def _cp1252_fallback(exc: UnicodeError) -> tuple[str, int]:
    """Decode stray bytes of a mostly-UTF-8 file as Windows-1252 (Excel's "CSV" on Windows) rather
    than failing on row 80,000 after the sample said UTF-8."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    chunk = exc.object[exc.start : exc.end]
    text = "".join(
        bytes([b]).decode("cp1252", errors="ignore") or bytes([b]).decode("latin-1") for b in chunk
    )
    return text, exc.end


codecs.register_error(_FALLBACK, _cp1252_fallback)


def detect_encoding(sample: bytes) -> str:
    """utf-8-sig / utf-16 (by BOM or by NUL pattern) / utf-8 / cp1252."""
    if sample.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = sample[:4096]
    if len(head) >= 4 and head.count(0) >= len(head) // 4:
        even = head[0::2].count(0)
        odd = head[1::2].count(0)
        return "utf-16-be" if even > odd else "utf-16-le"
    cut = sample.rfind(b"\n")
    probe = sample if cut < 0 or len(sample) < SAMPLE_BYTES else sample[: cut + 1]
    try:
        probe.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "cp1252"


def sniff_delimiter(text: str) -> str:
    """The delimiter that splits the sample's rows into the most equal-width records.

    A row counts when it has the modal number of fields (at least 2); the header row usually
    agrees with the data, which keeps ';'-separated files with decimal commas right."""
    lines = [line for line in text.splitlines()[:60] if line.strip()]
    if not lines:
        return ","
    best, best_score = ",", -1.0
    for delim in DELIMITERS:
        try:
            widths = [len(r) for r in csv.reader(lines, delimiter=delim)]
        except csv.Error:
            continue
        counts: dict[int, int] = {}
        for w in widths:
            if w > 1:
                counts[w] = counts.get(w, 0) + 1
        if not counts:
            continue
        modal, agree = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        score = agree + modal / 1000
        if score > best_score:
            best, best_score = delim, score
    return best


def check_line_lengths(path: Path, name: str, limit: int | None = None) -> None:
    """Refuse a file with a line longer than `limit` bytes, naming the line: read in 16 MB
    pieces with the line breaks found by numpy (about 20 ms for 50 MB), so a long line fails in
    moments instead of reaching a parser that would split it into millions of fields."""
    import numpy as np

    limit = limit or int(env_limit("BPSYNC_CSV_MAX_LINE_BYTES", MAX_LINE_BYTES))
    run = 0  # bytes of the current line seen so far
    lines = 0  # line breaks (\n) before the current piece
    with open(path, "rb") as fh:
        while piece := fh.read(_LINE_SCAN_BYTES):
            data = np.frombuffer(piece, dtype=np.uint8)
            breaks = np.flatnonzero((data == 10) | (data == 13))  # \n, \r: any line ending
            if not len(breaks):
                run += len(piece)
                if run > limit:
                    raise _too_long(name, lines + 1, limit)
                continue
            gaps = np.diff(breaks) - 1
            first = run + int(breaks[0])
            if first > limit:
                raise _too_long(name, lines + 1, limit)
            over = np.flatnonzero(gaps > limit)
            if len(over):
                at = int(breaks[over[0]])
                raise _too_long(name, lines + int((data[: at + 1] == 10).sum()) + 1, limit)
            lines += int((data == 10).sum())
            run = len(piece) - int(breaks[-1]) - 1


def _too_long(name: str, line: int, limit: int) -> IngestError:
    return IngestError(
        f"line {line:,} is longer than {limit:,} bytes (BPSYNC_CSV_MAX_LINE_BYTES): not a "
        "table of bills. Nothing was imported from this file",
        where=Where(name, row=line),
        code="file_too_large",
    )


def _decoding(encoding: str) -> str:
    # UTF-16 has no single-byte fallback; a broken pair becomes U+FFFD and fails as a value.
    return "replace" if encoding.startswith("utf-16") else _FALLBACK


def _records(path: Path, encoding: str, delimiter: str) -> Iterator[list[str]]:
    with open(path, encoding=encoding, errors=_decoding(encoding), newline="") as fh:
        yield from csv.reader(fh, delimiter=delimiter)


def read_csv(
    path: str | Path,
    *,
    encoding: str | None = None,
    delimiter: str | None = None,
    expected: Collection[str] | None = None,
    skip_rows: int = 0,
    display_name: str | None = None,
) -> Table:
    """Open a CSV/TSV export. `expected` header keys (from templates) help find the header row;
    `skip_rows` skips that many leading rows before the header search."""
    path = Path(path)
    name = display_name or path.name
    try:
        with open(path, "rb") as fh:
            sample = fh.read(SAMPLE_BYTES)
    except OSError as exc:
        raise IngestError(f"cannot read the file: {exc.strerror}", where=Where(name)) from None
    if not sample.strip():
        raise IngestError("the file is empty", where=Where(name), code="empty_file")
    check_line_lengths(path, name)
    if b"\x00" in sample[:4096] and encoding is None:
        encoding = detect_encoding(sample)
        if not encoding.startswith("utf-16"):
            raise IngestError("this is a binary file, not CSV", where=Where(name))
    encoding = encoding or detect_encoding(sample)
    text = sample.decode(encoding, errors=_decoding(encoding))
    if delimiter is None:
        delimiter = (
            "\t" if encoding.startswith("utf-16") and "\t" in text else sniff_delimiter(text)
        )
    try:
        head = list(
            itertools.islice(
                enumerate(_records(path, encoding, delimiter), start=1),
                skip_rows,
                skip_rows + HEADER_SEARCH_ROWS,
            )
        )
    except (csv.Error, UnicodeError) as exc:
        raise IngestError(f"not a readable CSV file ({exc})", where=Where(name)) from None
    check_width(head, name)
    try:
        pos = find_header(head, expected)
    except IngestError as exc:
        raise IngestError(exc.message, where=Where(name), code=exc.code) from None
    header_row, header_cells = head[pos]
    headers = make_headers(header_cells)
    width = len(headers)
    widest = max([width, *(len(cells) for _, cells in head)])

    def rows() -> Iterator[Row]:
        number = 0
        limit = max_columns()
        try:
            for number, cells in enumerate(_records(path, encoding, delimiter), start=1):
                if number <= header_row:
                    continue
                if len(cells) > limit:
                    raise too_wide(name, number, len(cells), limit)
                if not cells or not any(c.strip() for c in cells):
                    continue  # blank line (or a row of empty separators)
                if len(cells) < width:
                    cells = cells + [""] * (width - len(cells))
                yield Row(number, tuple(cells))
        except csv.Error as exc:
            raise IngestError(
                f"the file cannot be read past this row ({exc})", where=Where(name, row=number + 1)
            ) from None

    # Arrow reads a UTF-8 file whose lines above the header hold no line break in a field
    # (lines and records then count alike there).
    arrow_can = encoding in ("utf-8", "utf-8-sig") and not any(
        "\n" in c or "\r" in c for n, cells in head if n <= header_row for c in cells
    )

    def chunks(size: int) -> Iterator[Any]:
        done = header_row
        # Arrow first (no Python object per cell), for files whose rows are regular; from the
        # first irregular row (a blank line, a short or long row, bytes that are not UTF-8)
        # pandas' C parser carries on, and from a row wider than the header search saw, the
        # stdlib reader. Each says where it stopped: the next starts after the last row given.
        try:
            if arrow_can:
                for chunk in _arrow_chunks(path, delimiter, header_row, widest, size):
                    done = int(chunk.numbers[-1]) if len(chunk) else done
                    yield chunk
                return
        except _Irregular:
            pass
        try:
            for chunk in _pandas_chunks(path, encoding, delimiter, done, widest, size):
                done = int(chunk.numbers[-1]) if len(chunk) else done
                yield chunk
            return
        except (pd_errors().ParserError, UnicodeError, csv.Error, ValueError):
            pass  # a row wider than expected, or bytes pandas reads otherwise: go on row by row
        later = (row for row in rows() if row.number > done)
        yield from chunks_of_rows(later, size, text=True)

    def distinct_texts(index: int, fn: Callable[[str], Any], limit: int) -> set[Any] | None:
        if not arrow_can:
            return None
        try:
            return _arrow_distinct(path, delimiter, header_row, widest, index, fn, limit)
        except _Irregular:
            return None

    return Table(
        file=name,
        kind="csv",
        headers=headers,
        header_row=header_row,
        _rows=rows,
        encoding=encoding,
        delimiter=delimiter,
        chunks=chunks,
        distinct_texts=distinct_texts,
    )


def _isspace(values: Any) -> Any:
    import numpy as np

    return np.frompyfunc(str.isspace, 1, 1)(values)


def pd_errors() -> Any:
    import pandas as pd

    return pd.errors


class _Irregular(Exception):
    """A row Arrow's reader does not take as it is: the next reader carries on from there."""


def _arrow_chunks(
    path: Path, delimiter: str, header_row: int, width: int, size: int
) -> Iterator[Any]:
    """_arrow_chunks_of the file at `path`."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        # Arrow takes a path as UTF-8 text: a name that is not UTF-8 (os.fsdecode's surrogate
        # escapes) is opened here and handed over as a file.
        with open(path, "rb") as file:
            yield from _arrow_chunks_of(file, delimiter, header_row, width, size)
        return
    yield from _arrow_chunks_of(path, delimiter, header_row, width, size)


def _arrow_options(
    delimiter: str, header_row: int, width: int, include: list[str] | None, block: int = 8 << 20
) -> Any:
    """Arrow's read, parse and convert options for a regular UTF-8 file (see _arrow_chunks_of):
    every field a string, any irregular record refused, `block` bytes parsed at a time."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [str(j) for j in range(width)]

    def refuse(_row: Any) -> str:
        return "error"

    return (
        pacsv.ReadOptions(skip_rows=header_row, column_names=names, block_size=block),
        pacsv.ParseOptions(
            delimiter=delimiter,
            quote_char='"',
            double_quote=True,
            escape_char=False,
            newlines_in_values=True,
            ignore_empty_lines=False,
            invalid_row_handler=refuse,
        ),
        pacsv.ConvertOptions(
            column_types={n: pa.string() for n in (include or names)},
            include_columns=include,
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            check_utf8=True,
        ),
    )


def _arrow_distinct(
    path: Path,
    delimiter: str,
    header_row: int,
    width: int,
    index: int,
    fn: Callable[[str], Any],
    limit: int,
) -> set[Any]:
    """The distinct fn(text) of column `index`: every record is parsed (an irregular one raises
    _Irregular as in _arrow_chunks_of) but only that column becomes strings, so finding a
    file's meters costs a fraction of reading it (the meter lookup waits for it)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    # 1 MiB blocks: as quick as 8 MiB for one column (0.1 s for 54 MB), 60 MB less at the peak.
    read, parse, convert = _arrow_options(delimiter, header_row, width, [str(index)], 1 << 20)
    found: set[Any] = set()
    try:
        str(path).encode("utf-8")
        source: Any = path
    except UnicodeEncodeError:
        source = open(path, "rb")  # noqa: SIM115 - closed below (Arrow takes UTF-8 paths only)
    try:
        with pacsv.open_csv(
            source, read_options=read, parse_options=parse, convert_options=convert
        ) as reader:
            for batch in reader:
                found.update(map(fn, pc.unique(batch.column(0)).to_pylist()))
                found.discard(None)
                if len(found) > limit:
                    break
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError) as exc:
        raise _Irregular from exc
    finally:
        if source is not path:
            source.close()
        give_back_memory()
    return found


def _arrow_chunks_of(
    source: Any, delimiter: str, header_row: int, width: int, size: int
) -> Iterator[Any]:
    """The data rows as Chunks of Arrow string columns, for a UTF-8 file whose records
    all have `width` fields and whose lines above the header hold no line break in a field (so
    lines and records count alike there). Raises _Irregular at the first record that is not so
    (a blank line is a one-field record), after yielding every whole chunk before it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    read, parse, convert = _arrow_options(delimiter, header_row, width, None, 2 << 20)
    try:
        reader = pacsv.open_csv(
            source, read_options=read, parse_options=parse, convert_options=convert
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise _Irregular from exc
    first = header_row + 1
    pending: list[Any] = []
    held = 0

    def emit(table: Any) -> Any:
        nonlocal first
        cells = [table.column(j).combine_chunks() for j in range(width)]
        numbers = np.arange(first, first + table.num_rows, dtype=np.int64)
        first += table.num_rows
        keep = _filled_rows(cells, pc)
        if keep is not None:
            numbers = numbers[keep]
            cells = [c.take(pa.array(keep)) for c in cells]
        return Chunk(numbers, cells, None, text=True)

    with reader:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except (pa.ArrowInvalid, UnicodeError) as exc:
                raise _Irregular from exc
            pending.append(batch)
            held += batch.num_rows
            while held >= size:
                table = pa.Table.from_batches(pending)
                yield emit(table.slice(0, size))
                pending, held = table.slice(size).to_batches(), held - size
                give_back_memory()  # the mapped chunk's memory back to the system
        if held:
            yield emit(pa.Table.from_batches(pending))
        pending = []
        give_back_memory()


# Characters Python's str.isspace() may take for a space: a cell made only of these might be
# blank; one with anything else is filled (the few candidates are then asked exactly).
_MAYBE_SPACE = r"^[\s\x0b\x1c-\x1f\x85\p{Z}]*$"


def _filled_rows(cells: list[Any], pc: Any) -> Any:
    """Positions of the rows that are not blank (every cell empty or spaces), or None when no
    row is blank."""
    import numpy as np

    n = len(cells[0]) if cells else 0
    maybe_blank = np.ones(n, dtype=bool)
    empty = np.ones(n, dtype=bool)
    for col in cells:
        maybe_blank &= pc.match_substring_regex(col, _MAYBE_SPACE).to_numpy(zero_copy_only=False)
        empty &= pc.equal(col, "").to_numpy(zero_copy_only=False)
        if not maybe_blank.any():
            return None
    for pos in np.flatnonzero(maybe_blank & ~empty):
        if any(col[pos].as_py().strip() for col in cells):  # str.strip: Python's spaces
            maybe_blank[pos] = False
    return np.flatnonzero(~maybe_blank) if maybe_blank.any() else None


def _pandas_chunks(
    path: Path, encoding: str, delimiter: str, header_row: int, width: int, size: int
) -> Iterator[Any]:
    """The data rows as Chunks, read by pandas' C parser: every field a str, fields a row
    lacks are "", blank and separator-only rows dropped but counted in the row numbers."""
    import numpy as np
    import pandas as pd

    reader = pd.read_csv(
        path,
        sep=delimiter,
        header=None,
        names=range(width),
        skiprows=header_row,
        dtype=str,
        keep_default_na=False,
        na_filter=False,
        skip_blank_lines=False,
        quotechar='"',
        doublequote=True,
        encoding=encoding,
        encoding_errors=_decoding(encoding),
        chunksize=size,
        engine="c",
        index_col=False,
    )
    first = header_row + 1
    with reader:
        for df in reader:
            cells = [df[j].to_numpy(dtype=object) for j in range(width)]
            numbers = np.arange(first, first + len(df), dtype=np.int64)
            first += len(df)
            # A row is blank when every cell is empty or spaces; most rows are decided by their
            # first non-empty cell, so only the undecided rows are looked at column by column.
            filled = np.zeros(len(df), dtype=bool)
            undecided = np.arange(len(df))
            for col in cells:
                if not len(undecided):
                    break
                values = col[undecided]
                present = values != ""
                spaces = np.zeros(len(values), dtype=bool)
                if present.any():
                    spaces[present] = _isspace(values[present]).astype(bool)
                text = present & ~spaces
                filled[undecided[text]] = True
                undecided = undecided[~text]
            if not filled.all():
                keep = np.flatnonzero(filled)
                numbers = numbers[keep]
                cells = [c[keep] for c in cells]
            yield Chunk(numbers, cells, None, text=True)
