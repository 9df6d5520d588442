"""Hostile workbooks (issue 14 item 7): a small .xlsx whose parts inflate to hundreds of MB is
refused from the zip directory before any parser runs, and sheets stop at a row and cell cap.
The bombs are built at run time: small on disk, huge when inflated."""

from __future__ import annotations

import tracemalloc
import zipfile
from pathlib import Path

import pytest

from bpsync.ingest.problems import IngestError
from bpsync.ingest.readers import list_sheets, read_xlsx
from tests.ingest.conftest import write_xlsx

ROWS = [["Meter ID", "Start Date", "End Date", "Consumption", "Unit"]] + [
    ["M1", f"2024-{m:02d}-01", f"2024-{m:02d}-28", 100 + m, "kWh"] for m in range(1, 11)
]


def bomb(path: Path, inflated_mb: int = 200) -> Path:
    """A real workbook whose shared strings part is replaced by `inflated_mb` MB of one repeated
    string (what the issue's 1.2 MB file did with 510 MB), written in 1 MB pieces."""
    plain = write_xlsx(path.with_suffix(".plain.xlsx"), {"Bills": ROWS})
    piece = ("<si><t>" + "A" * 1000 + "</t></si>").encode() * 1000
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            if item.filename == "xl/sharedStrings.xml":
                continue
            out.writestr(item, src.read(item))
        with out.open("xl/sharedStrings.xml", "w") as part:
            part.write(b'<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/')
            part.write(b'spreadsheetml/2006/main">')
            for _ in range(inflated_mb):
                part.write(piece)
            part.write(b"</sst>")
    return path


def test_a_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = bomb(tmp_path / "bills.xlsx")
    assert path.stat().st_size < 2_000_000
    tracemalloc.start()
    try:
        for read in (lambda: read_xlsx(path), lambda: list_sheets(path)):
            with pytest.raises(IngestError) as caught:
                read()
            assert caught.value.code == "file_too_large"
            message = str(caught.value)
            assert "bills.xlsx" in message and "xl/sharedStrings.xml" in message
            assert "BPSYNC_XLSX_MAX_RATIO" in message and "Nothing was imported" in message
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000  # the 200 MB part was never inflated


def test_total_size_limit_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = write_xlsx(tmp_path / "bills.xlsx", {"Bills": ROWS})
    assert read_xlsx(path).sheet == "Bills"
    monkeypatch.setenv("BPSYNC_XLSX_MAX_BYTES", "2000")
    with pytest.raises(IngestError, match="BPSYNC_XLSX_MAX_BYTES") as caught:
        read_xlsx(path)
    assert caught.value.code == "file_too_large"
    monkeypatch.setenv("BPSYNC_XLSX_MAX_BYTES", "lots")
    with pytest.raises(IngestError, match="not a number"):
        read_xlsx(path)


def test_rows_and_cells_per_sheet_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = write_xlsx(tmp_path / "bills.xlsx", {"Bills": ROWS})
    monkeypatch.setenv("BPSYNC_SHEET_MAX_ROWS", "6")
    with pytest.raises(IngestError, match="more than 6 rows") as caught:
        list(read_xlsx(path).rows())
    assert (caught.value.where.sheet, caught.value.where.row) == ("Bills", 7)
    monkeypatch.delenv("BPSYNC_SHEET_MAX_ROWS")
    monkeypatch.setenv("BPSYNC_SHEET_MAX_CELLS", "30")
    with pytest.raises(IngestError, match="more than 30 cells"):
        list(read_xlsx(path).rows())
