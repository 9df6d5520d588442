"""Reject reports carry the source's cells, which may be hostile: a workbook's text cell
`=cmd|' /C calc'!A0` must not become a live formula in `.rejects.xlsx`, and `.rejects.csv` must
not hand a spreadsheet program a cell it evaluates. A report read back gives the original values,
so a fixed row imports exactly. `bpsync import` against the real service over loopback HTTP."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest
from openpyxl import Workbook, load_workbook
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.ingest.send.results import RejectedRow, write_reject_report
from tests.conftest import Org, Service, make_org

CMD = "=cmd|' /C calc'!A0"
LINK = '=HYPERLINK("http://evil.example/x","click")'
HEADER = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit", "Cost", "Notes"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def org(service: Service, monkeypatch: pytest.MonkeyPatch) -> Org:
    made = make_org(service, meters=2)
    monkeypatch.setenv("BPSYNC_API_KEY", made.key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    return made


def rows(org: Org) -> list[list[str]]:
    """One good row, then two refused locally (an end date that is no date) whose other cells
    are formula-like text, a negative cost with a currency sign and a plain negative number."""
    m0, m1 = org.meters
    return [
        [m0, "2024-05-01", "2024-05-31", "50", "kWh", "12.5", "fine"],
        [m0, "2024-06-01", "not a date", "60", "kWh", "-$5.00", CMD],
        [m1, "2024-06-01", "end of June", "70", "kWh", "-7", LINK],
        [m1, "2024-07-01", "31 July", "80", "kWh", "8", "@SUM(1+1)*cmd|' /C calc'!A0"],
    ]


def stored(service: Service, org: Org) -> list[tuple[str, str, str, float, float | None]]:
    out = []
    with service.client(org.key) as api:
        for m in org.meters:
            body = api.get(
                f"/v1/buildings/{org.building}/meters/{m}/readings", params={"per_page": 200}
            ).json()
            out += [
                (m, r["start_date"], r["end_date"], r["consumption"], r["cost"])
                for r in body["data"]
            ]
    return sorted(out)


def read_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f))


def test_csv_reject_report_neutralises_formulas_and_reads_back_exactly(
    service: Service, org: Org, tmp_path: Path
) -> None:
    source = rows(org)
    path = tmp_path / "june.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([HEADER, *source])
    result = invoke("--json", "import", str(path))
    assert result.exit_code == 13, result.output
    report = Path(json.loads(result.stdout)["reject_report"])
    assert report == tmp_path / "june.rejects.csv"
    header, *body = read_csv(report)
    assert header == [*HEADER, "Reason"]
    # Every cell a spreadsheet program would evaluate gets a leading "'" (the service's rule);
    # plain numbers ("-7") are numbers, not formulas, and stay as they are.
    assert [line[:-1] for line in body] == [
        [*source[1][:5], "'-$5.00", "'" + CMD],
        [*source[2][:6], "'" + LINK],
        [*source[3][:6], "'@SUM(1+1)*cmd|' /C calc'!A0"],
    ]
    assert not any(cell.startswith(("=", "+", "@")) for line in body for cell in line)
    assert [cell for line in body for cell in line if cell.startswith("-")] == ["-7"]

    # The user fixes the end dates in the report and imports it: the values are the source's.
    fixed = tmp_path / "june fixed.csv"
    body[0][2], body[1][2], body[2][2] = "2024-06-30", "2024-06-30", "2024-07-31"
    with fixed.open("w", encoding="utf-8-sig", newline="") as f:
        csv.writer(f).writerows([header, *body])
    again = invoke("--json", "import", str(fixed))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["accepted"] == 3
    m0, m1 = org.meters
    assert stored(service, org) == sorted(
        [
            (m0, "2024-05-01", "2024-05-31", 50.0, 12.5),
            (m0, "2024-06-01", "2024-06-30", 60.0, -5.0),
            (m1, "2024-06-01", "2024-06-30", 70.0, -7.0),
            (m1, "2024-07-01", "2024-07-31", 80.0, 8.0),
        ]
    )


def test_a_rejects_csv_imported_again_keeps_every_cell(
    service: Service, org: Org, tmp_path: Path
) -> None:
    """A report imported as it is (nothing fixed) gives a report with the same cells: reading
    it back and writing it again is exact, even for a cell that began with "'" in the source."""
    source = rows(org)
    source[1][6] = "'-already quoted"
    path = tmp_path / "june.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([HEADER, *source])
    assert invoke("import", str(path)).exit_code == 13
    first = read_csv(tmp_path / "june.rejects.csv")
    assert first[1][6] == "''-already quoted"
    again = tmp_path / "june.rejects.csv"
    copy = tmp_path / "retry.csv"
    copy.write_bytes(again.read_bytes())
    assert invoke("import", str(copy)).exit_code == 13
    second = read_csv(tmp_path / "retry.rejects.csv")
    assert second[0] == first[0] == [*HEADER, "Reason"]  # one Reason column: the new one
    assert [line[:-1] for line in second] == [line[:-1] for line in first]
    # the same reasons, for the report's own row numbers
    assert [line[-1].split(": ", 1)[1] for line in second[1:]] == [
        line[-1].split(": ", 1)[1] for line in first[1:]
    ]
    assert [line[-1].split(":")[0] for line in second[1:]] == ["row 2", "row 3", "row 4"]


def test_xlsx_reject_report_holds_formula_like_text_as_string_cells(
    service: Service, org: Org, tmp_path: Path
) -> None:
    source = rows(org)
    path = tmp_path / "june.xlsx"
    wb = Workbook()
    ws = wb.active
    for line in [HEADER, *source]:
        ws.append(line)
        for cell in ws[ws.max_row]:
            cell.data_type = "s"  # text cells in the source, as the workbook has them
    wb.save(path)
    result = invoke("--json", "import", str(path))
    assert result.exit_code == 13, result.output
    report = Path(json.loads(result.stdout)["reject_report"])
    assert report == tmp_path / "june.rejects.xlsx"
    with zipfile.ZipFile(report) as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in sheet and "<f " not in sheet
    got = load_workbook(report)
    cells = [list(r) for r in got.active.iter_rows(min_row=2)]
    assert [[c.value for c in r[:7]] for r in cells] == [r for r in source[1:]]
    assert all(c.data_type == "s" for r in cells for c in r if c.value is not None)

    # The report imported again, its dates fixed: stored exactly as the source said.
    for r, end in zip(cells, ("2024-06-30", "2024-06-30", "2024-07-31"), strict=True):
        r[2].value = end
    fixed = tmp_path / "june fixed.xlsx"
    got.save(fixed)
    again = invoke("--json", "import", str(fixed))
    assert again.exit_code == 0, again.output
    m0, m1 = org.meters
    assert stored(service, org) == sorted(
        [
            (m0, "2024-05-01", "2024-05-31", 50.0, 12.5),
            (m0, "2024-06-01", "2024-06-30", 60.0, -5.0),
            (m1, "2024-06-01", "2024-06-30", 70.0, -7.0),
            (m1, "2024-07-01", "2024-07-31", 80.0, 8.0),
        ]
    )


def test_a_report_of_a_report_has_one_reason_column_but_a_sources_own_is_kept(
    tmp_path: Path,
) -> None:
    old = RejectedRow(2, ("m1", "2024-01-01", "row 7: end date is not a date"), ["meter unknown"])
    out = write_reject_report(tmp_path / "a.rejects.csv", ["Meter", "Start", "Reason"], [old])
    assert read_csv(out) == [
        ["Meter", "Start", "Reason"],
        ["m1", "2024-01-01", "row 2: meter unknown"],
    ]
    # a bill file whose own last column is called "Reason" keeps it
    own = RejectedRow(3, ("m1", "2024-01-01", "estimated read"), ["meter unknown"])
    out = write_reject_report(tmp_path / "b.rejects.csv", ["Meter", "Start", "Reason"], [own])
    assert read_csv(out) == [
        ["Meter", "Start", "Reason", "Reason"],
        ["m1", "2024-01-01", "estimated read", "row 3: meter unknown"],
    ]
