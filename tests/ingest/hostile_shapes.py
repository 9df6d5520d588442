"""Hostile files of issue 33 item 7, built at run time from a fixed seed: small on disk, costly to
read. Shared by tests/ingest/test_bounded_input.py and bench/bench_hostile.py; every size is a
parameter, so CI builds them small and the bench at the issue's sizes."""

from __future__ import annotations

import random
import struct
import zipfile
from pathlib import Path

import numpy as np

HEADER = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit"]
ROWS = [HEADER] + [
    ["M1", f"2024-{m:02d}-01", f"2024-{m:02d}-28", 100 + m, "kWh"] for m in range(1, 11)
]


def _plain_workbook(path: Path, rows: list[list[object]] | None = None) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Bills"
    for row in ROWS if rows is None else rows:
        ws.append(row)
    wb.save(path)
    return path


def shared_strings_bomb(path: Path, inflated_mb: int = 300, seed: int = 7) -> Path:
    """A workbook whose shared strings part inflates to about `inflated_mb` MB of short strings
    (about 14 bytes of XML each) at a ratio near 165, under the 200 ratio limit: a 1.3 KB block
    of random short strings, repeated (deflate's distance codes keep the ratio there)."""
    rng = random.Random(seed)
    plain = _plain_workbook(path.with_suffix(".plain.xlsx"))
    letters = "abcdefghijklmnopqrstuvwxyz"
    block, size = [], 0
    while size < 1300:
        text = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))
        block.append(f"<si><t>{text}</t></si>")
        size += len(block[-1])
    piece = "".join(block).encode() * ((1 << 20) // size)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            if item.filename != "xl/sharedStrings.xml":
                out.writestr(item, src.read(item))
        with out.open("xl/sharedStrings.xml", "w", force_zip64=True) as part:
            part.write(b'<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/')
            part.write(b'spreadsheetml/2006/main">')
            for _ in range(inflated_mb):
                part.write(piece)
            part.write(b"</sst>")
    plain.unlink()
    return path


def far_cell(path: Path, ref: str) -> Path:
    """A workbook of a header and one bill, plus one cell at `ref`: a few KB on disk, and a
    dense grid of (its row x its column) cells to calamine."""
    plain = _plain_workbook(path.with_suffix(".plain.xlsx"), ROWS[:2])
    with zipfile.ZipFile(plain) as src:
        sheet = src.read("xl/worksheets/sheet1.xml").decode()
        row = int("".join(ch for ch in ref if ch.isdigit()))
        far = f'<row r="{row}"><c r="{ref}"><v>1</v></c></row></sheetData>'
        sheet = sheet.replace("</sheetData>", far)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
            for item in src.infolist():
                data = sheet.encode() if item.filename.endswith("sheet1.xml") else src.read(item)
                out.writestr(item, data)
    plain.unlink()
    return path


def wide_header_csv(path: Path, columns: int = 50_000, rows: int = 3) -> Path:
    """A header of `columns` short names (the issue's: 50,000 columns, 0.34 MB) and a few rows."""
    header = ",".join(f"c{j}" for j in range(columns))
    line = ",".join("1" for _ in range(columns))
    path.write_text(header + "\n" + "\n".join([line] * rows) + "\n", encoding="utf-8")
    return path


def long_line_csv(path: Path, megabytes: int = 50, seed: int = 7, header: bool = False) -> Path:
    """One line of `megabytes` MB: short random fields and commas, no line break (the issue's
    50 MB single line). With `header`, a proper header and a row come first, so the line is data."""
    rng = np.random.default_rng(seed)
    size = megabytes << 20
    letters = rng.integers(ord("a"), ord("z") + 1, size=size, dtype=np.uint8)
    letters[rng.integers(0, size, size=size // 8)] = ord(",")
    with open(path, "wb") as fh:
        if header:
            fh.write((",".join(HEADER) + "\nM1,2024-01-01,2024-01-31,5,kWh\n").encode())
        fh.write(letters.tobytes())
    return path


def garbage_csv(
    path: Path,
    rows: int = 1_000_000,
    seed: int = 7,
    by_id: bool = False,
    readable_first: bool = False,
) -> Path:
    """A bills header, then `rows` rows of random tokens: every meter reference distinct, no
    date or number readable (the issue's "1M rows of garbage"). `by_id`: the long_csv template's
    header (meters by id); otherwise utility_service_period's (meters by external reference).
    `readable_first`: the first data row is a sound bill (of a meter the organisation does not
    have), so the file passes the first-rows probe and the garbage is met row by row."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    width = 10
    head = (
        HEADER if by_id else ["Meter Number", "Service Start", "Service End", "Usage", "Usage Unit"]
    )
    with open(path, "wb") as fh:
        fh.write((",".join(head) + "\n").encode())
        done = 0
        if readable_first and rows:
            fh.write(b"M1,2024-01-01,2024-01-31,5,kWh\n")  # both headers share the order
            done = 1
        while done < rows:
            n = min(100_000, rows - done)
            cells = alphabet[rng.integers(0, len(alphabet), size=(n, 5 * width))]
            cells = cells.reshape(n, 5, width)
            sep = np.full((n, 5, 1), ord(","), dtype=np.uint8)
            sep[:, -1, 0] = ord("\n")
            fh.write(np.concatenate([cells, sep], axis=2).tobytes())
            done += n
    return path


def unknown_meters_csv(path: Path, rows: int = 1_000_000, seed: int = 7) -> Path:
    """`rows` sound monthly bills whose meter references are all distinct and in no meter map:
    every row readable, every row refused for its meter."""
    rng = np.random.default_rng(seed)
    refs = rng.integers(0, 36**10, size=rows)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("Meter Number,Service Start,Service End,Usage,Usage Unit\n")
        for i in range(0, rows, 100_000):
            fh.write(
                "".join(
                    f"R{r:x},2024-01-01,2024-01-31,{100 + k % 50},kWh\n"
                    for k, r in enumerate(refs[i : i + 100_000])
                )
            )
    return path


# ---- binary and OpenDocument workbooks ------------------------------------------------------------


def _xlsb_record(kind: int, data: bytes = b"") -> bytes:
    """One .xlsb record: type in 1-2 bytes and size in 1-4 bytes, 7 bits each (MS-XLSB 2.1.4)."""
    head = bytearray()
    for value, width in ((kind, 2), (len(data), 4)):
        for _ in range(width):
            byte, value = value & 0x7F, value >> 7
            head.append(byte | (0x80 if value else 0))
            if not value:
                break
    return bytes(head) + data


def _wide(text: str) -> bytes:
    return struct.pack("<I", len(text)) + text.encode("utf-16-le")


def xlsb_with_cells(path: Path, cells: list[tuple[int, int, float]], sheet: str = "Bills") -> Path:
    """A minimal .xlsb (the records calamine reads: the workbook's sheet list, the sheet's rows
    and BrtCellReal cells at 0-based (row, column)), built by hand: no library writes .xlsb."""
    book = b"".join(
        [
            _xlsb_record(0x83),  # BrtBeginBook
            _xlsb_record(0x8F),  # BrtBeginBundleShs
            _xlsb_record(0x9C, struct.pack("<II", 0, 1) + _wide("rId1") + _wide(sheet)),
            _xlsb_record(0x90),  # BrtEndBundleShs
            _xlsb_record(0x84),  # BrtEndBook
        ]
    )
    rows: dict[int, list[tuple[int, float]]] = {}
    for row, col, value in cells:
        rows.setdefault(row, []).append((col, value))
    body = [
        _xlsb_record(0x81),  # BrtBeginSheet
        _xlsb_record(0x94, struct.pack("<IIII", 0, 0, 0, 0)),  # BrtWsDim (calamine needs one)
        _xlsb_record(0x91),  # BrtBeginSheetData
    ]
    for row in sorted(rows):
        body.append(_xlsb_record(0x00, struct.pack("<IIHHI", row, 0, 300, 0, 0)))  # BrtRowHdr
        for col, value in sorted(rows[row]):
            body.append(_xlsb_record(0x05, struct.pack("<IId", col, 0, value)))  # BrtCellReal
    body += [_xlsb_record(0x92), _xlsb_record(0x82)]  # BrtEndSheetData, BrtEndSheet
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
            'package/2006/content-types"><Default Extension="bin" ContentType="application/'
            'vnd.ms-excel.sheet.binary.macroEnabled.main"/></Types>',
        )
        z.writestr(
            "xl/_rels/workbook.bin.rels",
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
            'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
            f'Type="{rel}/worksheet" Target="worksheets/sheet1.bin"/></Relationships>',
        )
        z.writestr("xl/workbook.bin", book)
        z.writestr("xl/worksheets/sheet1.bin", b"".join(body))
    return path


_ODS_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
)


def ods_cell(value: object, repeat: int = 1) -> str:
    """An .ods cell as LibreOffice writes it: a value type, the value, its text."""
    times = f' table:number-columns-repeated="{repeat}"' if repeat > 1 else ""
    if isinstance(value, int | float):
        kind = f'office:value-type="float" office:value="{value}"'
    else:
        kind = 'office:value-type="string"'
    return f"<table:table-cell{times} {kind}><text:p>{value}</text:p></table:table-cell>"


def ods_with_rows(path: Path, rows: list[str], sheet: str = "Bills") -> Path:
    """An .ods whose sheet holds the given `<table:table-row>` elements, followed by the empty
    repeats LibreOffice writes after the last row (1,048,000 rows of 1,024 empty cells)."""
    tail = (
        '<table:table-row table:number-rows-repeated="1048000">'
        '<table:table-cell table:number-columns-repeated="1024"/></table:table-row>'
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODS_NS} '
        'office:version="1.2"><office:body><office:spreadsheet>'
        f'<table:table table:name="{sheet}">{"".join(rows)}{tail}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:'
        'names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry '
        'manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.'
        'spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" '
        'manifest:media-type="text/xml"/></manifest:manifest>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("META-INF/manifest.xml", manifest)
        z.writestr("content.xml", content)
    return path


def ods_row(cells: str, repeat: int = 1) -> str:
    times = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    return f"<table:table-row{times}>{cells}</table:table-row>"


def ods_repeat_bomb(path: Path, rows: int = 1_000_000, columns: int = 20) -> Path:
    """The bills header, then one row of `columns` numbers repeated `rows` times: 1.6 KB on disk,
    a grid of rows x columns cells in calamine (1.3 GB for 20 million)."""
    header = ods_row("".join(ods_cell(h) for h in HEADER))
    return ods_with_rows(path, [header, ods_row(ods_cell(1, columns), rows)])


def xls_with_cells(path: Path, cells: list[tuple[int, int, object]], sheets: int = 1) -> Path:
    """An .xls (BIFF8, written by xlwt) with the bills rows and one value at each 0-based
    (row, column) of `cells` on the first sheet; further sheets hold one cell each."""
    import xlwt

    book = xlwt.Workbook()
    first = book.add_sheet("Bills")
    for r, row in enumerate(ROWS):
        for c, value in enumerate(row):
            first.write(r, c, value)
    for r, c, value in cells:
        first.write(r, c, value)
    for k in range(1, sheets):
        book.add_sheet(f"Notes {k}").write(0, 0, "note")
    book.save(str(path))
    return path


def compound_file_with_small_stream(path: Path, workbook: bytes) -> Path:
    """An OLE2 compound file (512-byte sectors) holding `workbook` (under 4,096 bytes) as its
    "Workbook" stream in the mini stream, as writers store small streams; xlwt always writes a
    stream of at least 4,096 bytes, so this is built by hand (MS-CFB 2.2-2.6)."""
    assert len(workbook) < 4096
    mini = workbook + b"\0" * (-len(workbook) % 64)
    mini_sectors = len(mini) // 64
    container = mini + b"\0" * (-len(mini) % 512)
    container_sectors = len(container) // 512
    # sectors: 0 FAT, 1 directory, 2 mini FAT, 3.. the mini stream's container
    end, free, fat_mark = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD
    fat = [fat_mark, end, end] + [3 + k + 1 for k in range(container_sectors - 1)] + [end]
    fat += [free] * (128 - len(fat))
    minifat = [k + 1 for k in range(mini_sectors - 1)] + [end]
    minifat += [free] * (128 - len(minifat))

    def entry(name: str, kind: int, start: int, size: int, child: int = free) -> bytes:
        raw = name.encode("utf-16-le") + b"\0\0"
        return (
            raw.ljust(64, b"\0")
            + struct.pack("<HBB", len(raw), kind, 1)
            + struct.pack("<III", free, free, child)
            + b"\0" * 16  # class id
            + b"\0" * 4  # state bits
            + b"\0" * 16  # times
            + struct.pack("<IQ", start, size)
        )

    directory = (
        entry("Root Entry", 5, 3, len(mini), child=1)
        + entry("Workbook", 2, 0, len(workbook))
        + b"\0" * 256
    )
    header = (
        bytes.fromhex("D0CF11E0A1B11AE1")
        + b"\0" * 16
        + struct.pack("<HHHH", 0x3E, 3, 0xFFFE, 9)
        + struct.pack("<H", 6)
        + b"\0" * 6
        + struct.pack("<IIIIIIIII", 0, 1, 1, 0, 4096, 2, 1, end, 0)
    )
    header += struct.pack("<I", 0) + struct.pack("<108I", *([free] * 108))
    body = struct.pack("<128I", *fat) + directory + struct.pack("<128I", *minifat) + container
    path.write_bytes(header + body)
    return path


def cells_without_references(path: Path) -> Path:
    """The bills, then a row of 100 cells without their `r` attribute (placed one after the other,
    as streaming writers may emit them) and one cell at row 900,000: 2.8 GB of grid in calamine."""
    plain = _plain_workbook(path.with_suffix(".plain.xlsx"))
    extra = (
        b"<row>" + b"<c><v>1</v></c>" * 100 + b"</row>"
        b'<row r="900000"><c r="A900000"><v>1</v></c></row>'
    )
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("sheet1.xml"):
                data = data.replace(b"</sheetData>", extra + b"</sheetData>")
            out.writestr(item, data)
    plain.unlink()
    return path
