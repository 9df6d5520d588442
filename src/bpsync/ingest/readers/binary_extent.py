"""The extent of each sheet of a binary workbook (.xls, .xlsb), read from its cell records before
calamine makes a dense grid of it (issue 33 item 7).

calamine holds a sheet as a grid from its first to its last cell holding a value, about 32 bytes a
cell before any value: a 5.6 KB .xls with one cell at IV65536 took 1.06 GB. The cell records say
where each value is, so one pass over them (no values decoded) bounds the grid. Blank cells are
not counted: calamine leaves them out of the grid.

- .xls (BIFF8, and BIFF5's "Book"): an OLE2 compound file whose "Workbook" stream holds the
  globals (BOUNDSHEET: each sheet's name and where its records start), then each sheet's records.
- .xlsb: a zip whose sheets are records with variable-length type and size (BrtRowHdr gives the
  row, each cell record starts with its column); workbook.bin names the sheets and their parts.

Anything this reader does not understand gives no extent: calamine then reads the file and says
what is wrong with it in its own words, as before.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

# ---- .xls: the OLE2 compound file ----------------------------------------------------------------

_CFB_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
_END_OF_CHAIN = 0xFFFFFFFE
_MAX_SECTORS = 1 << 22  # 2 GB of 512-byte sectors: a chain longer than that loops


class _Unreadable(Exception):
    """Not a compound file this reader understands (calamine will say what is wrong)."""


def _workbook_stream(data: bytes) -> bytes:
    """The "Workbook" (BIFF8) or "Book" (BIFF5) stream of a compound file held in `data`."""
    if data[:8] != _CFB_MAGIC or len(data) < 512:
        raise _Unreadable
    sector = 1 << struct.unpack_from("<H", data, 30)[0]
    mini_sector = 1 << struct.unpack_from("<H", data, 32)[0]
    (fat_count, dir_start, _, cutoff, minifat_start, _, difat_start, difat_count) = (
        struct.unpack_from("<IIIIIIII", data, 44)
    )
    if sector not in (512, 4096):
        raise _Unreadable

    def at(n: int) -> bytes:
        offset = (n + 1) * sector
        if offset + sector > len(data) + sector:  # a last sector may be short
            raise _Unreadable
        return data[offset : offset + sector]

    fat_sectors = list(struct.unpack_from("<109I", data, 76))
    n, seen = difat_start, 0
    while n < _END_OF_CHAIN and seen < difat_count:
        block = struct.unpack(f"<{sector // 4}I", at(n).ljust(sector, b"\0"))
        fat_sectors.extend(block[:-1])
        n, seen = block[-1], seen + 1
    fat: list[int] = []
    for s in fat_sectors[:fat_count]:
        fat.extend(struct.unpack(f"<{sector // 4}I", at(s).ljust(sector, b"\0")))

    def chain(start: int) -> Iterator[int]:
        n, steps = start, 0
        while n < _END_OF_CHAIN:
            if n >= len(fat) or steps > _MAX_SECTORS:
                raise _Unreadable
            yield n
            n, steps = fat[n], steps + 1

    directory = b"".join(at(n) for n in chain(dir_start))
    entries = []
    for off in range(0, len(directory) - 127, 128):
        length = struct.unpack_from("<H", directory, off + 64)[0]
        name = directory[off : off + max(0, length - 2)].decode("utf-16-le", "replace")
        kind = directory[off + 66]
        start, size = struct.unpack_from("<IQ", directory, off + 116)
        entries.append((name, kind, start, size if sector == 4096 else size & 0xFFFFFFFF))
    if not entries:
        raise _Unreadable
    root = entries[0]
    wanted = next((e for e in entries if e[1] == 2 and e[0] in ("Workbook", "Book")), None)
    if wanted is None:
        raise _Unreadable
    _, _, start, size = wanted
    if size >= cutoff:
        return b"".join(at(n) for n in chain(start))[:size]
    # a small stream lives in the mini stream (the root entry's data), in 64-byte sectors
    mini_stream = b"".join(at(n) for n in chain(root[2]))
    minifat: list[int] = []
    for n in chain(minifat_start):
        minifat.extend(struct.unpack(f"<{sector // 4}I", at(n).ljust(sector, b"\0")))
    out, n, steps = [], start, 0
    while n < _END_OF_CHAIN:
        if n >= len(minifat) or steps > _MAX_SECTORS:
            raise _Unreadable
        out.append(mini_stream[n * mini_sector : (n + 1) * mini_sector])
        n, steps = minifat[n], steps + 1
    return b"".join(out)[:size]


# BIFF cell records holding a value, each starting with its row and column (u16 each); MULRK
# holds several cells of one row and ends with its last column.
_BIFF_CELLS = {0x0203, 0x027E, 0x00FD, 0x0204, 0x0205, 0x0006, 0x00D6, 0x0406, 0x0004, 0x0003}
_MULRK = 0x00BD
_BOUNDSHEET = 0x0085
_EOF = 0x000A
_BOF = (0x0809, 0x0409, 0x0209, 0x0009)  # BIFF8/5, 4, 3, 2


def xls_extents(path: Path) -> dict[str, tuple[int, int]]:
    """Each sheet of an .xls: (rows, columns) of calamine's grid (first to last value). Empty
    when the file is not a compound file this reader understands."""
    try:
        stream = _workbook_stream(path.read_bytes())
        return _biff_extents(stream)
    except (_Unreadable, struct.error, IndexError, ValueError):
        return {}


def _biff_records(stream: bytes, offset: int) -> Iterator[tuple[int, int, int]]:
    """(type, start of data, length) from the BOF at `offset` to its EOF (a chart embedded in
    a sheet is a substream of its own, BOF to EOF, inside the sheet's)."""
    depth = 0
    while offset + 4 <= len(stream):
        kind, length = struct.unpack_from("<HH", stream, offset)
        yield kind, offset + 4, length
        depth += kind in _BOF
        if kind == _EOF:
            depth -= 1
            if depth <= 0:
                return
        offset += 4 + length


def _biff_extents(stream: bytes) -> dict[str, tuple[int, int]]:
    sheets: list[tuple[str, int]] = []
    for kind, start, length in _biff_records(stream, 0):
        if kind == _BOUNDSHEET and length >= 8:
            position = struct.unpack_from("<I", stream, start)[0]
            sheets.append((_sheet_name(stream[start + 6 : start + length]), position))
    extents = {}
    for name, position in sheets:
        grid = _Grid()
        for kind, start, length in _biff_records(stream, position):
            if kind in _BIFF_CELLS and length >= 4:
                row, col = struct.unpack_from("<HH", stream, start)
                grid.add(row, col, col)
            elif kind == _MULRK and length >= 6:
                row, first = struct.unpack_from("<HH", stream, start)
                grid.add(row, first, struct.unpack_from("<H", stream, start + length - 2)[0])
        extents[name] = grid.size()
    return extents


class _Grid:
    """The first and last row and column holding a value."""

    def __init__(self) -> None:
        self.rows: tuple[int, int] | None = None
        self.cols: tuple[int, int] = (0, 0)

    def add(self, row: int, first: int, last: int) -> None:
        if self.rows is None:
            self.rows, self.cols = (row, row), (first, last)
            return
        self.rows = (min(self.rows[0], row), max(self.rows[1], row))
        self.cols = (min(self.cols[0], first), max(self.cols[1], last))

    def size(self) -> tuple[int, int]:
        if self.rows is None:
            return 0, 0
        return self.rows[1] - self.rows[0] + 1, self.cols[1] - self.cols[0] + 1


def _sheet_name(raw: bytes) -> str:
    """A BOUNDSHEET's name: BIFF8's count, flags (bit 0: two bytes a character), characters;
    BIFF5's count and 8-bit characters."""
    if not raw:
        return ""
    count = raw[0]
    if len(raw) >= 2 + count and raw[1] in (0, 1) and len(raw) in (2 + count, 2 + 2 * count):
        if raw[1] & 1:
            return raw[2 : 2 + 2 * count].decode("utf-16-le", "replace")
        return raw[2 : 2 + count].decode("latin-1")
    return raw[1 : 1 + count].decode("latin-1")


# ---- .xlsb: records in a zip -------------------------------------------------------------------

_BRT_ROW = 0x00
# The cell records calamine reads as values (BrtCellRk to BrtFmlaBool); it skips BrtCellBlank
# (1) and anything else, and stops at a row past Excel's last.
_BRT_CELLS = {2, 3, 4, 5, 6, 7, 8, 9, 10}
_BRT_LAST_ROW = 0x0010_0000
_BRT_BUNDLE_SHEET = 0x9C
_SCAN = 4 << 20


def xlsb_extents(path: Path) -> dict[str, tuple[int, int]]:
    """Each sheet of an .xlsb: (rows, columns) of calamine's grid (first to last value)."""
    try:
        with zipfile.ZipFile(path) as z:
            parts = _xlsb_sheet_parts(z)
            return {name: _xlsb_extent(z, member) for name, member in parts.items()}
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, zlib.error, struct.error):
        return {}


