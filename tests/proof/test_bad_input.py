"""Broken files through `bpsync.ingest`: each ends in an IngestError whose message says what is
wrong (asserted on the text), never a traceback. Then property tests for the gaps of
tests/ingest/test_properties.py: formulas and merged cells in workbooks."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import Workbook

from bpsync.ingest import IngestError, Problem, check_file, prepare
from bpsync.ingest.understand.templates import template_from_dict
from tests.proof.conftest import FULL

HEADER = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit"]
ROWS = [
    ["mtr_1", "2024-01-01", "2024-01-31", 1200, "kWh"],
    ["mtr_1", "2024-02-01", "2024-02-29", 900, "kWh"],
]
TEMPLATE = template_from_dict(
    {
        "name": "proof",
        "date_order": "DMY",
        "meter": {"by": "meter_id", "column": "Meter ID"},
        "columns": {
            "start_date": "Start Date",
            "end_date": "End Date",
            "consumption": "Consumption",
            "unit": "Unit",
        },
    }
)
# 20 MB of blank lines in CI, 1 GB with BPSYNC_PROOF_FULL=1 (written in 1 MiB chunks).
BLANK_BYTES = (1 << 30) if FULL else 20 * (1 << 20)


def good_workbook(path: Path, sheet: str = "Bills") -> Path:
    wb = Workbook()
    ws = wb.active
    ws.title = sheet
    ws.append(HEADER)
    for row in ROWS:
        ws.append(row)
    wb.save(path)
    return path


def refusal(path: Path, **options: object) -> str:
    """The message of the IngestError that reading `path` raises (any other exception fails)."""
    with pytest.raises(IngestError) as err:
        prepare(path, "auto", **options)  # type: ignore[arg-type]
    message = str(err.value)
    assert "Traceback" not in message and path.name in message
    return message


def test_truncated_xlsx(tmp_path: Path) -> None:
    whole = good_workbook(tmp_path / "whole.xlsx").read_bytes()
    path = tmp_path / "truncated.xlsx"
    path.write_bytes(whole[: len(whole) // 2])
    assert "not a readable .xlsx workbook" in refusal(path)


def test_xlsx_with_a_corrupt_member(tmp_path: Path) -> None:
    source = good_workbook(tmp_path / "whole.xlsx")
    path = tmp_path / "corrupt.xlsx"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("sheet1.xml"):
                data = data[: len(data) // 3]  # cut in the middle of the XML
            dst.writestr(item, data)
    message = refusal(path)
    assert "not a readable .xlsx workbook" in message or "could not be read" in message


def test_xlsx_that_is_really_csv(tmp_path: Path) -> None:
    path = tmp_path / "export.xlsx"
    path.write_text(",".join(HEADER) + "\nmtr_1,2024-01-01,2024-01-31,1200,kWh\n")
    assert "not a readable .xlsx workbook" in refusal(path)


@pytest.mark.parametrize("name", ["junk.csv", "junk.txt"])
def test_binary_junk(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 64)
    assert "binary file, not CSV" in refusal(path)


def test_binary_junk_named_xlsx(tmp_path: Path) -> None:
    path = tmp_path / "junk.xlsx"
    path.write_bytes(os.urandom(4096))
    assert "not a readable .xlsx workbook" in refusal(path)


@pytest.mark.parametrize("name", ["empty.csv", "empty.xlsx"])
def test_zero_bytes(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    message = refusal(path)
    assert "the file is empty" in message or "not a readable .xlsx workbook" in message


def _blank_lines(path: Path, size: int, header: bytes = b"") -> None:
    chunk = b"\n" * (1 << 20)
    with path.open("wb") as out:
        out.write(header)
        for _ in range(size // len(chunk)):
            out.write(chunk)


def test_a_huge_file_of_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "blank.csv"
    _blank_lines(path, BLANK_BYTES)
    assert path.stat().st_size >= BLANK_BYTES
    assert "the file is empty" in refusal(path)


def test_a_header_then_a_huge_run_of_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "header_then_blank.csv"
    # Every blank line is read here (the header promises data), so CI uses 5 MB.
    _blank_lines(path, BLANK_BYTES if FULL else 5 << 20, header=(",".join(HEADER) + "\n").encode())
    try:
        _, result = check_file(path, TEMPLATE)
    except IngestError as exc:
        assert "header_then_blank.csv" in str(exc)
    else:
        assert list(result.all_candidates()) == []


def test_the_wrong_sheet(tmp_path: Path) -> None:
    path = good_workbook(tmp_path / "bills.xlsx", sheet="Bills")
    message = refusal(path, sheet="Readings")
    assert "no sheet named 'Readings'" in message and "Bills" in message


def test_a_sheet_without_recognisable_columns(tmp_path: Path) -> None:
    wb = Workbook()
    wb.active.title = "Notes"
    wb.active.append(["Just", "some", "notes"])
    wb.active.append(["a", "b", "c"])
    path = tmp_path / "notes.xlsx"
    wb.save(path)
    message = refusal(path)
    assert "no template matches" in message or "no sheet" in message


def test_the_good_file_is_read(tmp_path: Path) -> None:
    # The corpus's starting point really is importable, so the refusals above are about damage.
    path = good_workbook(tmp_path / "good.xlsx")
    _, result = check_file(path, TEMPLATE)
    assert len(list(result.all_candidates())) + len(result.problems) >= len(ROWS)


# --- property tests: formulas and merged cells ----------------------------------------------------

cell = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.sampled_from(["", "N/A", "=1/0", "=SUM(D2:D3)", "=D2*2", "#REF!", "12,5", "1 200"]),
)


@st.composite
def workbooks(draw: st.DrawFn) -> tuple[bytes, int]:
    """A bills sheet whose cells may be formulas (no cached values, as openpyxl writes them) and
    whose ranges may be merged, vertically over rows or across the columns."""
    rows = draw(st.integers(min_value=1, max_value=15))
    wb = Workbook()
    ws = wb.active
    ws.title = "Bills"
    ws.append(HEADER)
    for i in range(rows):
        month = i % 12 + 1
        year = 2020 + i // 12
        start = draw(st.sampled_from([f"{year}-{month:02d}-01", "=TODAY()", "", "not a date"]))
        ws.append(
            [
                draw(st.sampled_from(["mtr_1", "mtr_2", "=A2", ""])),
                start,
                f"{year}-{month:02d}-28",
                draw(cell),
                draw(st.sampled_from(["kWh", "therms", "=E2", ""])),
            ]
        )
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        top = draw(st.integers(min_value=1, max_value=rows + 1))
        left = draw(st.integers(min_value=1, max_value=5))
        bottom = draw(st.integers(min_value=top, max_value=min(rows + 1, top + 3)))
        right = draw(st.integers(min_value=left, max_value=min(5, left + 2)))
        if (top, left) != (bottom, right):
            with contextlib.suppress(ValueError):  # overlaps an earlier merge
                ws.merge_cells(start_row=top, start_column=left, end_row=bottom, end_column=right)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue(), rows


@settings(
    max_examples=40 if not FULL else 300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(workbooks())
def test_formulas_and_merged_cells_end_in_readings_or_row_problems(book: tuple[bytes, int]) -> None:
    data, rows = book
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bills.xlsx"
        path.write_bytes(data)
        try:
            _, result = check_file(path, TEMPLATE)
        except IngestError as exc:
            assert str(exc) and "bills.xlsx" in str(exc)  # a whole-sheet refusal, with a reason
            return
    data_rows = set(range(2, rows + 2))
    seen = {p.row for p in result.problems if p.row is not None}
    seen |= {c.row for c in result.all_candidates()}
    assert seen <= data_rows
    for problem in result.problems:
        assert isinstance(problem, Problem) and problem.reason
    for candidate in result.all_candidates():
        assert candidate.end >= candidate.start and abs(candidate.consumption) <= 1e15
