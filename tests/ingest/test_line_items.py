"""Bill line-item exports read as bills (mimics Fairbanks North Star Borough's energy-accounting
export, set 2 file 9): charge lines add to the bill's cost, demand lines become its demand, a
service restating another's quantity is left out, and every line is accounted for."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError, check_file
from bpsync.ingest.readings.assign_meters import MeterCatalog, MeterInfo

D = dt.date
HEADER = "Site Name,From,Thru,Service Name,Item Description,Usage,Cost,Units\n"


def bills(path: Path) -> tuple[list[tuple], str]:
    cat = MeterCatalog.build(
        [
            MeterInfo("mtr_e", "electricity", "kWh", "bld", "Depot", "Electricity"),
            MeterInfo("mtr_w", "water", "gallons", "bld", "Depot", "Water"),
            MeterInfo("mtr_g", "natural_gas", "ccf", "bld", "Depot", "Gas"),
        ]
    )
    prepared, result = check_file(path, catalog=cat, today=D(2026, 1, 1))
    assert not result.errors, result.errors
    got = sorted(
        (c.meter_id, c.start, c.end, c.consumption, c.cost, c.demand_kw)
        for c in result.all_candidates()
    )
    return got, " ".join(prepared.notes)


def test_lines_become_bills(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(
        HEADER
        + "Depot,1/1/2024,2/1/2024,Electricity,Energy charge,1000,120.50,kWh\n"
        + "Depot,1/1/2024,2/1/2024,Electricity,KW Charge,40,80.00,\n"  # blank-unit demand
        + "Depot,1/1/2024,2/1/2024,Electricity,Customer Charge,,10.00,\n"
        + "Depot,2/1/2024,3/1/2024,Electricity,Energy charge,900,110.00,kWh\n"
        + "Depot,2/1/2024,3/1/2024,Electricity,Demand,38,76.00,kW\n"
        + "Depot,1/5/2024,2/5/2024,Water,Water Usage (Gallons),5000,30.00,Gallons\n"
        + "Depot,1/5/2024,2/5/2024,Sewer,Sewer Usage (Gallons),5000,45.00,Gallons\n"
        + "Depot,1/5/2024,2/5/2024,Water,Fixed Charge,,5.00,\n"
        + "Depot,1/13/2024,2/13/2024,Gas,Natural gas (CCF),300,250.00,\n"  # unit in the item
        + "Depot,2/13/2024,3/14/2024,Gas,Natural gas (CCF),280,240.00,CCF\n"
    )
    got, notes = bills(path)
    assert got == [
        # Thru is the next From for the meters with consecutive bills: ends a day earlier.
        ("mtr_e", D(2024, 1, 1), D(2024, 1, 31), 1000.0, 210.5, 40.0),
        ("mtr_e", D(2024, 2, 1), D(2024, 2, 29), 900.0, 186.0, 38.0),
        ("mtr_g", D(2024, 1, 13), D(2024, 2, 12), 300.0, 250.0, None),
        ("mtr_g", D(2024, 2, 13), D(2024, 3, 13), 280.0, 240.0, None),
        # One water bill: nothing tells its convention, so the end stays inclusive.
        ("mtr_w", D(2024, 1, 5), D(2024, 2, 5), 5000.0, 35.0, None),
    ]
    assert "10 lines read as 5 bills" in notes
    assert "2 charge lines" in notes and "2 demand lines" in notes
    assert "left out: 'Sewer' (1 lines), whose usage restates 'Water'" in notes


def test_a_plain_bill_per_line_file_is_not_taken_for_line_items(tmp_path: Path) -> None:
    """One line per bill, no charge lines: not a line-item export (here no column names the
    meter, so the inferred reading refuses it and says why)."""
    path = tmp_path / "plain.csv"
    path.write_text(
        HEADER
        + "".join(
            f"Depot,{m}/1/2024,{m + 1}/1/2024,Electricity,Energy,{100 + m},9.00,kWh\n"
            for m in range(1, 6)
        )
    )
    with pytest.raises(IngestError) as caught:
        bills(path)
    assert "no column names the meter" in str(caught.value)
    assert "line per charge" not in str(caught.value)