def _xlsb_sheet_parts(z: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name → its part, from workbook.bin's BrtBundleSh records and the workbook's rels."""
    import re

    rels = z.read("xl/_rels/workbook.bin.rels")
    targets = {
        m.group(1).decode(): m.group(2).decode()
        for m in re.finditer(rb'<Relationship\b[^>]*?Id="([^"]+)"[^>]*?Target="([^"]+)"', rels)
    }
    targets.update(
        {
            m.group(2).decode(): m.group(1).decode()
            for m in re.finditer(rb'<Relationship\b[^>]*?Target="([^"]+)"[^>]*?Id="([^"]+)"', rels)
        }
    )
    parts = {}
    book = z.read("xl/workbook.bin")
    for kind, data in _xlsb_records(iter([book])):
        if kind == _BRT_BUNDLE_SHEET and len(data) >= 12:
            rel, at = _wide_string(data, 8)
            name, _ = _wide_string(data, at)
            target = targets.get(rel)
            if target:
                member = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
                parts[name] = str(PurePosixPath(member))
    return parts


def _wide_string(data: bytes, at: int) -> tuple[str, int]:
    (count,) = struct.unpack_from("<I", data, at)
    end = at + 4 + 2 * count
    if end > len(data):
        raise struct.error("string past its record")
    return data[at + 4 : end].decode("utf-16-le", "replace"), end


def _xlsb_extent(z: zipfile.ZipFile, member: str) -> tuple[int, int]:
    grid = _Grid()
    row = 0
    with z.open(member) as fh:
        pieces = iter(lambda: fh.read(_SCAN), b"")
        for kind, data in _xlsb_records(pieces):
            if kind == _BRT_ROW and len(data) >= 4:
                row = struct.unpack_from("<I", data)[0]
                if row > _BRT_LAST_ROW:
                    break
            elif kind in _BRT_CELLS and len(data) >= 4:
                col = struct.unpack_from("<I", data)[0]
                grid.add(row, col, col)
    return grid.size()


def _xlsb_records(pieces: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """(type, data) of each record: type in 1-2 bytes and size in 1-4 bytes, 7 bits each."""
    buffer = b""
    at = 0
    for piece in pieces:
        buffer = buffer[at:] + piece
        at = 0
        while True:
            parsed = _xlsb_header(buffer, at)
            if parsed is None:
                break
            kind, size, start = parsed
            if start + size > len(buffer):
                break
            yield kind, buffer[start : start + size]
            at = start + size


def _xlsb_header(buffer: bytes, at: int) -> tuple[int, int, int] | None:
    kind = 0
    for i in range(2):
        if at >= len(buffer):
            return None
        byte = buffer[at]
        at += 1
        kind |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            break
    size = 0
    for i in range(4):
        if at >= len(buffer):
            return None
        byte = buffer[at]
        at += 1
        size |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            break
    return kind, size, at
