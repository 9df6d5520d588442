"""`bpsync import` of a file whose name is not valid UTF-8 (Python names it with surrogate
escapes): the journal keeps the name losslessly, the summary prints it readably, the reject
report sits beside it under the same bytes. The real service over loopback HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import Workbook
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.ingest.send.journal import Journal
from tests.conftest import Org, Service, make_org


@pytest.fixture
def org(service: Service, monkeypatch: pytest.MonkeyPatch) -> Org:
    made = make_org(service, meters=1)
    monkeypatch.setenv("BPSYNC_API_KEY", made.key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    return made


def test_a_workbook_whose_name_is_not_utf8_imports(
    service: Service, org: Org, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / os.fsdecode(b"bills-\xff.xlsx")
    wb = Workbook()
    ws = wb.active
    ws.append(["Meter ID", "Start Date", "End Date", "Consumption", "Unit"])
    ws.append([org.meters[0], "2024-05-01", "2024-05-31", "50", "kWh"])
    ws.append([org.meters[0], "2024-06-01", "not a date", "60", "kWh"])
    wb.save(path)
    result = CliRunner().invoke(app, ["import", str(path)], catch_exceptions=False)
    assert result.exit_code == 13, result.output
    assert "Import of bills-\\xff.xlsx" in result.stdout
    assert sorted(os.listdir(os.fsencode(folder))) == [
        b"bills-\xff.rejects.xlsx",
        b"bills-\xff.xlsx",
    ]
    with service.client(org.key) as api:
        body = api.get(f"/v1/buildings/{org.building}/meters/{org.meters[0]}/readings").json()
    assert [(r["start_date"], r["end_date"], r["consumption"]) for r in body["data"]] == [
        ("2024-05-01", "2024-05-31", 50.0)
    ]
    with Journal() as journal:
        record = journal.get(1)
    assert (record.file_name, record.file_path) == (path.name, str(path))
    # the same content again: the journal finds it, nothing is sent twice
    again = CliRunner().invoke(app, ["import", str(path)], catch_exceptions=False)
    assert again.exit_code == 13, again.output
    assert "skipped" in again.stdout


def test_json_output_names_a_file_that_is_not_utf8_with_escapes(
    service: Service, org: Org, tmp_path: Path
) -> None:
    """`--json` writes such a name as JSON's \\udcff escape (which reads back as the same name)
    instead of failing to encode the summary on a UTF-8 standard output."""
    path = tmp_path / os.fsdecode(b"bills-\xfe.csv")
    path.write_text(
        f"Meter ID,Start Date,End Date,Consumption,Unit\n{org.meters[0]},2024-05-01,2024-05-31,50,kWh\n"
    )
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [sys.executable, "-m", "bpsync", "import", os.fsencode(path), "--json"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b'"file": "bills-\\udcfe.csv"' in done.stdout
    summary = json.loads(done.stdout)
    assert (summary["file"], summary["accepted"]) == (path.name, 1)
    with service.client(org.key) as api:
        body = api.get(f"/v1/buildings/{org.building}/meters/{org.meters[0]}/readings").json()
    assert [(r["start_date"], r["end_date"], r["consumption"]) for r in body["data"]] == [
        ("2024-05-01", "2024-05-31", 50.0)
    ]
