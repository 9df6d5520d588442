"""Multi-sheet workbooks (issue 11 item 6): every visible sheet is scored against the templates and
the best is taken; when none fits, each sheet is listed with the columns found in it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError, check_file
from tests.ingest.conftest import write_xlsx
from tests.ingest.fidelity.fixtures import pm


def test_pm_export_workbook_reads_meter_entries_not_meters(tmp_path: Path):
    """A PM export with Properties, Meters, Meter Entries: the Meters sheet names several known
    columns (Portfolio Manager Meter ID, Meter Type, Usage Units) but only Meter Entries fits."""
    e, kwh = pm.ELEC, pm.KWH
    path = pm.meter_entries_export(
        tmp_path / "export.xlsx",
        [[*e, dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 31), 10, kwh, 1, "No"]],
    )
    prepared, result = check_file(path)
    assert (prepared.table.sheet, prepared.template.name) == (
        "Meter Entries",
        "pm_meter_entries_export",
    )
    assert [
        (c.start, c.end, c.consumption) for m in result.meters() for c in result.candidates(m)
    ] == [(dt.date(2024, 1, 1), dt.date(2024, 1, 31), 10.0)]


def test_no_sheet_fits_lists_what_each_holds(tmp_path: Path):
    path = write_xlsx(
        tmp_path / "book.xlsx",
        {
            "Read me": [["This workbook holds our portfolio"]],
            "Sites": [["Site", "Address"], ["A", "1 Road"]],
            "Staff": [["Name", "Phone"], ["Bo", "123"]],
        },
    )
    with pytest.raises(IngestError) as err:
        check_file(path)
    message = err.value.message
    assert "no sheet of this workbook fits a template" in message
    assert "sheet 'Sites': 'Site', 'Address'" in message
    assert "sheet 'Staff': 'Name', 'Phone'" in message
