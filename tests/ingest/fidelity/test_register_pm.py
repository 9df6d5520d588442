"""`register import` of a register whose Meters sheet is copied from Portfolio Manager's own
export: PM's property column names (Portfolio Manager Property ID, Address 1), PM meter type names ("Electric - Grid"), PM unit names ("kWh (thousand Watt-hours)") in a
"Usage Units" column, and two meters with the same name in one property (PM allows it), told
apart by their Portfolio Manager Meter ID."""

from __future__ import annotations

from pathlib import Path

from bpsync.ingest import read_register
from tests.ingest.conftest import write_xlsx


def test_pm_meter_names_types_units_and_duplicate_names(tmp_path: Path):
    path = write_xlsx(
        tmp_path / "register.xlsx",
        {
            "Properties": [
                # PM's Properties export column names
                [
                    "Portfolio Manager Property ID",
                    "Property Name",
                    "Address 1",
                    "City",
                    "Country",
                    "Primary Property Type - Self Selected",
                ],
                ["P1", "Tower", "1 A St", "New York", "US", "office"],
            ],
            "Buildings": [
                [
                    "Property Ref",
                    "Building Name",
                    "Primary Use Type",
                    "Gross Floor Area",
                    "Year Built",
                    "Floors",
                ],
                ["P1", "Tower", "office", 1000, 2000, 3],
            ],
            "Meters": [
                [
                    "Property Ref",
                    "Building Name",
                    "Meter Name",
                    "Meter Type",
                    "Usage Units",
                    "Portfolio Manager Meter ID",
                ],
                ["P1", "Tower", "Electric", "Electric - Grid", "kWh (thousand Watt-hours)", "111"],
                ["P1", "Tower", "Electric", "Electric - Grid", "MWh (million Watt-hours)", "222"],
                ["P1", "Tower", "Gas", "Natural Gas", "therms", "333"],
                ["P1", "Tower", "Stove", "Wood", "kBtu (thousand Btu)", "444"],
            ],
        },
    )
    reg = read_register(path)
    assert [(m.key[2], m.payload["type"], m.payload["unit"]) for m in reg.meters] == [
        ("Electric", "electricity", "kWh"),
        ("Electric (PM 222)", "electricity", "MWh"),
        ("Gas", "natural_gas", "therms"),
    ]
    assert reg.meter_links["222"] == ("P1", "Tower", "Electric (PM 222)")
    [problem] = reg.problems
    assert (problem.where.row, problem.column, problem.value) == (5, "Meter Type", "Wood")
