"""US utility portal bill exports (set 1, files 11-15) imported with no template: the columns are
inferred from headers and values, and the stored bills are exactly the file's.

Expected readings are derived here with the csv module from each file's own layout (National
Grid and its "ngma" portal: START DATE / END DATE inclusive, USAGE in the UNITS or header unit,
COST in dollars; Eversource: a read or end date and the days it closes), not from bpsync."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from tests.real_inputs.conftest import Org, real_path


def _money(text: str) -> float | None:
    text = text.strip().replace("$", "").replace(",", "")
    return float(text) if text else None


def _date(text: str) -> dt.date:
    for fmt in ("%m/%d/%y", "%m/%d/%Y", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    raise ValueError(text)


def national_grid_bills(path: Path, usage_column: str) -> list[tuple]:
    """(start, end, usage, cost) of every 'Natural gas billing' row, both dates inclusive."""
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    header = next(i for i, r in enumerate(rows) if r[:1] == ["TYPE"])
    names = rows[header]
    out = []
    for r in rows[header + 1 :]:
        if not r or r[0] != "Natural gas billing":
            continue
        cell = dict(zip(names, r, strict=False))
        out.append(
            (
                _date(cell["START DATE"]),
                _date(cell["END DATE"]),
                float(cell[usage_column]),
                _money(cell["COST"]),
            )
        )
    return sorted(out)


def days_bills(rows: list[dict[str, str]], end: str, days: str, usage: str, cost: str) -> list:
    """Bills given by an end (or read) date and the days they close: start = end - days + 1."""
    out = []
    for r in rows:
        last = _date(r[end])
        out.append(
            (
                last - dt.timedelta(days=int(r[days]) - 1),
                last,
                float(r[usage].replace(",", "")),
                _money(r[cost]),
            )
        )
    return sorted(out)


def test_national_grid_two_digit_years_and_blank_lines(org: Org) -> None:
    """Title block (name, address, account) above the header, a blank line after every bill,
    m/d/yy dates, '$25.20 ' costs, an estimated bill flagged in NOTES, one missing bill."""
    expected = national_grid_bills(real_path("set1/national-grid.csv"), "USAGE")
    meter = org.meter("natural_gas", "therms", "Gas")
    body = org.import_json(str(org.copy("set1/national-grid.csv")), "--meter", meter)
    assert body["accepted"] == len(expected) == 86
    assert body["accounting"] == {
        "rows_read": 86,
        "with_readings": 86,
        "refused": 0,
        "skipped": {},
        "nothing_to_import": 0,
    }
    assert org.stored(meter) == expected


def test_national_grid_four_digit_years(org: Org) -> None:
    expected = national_grid_bills(real_path("set1/natural-gas-national-grid-yyyy.csv"), "USAGE")
    meter = org.meter("natural_gas", "therms", "Gas")
    path = org.copy("set1/natural-gas-national-grid-yyyy.csv")
    body = org.import_json(str(path), "--meter", meter)
    assert body["accepted"] == len(expected) == 4
    assert org.stored(meter) == expected


def test_ngma_portal_unit_in_the_header(org: Org) -> None:
    name = "set1/ngma_natural_gas_billing_billing_data_Service 1_1_2022-08-02_to_2025-08-01.csv"
    expected = national_grid_bills(real_path(name), "USAGE (therms)")
    meter = org.meter("natural_gas", "therms", "Gas")
    dry = org.bpsync("import", str(org.copy(name)), "--meter", meter, "--dry-run")
    assert dry.exit_code == 0, dry.output
    out = " ".join(dry.output.split())
    assert "unit: therms (from the header 'USAGE (therms)')" in out
    assert "Columns not used: 'TYPE', 'NOTES'" in out
    body = org.import_json(str(org.copy(name)), "--meter", meter)
    assert body["accepted"] == len(expected) == 32
    assert org.stored(meter) == expected


def test_eversource_two_usage_columns_the_meter_unit_decides(org: Org) -> None:
    """UTF-16 with tabs, every cell quoted, newest first, End Date + Days In Bill, a cumulative
    'Meter Read' column, and the usage twice: 'Usage (CCF)' and 'Usage (Therms)'. The meter is
    in therms, so the therms column is stored and the CCF one is said to be left out."""
    path = real_path("set1/eversource.csv")
    with path.open(encoding="utf-16", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    expected = days_bills(rows, "End Date", "Days In Bill", "Usage (Therms)", "Usage (Cost)")
    meter = org.meter("natural_gas", "therms", "Gas")
    copy = org.copy("set1/eversource.csv")
    dry = org.bpsync("import", str(copy), "--meter", meter, "--dry-run")
    out = " ".join(dry.output.split())
    assert dry.exit_code == 0, dry.output
    assert "'Usage (Therms)' is in the meter's unit (therms)" in out
    assert "'Usage (CCF)' states the same usage in another unit and is left out" in out
    assert "'Meter Read'" in out  # listed among the columns not used
    body = org.import_json(str(copy), "--meter", meter)
    assert body["accepted"] == len(expected) == 36
    assert org.stored(meter) == expected


def test_eversource_usage_in_neither_unit_is_refused_with_the_reason(org: Org) -> None:
    meter = org.meter("natural_gas", "m3", "Gas")
    result = org.bpsync("import", str(org.copy("set1/eversource.csv")), "--meter", meter)
    assert result.exit_code == 6
    out = " ".join(result.output.split())
    assert "'Usage (CCF)' and 'Usage (Therms)'; none is in the meter's unit (m3)" in out
    assert "templates suggest eversource.csv --save NAME" in out
    assert org.stored(meter) == []


def test_eversource_read_dates_and_days_with_cr_line_ends(org: Org) -> None:
    """Read Date + Number of Days, bare CR line ends, no unit anywhere (the meter's unit), a
    'Usage per day' and an 'Average Temperature' column that are not the usage."""
    path = real_path("set1/natural-gas-eversource.csv")
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    expected = days_bills(rows, "Read Date", "Number of Days", "Usage", "Charge")
    meter = org.meter("natural_gas", "therms", "Gas")
    copy = org.copy("set1/natural-gas-eversource.csv")
    dry = org.bpsync("import", str(copy), "--meter", meter, "--dry-run")
    out = " ".join(dry.output.split())
    assert "unit: none in the file, so each reading is in its meter's unit" in out
    assert "'Usage per day', 'Average Temperature'" in out
    body = org.import_json(str(copy), "--meter", meter)
    assert body["accepted"] == len(expected) == 36
    assert org.stored(meter) == expected


def fnsb_bills(path: Path) -> dict[str, list[tuple]]:
    """Set 2 file 9 by its PROVENANCE: one bill per service and From/Thru; the usage line's
    quantity (not the kW demand lines, whose Units are kW or blank with a demand item); Thru is
    the next bill's From, so the inclusive end is a day earlier; the cost is the sum of the
    bill's lines; the sewer service restates the water gallons and is not expected."""
    with path.open(encoding="utf-8-sig", newline="") as f:
        lines = list(csv.DictReader(f))
    bills: dict[tuple[str, str, str], dict] = {}
    for line in lines:
        key = (line["Service Name"], line["From"], line["Thru"])
        bill = bills.setdefault(key, {"usage": None, "cost": 0.0})
        bill["cost"] += float(line["Cost"] or 0)
        demand = line["Units"] == "kW" or (
            not line["Units"]
            and ("KW" in line["Item Description"] or "demand" in line["Item Description"])
        )
        if line["Usage"] and not demand:
            bill["usage"] = float(line["Usage"])
    out: dict[str, list[tuple]] = {}
    for (service, start, thru), bill in bills.items():
        if service == "Sewer" or bill["usage"] is None:
            continue
        out.setdefault(service, []).append(
            (
                _date(start),
                _date(thru) - dt.timedelta(days=1),
                bill["usage"],
                round(bill["cost"], 2),
            )
        )
    return {k: sorted(v) for k, v in out.items()}


def test_energy_accounting_line_items_become_bills(org: Org) -> None:
    """Fairbanks North Star Borough's export: a line per charge, usage on usage lines only, kW
    demand lines (some with blank Units), sewer billed on the water gallons, Thru = next From,
    missing bills. Meters are named by service in a building named by the site."""
    expected = fnsb_bills(real_path("set2/ExampleDataExport.csv"))
    assert {k: len(v) for k, v in expected.items()} == {
        "Natural Gas": 78,
        "Electricity": 78,
        "Water": 79,
    }
    with org.api() as api:
        site = api.post(
            f"/v1/properties/{org.property_id}/buildings",
            json={"name": "FNSB-Animal Control", "primary_use_type": "office", "gfa_m2": 900,
                  "year_built": 1980, "floors": 1},
        ).json()["data"]["id"]  # fmt: skip
        meters = {}
        for name, type_, unit in (
            ("Electricity", "electricity", "kWh"),
            ("Natural Gas", "natural_gas", "ccf"),
            ("Water", "water", "gallons"),
        ):
            r = api.post(
                f"/v1/buildings/{site}/meters", json={"type": type_, "unit": unit, "name": name}
            )
            assert r.status_code == 201, r.text
            meters[name] = r.json()["data"]["id"]
    copy = org.copy("set2/ExampleDataExport.csv")
    dry = org.bpsync("import", str(copy), "--dry-run")
    assert dry.exit_code == 0, dry.output
    out = " ".join(dry.output.split())
    assert "1,310 lines read as 235 bills" in out
    assert "958 charge lines" in out and "38 demand lines" in out
    assert "left out: 'Sewer' (159 lines), whose usage restates 'Water'" in out
    body = org.import_json(str(copy))
    assert body["accepted"] == 235 and body["rejected"] == 0
    for service, meter in meters.items():
        assert org.stored(meter, site) == expected[service], service
