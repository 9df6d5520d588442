"""Hostile files of issue 33 item 7, built at run time from a fixed seed: small on disk, costly to
read. Shared by tests/ingest/test_bounded_input.py and bench/bench_hostile.py; every size is a
parameter, so CI builds them small and the bench at the issue's sizes."""

from __future__ import annotations

import random
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


def garbage_csv(path: Path, rows: int = 1_000_000, seed: int = 7, by_id: bool = False) -> Path:
    """A bills header, then `rows` rows of random tokens: every meter reference distinct, no
    date or number readable (the issue's "1M rows of garbage"). `by_id`: the long_csv template's
    header (meters by id); otherwise utility_service_period's (meters by external reference)."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    width = 10
    head = (
        HEADER if by_id else ["Meter Number", "Service Start", "Service End", "Usage", "Usage Unit"]
    )
    with open(path, "wb") as fh:
        fh.write((",".join(head) + "\n").encode())
        done = 0
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
