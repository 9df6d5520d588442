"""Helpers for the import engine's tests: files are generated in tmp dirs, never checked in."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import Workbook

from bpsync.paths import package_dir

SAMPLES = package_dir("sample_data")


def write_xlsx(
    path: Path, sheets: dict[str, list[list[object]]], hidden: tuple[str, ...] = ()
) -> Path:
    wb = Workbook()
    wb.remove(wb.active)
    for title, rows in sheets.items():
        ws = wb.create_sheet(title)
        for row in rows:
            ws.append(row)
        if title in hidden:
            ws.sheet_state = "hidden"
    wb.save(path)
    return path


@pytest.fixture
def xlsx(tmp_path: Path):
    def make(
        sheets: dict[str, list[list[object]]], hidden: tuple[str, ...] = (), name: str = "book.xlsx"
    ) -> Path:
        return write_xlsx(tmp_path / name, sheets, hidden)

    return make


@pytest.fixture
def csv_file(tmp_path: Path):
    def make(text: str, encoding: str = "utf-8", name: str = "data.csv") -> Path:
        path = tmp_path / name
        path.write_bytes(text.encode(encoding))
        return path

    return make
