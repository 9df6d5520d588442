"""The sheet guard run ahead in a child process (`readers/sheet_precheck.py`): a sheet the child
found within the limits is not read for its extent again; anything else (a refusal, a changed
file, other limits, a child that failed) falls back to the parent's own check, so the guard
refuses exactly what it refused before, with its own message."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import pytest

from bpsync.ingest.problems import IngestError
from bpsync.ingest.readers import sheet_precheck
from bpsync.ingest.readers import xlsx as xlsx_reader
from bpsync.ingest.readers.xlsx import read_xlsx
from tests.ingest import hostile_shapes as shapes

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the child is forked on Linux")
SHEET = "xl/worksheets/sheet1.xml"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sheet_precheck, "_pending", {})
    monkeypatch.setattr(sheet_precheck, "_verdicts", {})
    monkeypatch.setattr(xlsx_reader, "_cached", None)


def _guard_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = xlsx_reader.check_sheet_extent

    def counted(z, member, name, sheet, limits=None):  # type: ignore[no-untyped-def]
        calls.append(member)
        return real(z, member, name, sheet, limits)

    monkeypatch.setattr(xlsx_reader, "check_sheet_extent", counted)
    return calls


def test_a_sheet_the_child_checked_is_not_read_for_its_extent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shapes._plain_workbook(tmp_path / "bills.xlsx")
    calls = _guard_calls(monkeypatch)
    assert sheet_precheck.start(path)
    assert read_xlsx(path).sheet == "Bills"
    assert calls == []  # the child's verdict was taken
    assert sheet_precheck.verdict(path, SHEET) == (True, False)  # within limits, no error cells
    assert sheet_precheck._pending == {}  # the child was reaped


def test_error_cells_seen_by_the_child_are_still_read(tmp_path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Bills"
    ws.append(["Meter ID", "Start Date", "End Date", "Consumption", "Cost"])
    ws.append(["mtr_1", "2024-01-01", "2024-01-31", "#DIV/0!", 12.5])
    path = tmp_path / "errors.xlsx"
    wb.save(path)
    assert b't="e"' in zipfile.ZipFile(path).read(SHEET)
    assert sheet_precheck.start(path)
    table = read_xlsx(path)
    assert [r.cells[3:] for r in table.rows()] == [("#DIV/0!", 12.5)]
    assert sheet_precheck.verdict(path, SHEET) == (True, True)


def test_a_sheet_the_child_refused_is_refused_by_the_parent_in_the_guard_s_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shapes.far_cell(tmp_path / "bills.xlsx", "AZ40000")  # 52 x 40,000 cells
    monkeypatch.setenv("BPSYNC_SHEET_MAX_CELLS", "1_000_000")
    calls = _guard_calls(monkeypatch)
    assert sheet_precheck.start(path)
    with pytest.raises(IngestError) as caught:
        read_xlsx(path)
    assert sheet_precheck.verdict(path, SHEET) == (False, True)
    assert calls == [SHEET]  # the parent checked it itself
    assert caught.value.code == "file_too_large"
    assert "reaches row 40,000 and column 52" in str(caught.value)


def test_other_limits_or_another_file_than_the_child_checked_are_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shapes.far_cell(tmp_path / "bills.xlsx", "AZ40000")
    assert sheet_precheck.start(path)  # under the default limits: within them
    monkeypatch.setenv("BPSYNC_SHEET_MAX_CELLS", "1_000_000")  # the import's limits differ
    assert sheet_precheck.verdict(path, SHEET) is None
    with pytest.raises(IngestError, match="reaches row 40,000"):
        read_xlsx(path)
    monkeypatch.delenv("BPSYNC_SHEET_MAX_CELLS")
    changed = shapes._plain_workbook(tmp_path / "changed.xlsx")
    assert sheet_precheck.start(changed)
    os.utime(changed, ns=(1, 1))  # the file changed after the child looked at it
    assert sheet_precheck.verdict(changed, SHEET) is None


def test_a_child_that_fails_leaves_the_check_to_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bills.xlsx"
    path.write_bytes(b"not a zip at all")
    assert sheet_precheck.start(path)
    assert sheet_precheck.verdict(path, SHEET) is None  # the child exited 1: no verdict
    assert sheet_precheck._pending == {}


def test_only_xlsx_files_start_a_child(tmp_path: Path) -> None:
    csv = tmp_path / "bills.csv"
    csv.write_text("Meter ID,Usage\nm1,1\n")
    assert not sheet_precheck.start(csv)
    assert not sheet_precheck.start(tmp_path / "missing.xlsx")
