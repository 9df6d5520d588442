"""Rows the service refuses after they passed the local checks (a reading in a locked period,
decisions D23): `bpsync import` as a user runs it, against the real service over loopback HTTP.
The reject report is written with the service's reason, the command exits 13, the other rows are
stored exactly once, and a later `--resume` is clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.ingest.send.journal import Journal
from tests.conftest import Org, Service, make_org

LOCKED = "The building's readings are locked through 2024-01-31"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def locked_org(service: Service, monkeypatch: pytest.MonkeyPatch) -> Org:
    """One building with one meter, its readings locked through January 2024."""
    org = make_org(service, meters=1)
    monkeypatch.setenv("BPSYNC_API_KEY", org.key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    with service.client(org.key) as api:
        r = api.post(f"/v1/buildings/{org.building}/lock", json={"locked_through": "2024-01-31"})
        assert r.status_code == 200, r.text
    return org


def bills(folder: Path, meter: str) -> Path:
    """Three monthly bills; January's falls in the locked period (only the service knows)."""
    path = folder / "bills.csv"
    path.write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        f"{meter},2024-01-01,2024-01-31,100,kWh\n"
        f"{meter},2024-02-01,2024-02-29,200,kWh\n"
        f"{meter},2024-03-01,2024-03-31,300,kWh\n",
        encoding="utf-8",
    )
    return path


def stored(service: Service, org: Org) -> list[tuple[str, str, float]]:
    with service.client(org.key) as api:
        body = api.get(
            f"/v1/buildings/{org.building}/meters/{org.meters[0]}/readings",
            params={"per_page": 200},
        ).json()
    return [(r["start_date"], r["end_date"], r["consumption"]) for r in body["data"]]


STORED = [("2024-02-01", "2024-02-29", 200.0), ("2024-03-01", "2024-03-31", 300.0)]


def rejects_of(path: Path) -> list[str]:
    return path.with_name("bills.rejects.csv").read_text(encoding="utf-8-sig").splitlines()


def test_a_row_the_service_refuses_goes_to_the_reject_report_with_exit_13(
    service: Service, locked_org: Org, tmp_path: Path
) -> None:
    meter = locked_org.meters[0]
    path = bills(tmp_path, meter)
    result = invoke("--json", "import", str(path))
    assert result.exit_code == 13, result.output
    body = json.loads(result.stdout)
    assert (body["status"], body["accepted"], body["rejected"]) == ("complete", 2, 1)
    assert body["reject_report"] == str(path.with_name("bills.rejects.csv"))
    header, *rows = rejects_of(path)
    assert header == "Meter ID,Start Date,End Date,Consumption,Unit,Reason"
    assert len(rows) == 1
    assert rows[0].startswith(f"{meter},2024-01-01,2024-01-31,100,kWh,row 2: {LOCKED}")
    assert stored(service, locked_org) == STORED
    with Journal() as journal:
        record = journal.get(body["import_id"])
        assert record.status == "complete"

    # A later run (`--resume`, or the same command again) is clean: what is stored is not
    # sent again, the refused row is tried again and refused again, nothing is duplicated.
    again = invoke("--json", "import", str(path), "--resume")
    assert again.exit_code == 13, again.output
    body = json.loads(again.stdout)
    assert (body["accepted"], body["rejected"], body["skipped"]) == (0, 1, 2)
    assert body["skipped_by_reason"] == {"already_stored": 2}
    assert rejects_of(path)[1:] == rows
    assert stored(service, locked_org) == STORED


def test_an_import_left_open_by_a_failed_reject_report_resumes_cleanly(
    service: Service, locked_org: Org, tmp_path: Path
) -> None:
    """The journal as the crashing version left it (every row answered, the import still open,
    no report): `--resume` writes the report and completes, sending nothing."""
    path = bills(tmp_path, locked_org.meters[0])
    first = json.loads(invoke("--json", "import", str(path)).stdout)
    report = path.with_name("bills.rejects.csv")
    expected_rows = rejects_of(path)
    report.unlink()
    with Journal() as journal:
        journal.set_status(first["import_id"], "open")
        # the cells the report reads back from the file, as before the report was first written
        journal._db.execute("UPDATE rows SET row_values = NULL")
        sent_before = journal.request_count(first["import_id"])
    result = invoke("--json", "import", str(path), "--resume")
    assert result.exit_code == 13, result.output
    body = json.loads(result.stdout)
    assert body["import_id"] == first["import_id"] and body["status"] == "complete"
    assert (body["accepted"], body["rejected"], body["pending"]) == (2, 1, 0)
    assert rejects_of(path) == expected_rows
    with Journal() as journal:
        assert journal.request_count(first["import_id"]) == sent_before  # nothing re-sent
        assert journal.get(first["import_id"]).status == "complete"
    assert stored(service, locked_org) == STORED


def test_a_refused_row_with_a_named_template_keeps_its_cells(
    service: Service, locked_org: Org, tmp_path: Path
) -> None:
    """With `--template`, the journal keys the import on the template too: the report still
    finds the file's own cells for the row the service refused."""
    meter = locked_org.meters[0]
    path = bills(tmp_path, meter)
    result = invoke("--json", "import", str(path), "--template", "long_csv")
    assert result.exit_code == 13, result.output
    rows = rejects_of(path)[1:]
    reason = f"row 2: {LOCKED}; a reading starting 2024-01-01 falls in the locked period."
    assert rows == [f"{meter},2024-01-01,2024-01-31,100,kWh,{reason}"]
