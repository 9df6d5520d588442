"""`register import` of a register whose Meters sheet is copied from Portfolio Manager's own
export: PM's property column names (Portfolio Manager Property ID, Address 1), PM meter type names ("Electric - Grid"), PM unit names ("kWh (thousand Watt-hours)") in a
"Usage Units" column, and two meters with the same name in one property (PM allows it), told
apart by their Portfolio Manager Meter ID."""

from __future__ import annotations

from pathlib import Path

from bpsync.ingest import read_register
from bpsync.ingest.problems import IngestError
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


# Portfolio Manager's own export workbook ("Properties" and "Meters" sheets, as its Download /
# Export of property and meter data writes them): no Buildings sheet, floor area in ft² under
# "Property GFA - Self-Reported (ft²)", PM property type names, full country names, meters keyed
# by "Portfolio Manager Property ID" with no building column, a title row above the header.
PM_PROPERTIES = [
    ["Properties"],
    [
        "Property Name",
        "Portfolio Manager Property ID",
        "Address 1",
        "City/Municipality",
        "State/Province",
        "Postal Code",
        "Country",
        "Primary Property Type - Self Selected",
        "Property GFA - Self-Reported (ft²)",
        "Year Built",
        "Floors",
        "Occupancy",
    ],
    [
        "Midtown Tower",
        "2451881",
        "350 5th Ave",
        "New York",
        "NY",
        "10118",
        "United States",
        "Office",
        107639,
        1931,
        102,
        95,
    ],
    [
        "Lincoln School",
        "2451882",
        "12 Elm St",
        "Boston",
        "MA",
        "02108",
        "United States",
        "K-12 School",
        "53,819.5",
        1968,
        3,
        100,
    ],
    [
        "Pier Storage",
        "2451883",
        "1 Pier Rd",
        "Halifax",
        "NS",
        "B3H",
        "Canada",
        "Cold Storage Hangar",
        20000,
        1999,
        1,
        100,
    ],
]
PM_METERS = [
    [
        "Portfolio Manager Property ID",
        "Property Name",
        "Portfolio Manager Meter ID",
        "Meter Name",
        "Meter Type",
        "Usage Units",
    ],
    [
        "2451881",
        "Midtown Tower",
        "9000001",
        "Main Electric",
        "Electric - Grid",
        "kWh (thousand Watt-hours)",
    ],
    [
        "2451881",
        "Midtown Tower",
        "9000002",
        "Main Electric",
        "Electric - Grid",
        "kWh (thousand Watt-hours)",
    ],
    ["2451882", "Lincoln School", "9000003", "Boiler Gas", "Natural Gas", "therms"],
    ["2459999", "Gone", "9000004", "Orphan", "Natural Gas", "therms"],
]


def test_raw_pm_export_one_building_per_property(tmp_path: Path):
    path = write_xlsx(
        tmp_path / "pm_export.xlsx", {"Properties": PM_PROPERTIES, "Meters": PM_METERS}
    )
    reg = read_register(path)
    assert [
        (p.key, p.payload["type"], p.payload["address"]["country"]) for p in reg.properties
    ] == [
        (("2451881",), "office", "US"),
        (("2451882",), "education", "US"),
    ]
    assert [(b.key, b.payload) for b in reg.buildings] == [
        (
            ("2451881", "Midtown Tower"),
            {
                "name": "Midtown Tower",
                "primary_use_type": "office",
                "gfa_m2": 10000.0,
                "year_built": 1931,
                "floors": 102,
                "occupancy_pct": 95,
            },
        ),
        (
            ("2451882", "Lincoln School"),
            {
                "name": "Lincoln School",
                "primary_use_type": "education",
                "gfa_m2": 5000.0,
                "year_built": 1968,
                "floors": 3,
                "occupancy_pct": 100,
            },
        ),
    ]
    assert [m.key for m in reg.meters] == [
        ("2451881", "Midtown Tower", "Main Electric"),
        ("2451881", "Midtown Tower", "Main Electric (PM 9000002)"),
        ("2451882", "Lincoln School", "Boiler Gas"),
    ]
    assert reg.meter_links["9000002"] == ("2451881", "Midtown Tower", "Main Electric (PM 9000002)")
    problems = {(p.where.sheet, p.where.row, p.column, p.value): p.reason for p in reg.problems}
    assert problems.keys() == {
        ("Properties", 5, "Primary Property Type - Self Selected", "Cold Storage Hangar"),
        ("Meters", 5, "Portfolio Manager Property ID", "2459999"),
    }
    assert any("one building named after the property" in r for r in reg.rules)
    assert any("÷ 10.7639" in r for r in reg.rules)


def test_raw_pm_export_without_floors_gets_a_stated_placeholder(tmp_path: Path):
    """PM exports no floors: each building is created with 1 floor, the rule stated, never sent
    as an update (decisions F11, F18: one rule for every PM layout)."""
    rows = [[c for i, c in enumerate(r) if i != 10] for r in PM_PROPERTIES[1:3]]
    path = write_xlsx(tmp_path / "pm_export.xlsx", {"Properties": rows, "Meters": PM_METERS[:2]})
    reg = read_register(path)
    assert [b.payload["floors"] for b in reg.buildings] == [1]
    assert all(b.defaulted == ("floors",) for b in reg.buildings)
    assert not [p for p in reg.problems if "Floors" in p.reason]
    assert any("1 floor as a placeholder" in rule for rule in reg.rules)


def test_a_register_without_buildings_or_pm_floor_area_names_both(tmp_path: Path):
    path = write_xlsx(
        tmp_path / "r.xlsx",
        {"Properties": [[c for c in PM_PROPERTIES[1][:8]]], "Meters": PM_METERS},
    )
    try:
        read_register(path)
    except IngestError as exc:
        assert "Buildings" in str(exc) and "Property GFA - Self-Reported" in str(exc)
    else:
        raise AssertionError("a register with no building data was read")
