"""Portfolio Manager's quirks in small workbooks of our own (built here with openpyxl), each
mimicking one real export of ../shared/real-inputs (issue 27 items 6-7); the real files are
imported in tests/real_inputs/test_portfolio_manager.py. No network: the engine's pure half and
the register reader."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

from bpsync.ingest import prepare, read_register
from bpsync.ingest.cells.units import convert, lookup_meter_type, lookup_unit
from bpsync.ingest.register.plan_changes import plan_register
from tests.ingest.conftest import write_xlsx

D = dt.date


def _readings(path: Path) -> dict[str, list[tuple]]:
    """{meter key: [(start, end, consumption)]} of what the engine would send."""
    prepared = prepare(path, "auto")
    out = {}
    for key, m in prepared.collected.meters.items():
        out[key] = [
            (D.fromordinal(s), D.fromordinal(e), c)
            for s, e, c in zip(m.starts, m.ends, m.consumption, strict=True)
        ]
    return out


def _notices(path: Path) -> tuple[int, Counter, Counter]:
    c = prepare(path, "auto").collected
    return (
        c.rows_read,
        Counter(p.code for p in c.problems if p.severity == "notice"),
        Counter(p.code for p in c.problems if p.is_error),
    )


V2 = [
    "Meter ID\n(Pre-filled)",
    "Meter Consumption ID\n(Pre-filled)",
    "Portfolio Manager ID\n(Pre-filled)",
    "Property  Name\n(Pre-filled)",
    "Meter Name\n(Pre-filled)",
    "Meter Type\n(Pre-filled)",
    "Start Date\n(Required)",
    "End Date\n(Required)",
    "Quantity\n(Required)",
    "Meter Unit\n(Pre-filled)",
    "Cost\n(Optional)",
    "Estimation (Required)",
]


def test_v2_template_prefilled_and_blank_new_bill_rows(tmp_path: Path):
    """Mimics set2/Add_Bills_to_Meters_AAPS_Historical.xlsx: each meter's last bill pre-filled
    with its Meter Consumption ID and a text Start Date ("Last Bill 5/23/2014"), then a new-bill
    row with only the meter columns pre-filled; one new bill typed in."""
    gas = [8003, None, 5227, "King Elementary", "008262223", "Natural Gas"]
    path = write_xlsx(
        tmp_path / "add_bills.xlsx",
        {
            "Instructions": [["Add Bills to Existing Meters - Upload Template"]],
            "Add Bills-Non Electric": [
                V2,
                [8003, 335407952, *gas[2:], "Last Bill 5/23/2014", "6/24/2014", 43.68, "therms"],
                [*gas, None, None, None, "therms", None, None],
                [*gas, D(2014, 6, 25), D(2014, 7, 24), 40.5, "therms", 30.1, "No"],
            ],
        },
    )
    assert _notices(path) == (3, Counter({"already_in_source": 1, "no_entry": 1}), Counter())
    assert _readings(path) == {"8003": [(D(2014, 6, 25), D(2014, 7, 24), 40.5)]}


def test_monthly_usage_report_months_and_not_available(tmp_path: Path):
    """Mimics set1/example-pm-data-request-with-meters-new-format.xlsx: title lines, a 'Month '
    header with a trailing space, 'Jan-16' months, the unit in the usage header, text numbers,
    and "Not Available" months."""
    head = [
        "Portfolio Manager Property ID",
        "Property Name",
        "Month ",
        "Electricity Use (Grid) - Monthly (kBtu)",
    ]
    path = write_xlsx(
        tmp_path / "report.xlsx",
        {
            "Monthly Usage": [
                ["Report with Meters"],
                ["Date Generated: 12/21/2021 01:29 PM EST"],
                [],
                head,
                ["4544232", "Office", "Feb-16", "175697.3"],
                ["4544232", "Office", "Mar-16", "Not Available"],
            ]
        },
    )
    assert prepare(path, "auto").template.name == "pm_monthly_usage"
    assert _readings(path) == {"4544232": [(D(2016, 2, 1), D(2016, 2, 29), 175697.3)]}
    assert _notices(path) == (2, Counter({"no_usage": 1}), Counter())


def test_2015_download_old_type_names_kgal_and_next_start_ends(tmp_path: Path):
    """Mimics set2/testInput1.xlsx: ids as floats, PM's 2015 type names, `KGal (thousand
    gallons) (US)` with a capital K, End Date = next Start Date, Meter Consumption IDs (a
    download: stored, not skipped)."""
    head = [
        "Property Name", "Portfolio Manager ID", "Portfolio Manager Meter ID", "Meter Name",
        "Meter Type", "Meter Consumption ID", "Start Date", "End Date", "Delivery Date",
        "Usage/Quantity", "Usage Units", "Cost ($)", "Estimation?",
    ]  # fmt: skip
    rows = [["My Portfolio: x"], ["12/06/2015 01:28 AM EST"], ["Total Properties: 1"], [], []]
    rows.append(head)
    for i, (start, end) in enumerate(
        [(D(2014, 11, 1), D(2014, 12, 1)), (D(2014, 12, 1), D(2015, 1, 1))]
    ):
        rows.append(["P", 4674008.0, 16873485.0, "Potable", "Potable Indoor", 690213521.0 + i, start, end, None, 4.0 + i, "KGal (thousand gallons) (US)", 8.0, "No"])  # fmt: skip
        rows.append(["P", 4674008.0, 16873477.0, "DHW", "District Hot Water", 690213600.0 + i, start, end, None, 10.0, "kBtu (thousand Btu)", 1.0, "No"])  # fmt: skip
    path = write_xlsx(tmp_path / "download.xlsx", {"Meter Consumption Data": rows})
    assert _notices(path) == (4, Counter(), Counter())
    assert _readings(path) == {
        "16873485": [(D(2014, 11, 1), D(2014, 11, 30), 4.0), (D(2014, 12, 1), D(2014, 12, 31), 5.0)],
        "16873477": [(D(2014, 11, 1), D(2014, 11, 30), 10.0), (D(2014, 12, 1), D(2014, 12, 31), 10.0)],
    }  # fmt: skip


def test_pm_type_and_unit_names():
    """The names PM's templates and exports write (set1/Add_Meters.xlsx's Validation sheet,
    set1/Add_Bills_to_Meters.xlsx's, set1/Has_Meters_two_buildings.xlsx's meters)."""
    assert lookup_meter_type("Potable Outdoor") == "water"
    assert lookup_meter_type("Reclaimed Indoor") == "water"
    assert lookup_meter_type("Other - Indoor") == "water"
    assert lookup_meter_type("Other:") is None  # PM's "other energy": no service type
    assert lookup_meter_type("Electricity - On-Site Solar") == "solar"
    assert lookup_meter_type("Electric - Wind") is None
    assert lookup_meter_type("Liquid Propane") == "lpg"
    assert lookup_meter_type("Some Unknown Type") is None
    assert lookup_unit("kGal (thousand gallons) (UK)").name == "kgal_uk"
    assert lookup_unit("Mgal (Million gallons) (US)").name == "Mgal"
    assert lookup_unit("Kcm (thousand cubic meters)").name == "kcm"
    assert lookup_unit("Lilters").name == "litres"
    assert round(convert(1, "cGal (hundred gallons) (US)", "water", "kgal"), 6) == 0.1
    assert round(convert(1, "kGal (thousand gallons) (UK)", "water", "m3"), 5) == 4.54609


def test_register_of_a_single_property_download(tmp_path: Path):
    """Mimics set1/portfolio-manager-single-22482007.xlsx: a `Property` sheet with title lines,
    "Portfolio Manager ID", "Gross Floor Area" + "GFA Units", "Property Type - Self-Selected",
    'Not Available' cells; a Meters sheet with two meters named "Master Meter"."""
    title = [["My Portfolio: Test City SEED"], ["07/30/2023 12:11 PM EDT"], ["Total Properties: 1"], [], []]  # fmt: skip
    prop = ["Property Name", "Portfolio Manager ID", "Street Address", "Street Address 2", "City/Municipality", "State/Province", "Postal Code", "Country", "Year Built", "Property Type - Self-Selected", "Gross Floor Area", "GFA Units", "Occupancy (%)"]  # fmt: skip
    meters = ["Property Name", "Portfolio Manager ID", "Portfolio Manager Meter ID", "Meter Name", "Meter Type", "Units"]  # fmt: skip
    path = write_xlsx(
        tmp_path / "single.xlsx",
        {
            "Property": [
                *title,
                prop,
                [
                    "School",
                    22482007.0,
                    "2425 N ST",
                    "Not Available",
                    "WASHINGTON",
                    "District of Columbia (D.C.)",
                    "20037",
                    "United States",
                    1924.0,
                    "K-12 School",
                    127991.0,
                    "Sq. Ft.",
                    "100",
                ],
            ],
            "Meters": [
                *title,
                meters,
                [
                    "School",
                    22482007.0,
                    139774699.0,
                    "Master Meter",
                    "Electric - Grid",
                    "kBtu (thousand Btu)",
                ],
                [
                    "School",
                    22482007.0,
                    139774700.0,
                    "Master Meter",
                    "Natural Gas",
                    "kBtu (thousand Btu)",
                ],
            ],
        },
    )
    reg = read_register(path)
    assert reg.ok, reg.problems
    [p] = reg.properties
    assert (p.key, p.payload["type"], p.payload["address"]["country"]) == (
        ("22482007",),
        "education",
        "US",
    )
    assert "street_2" not in p.payload["address"]
    [b] = reg.buildings
    assert b.payload == {
        "name": "School",
        "primary_use_type": "education",
        "gfa_m2": round(127991 / 10.7639, 2),
        "year_built": 1924,
        "floors": 1,
        "occupancy_pct": 100,
    }
    assert b.defaulted == ("floors",)
    assert any("1 floor as a placeholder" in r for r in reg.rules)
    assert [m.key[2] for m in reg.meters] == ["Master Meter", "Master Meter (PM 139774700)"]
    assert reg.meter_links["139774699"] == ("22482007", "School", "Master Meter")
    # a building the service holds keeps its floors: the placeholder is no update
    held_b = {"id": "bld_1", **b.payload, "floors": 4}
    actions = plan_register(
        reg,
        [{"id": "prp_1", "internal_ref": "22482007", **p.payload}],
        {"prp_1": [held_b]},
        {},
    )
    assert [(a.kind, a.op) for a in actions][:2] == [
        ("property", "unchanged"),
        ("building", "unchanged"),
    ]


def test_register_of_the_create_meters_template(tmp_path: Path):
    """Mimics set1/Add_Meters.xlsx: no Properties sheet; a visible 'Create Meters (Energy)' with
    tagged headers and two meters named "Master Meter" in one property (electric and steam); a
    hidden, empty Water sheet."""
    head = ["Portfolio Manager ID (Pre-filled)", "Property Name\n(Pre-filled)", "Meter Type\n(Pre-filled)", "Meter Name (Required)", "Units\n(Required)", "Date Meter Became Active (Required)"]  # fmt: skip
    path = write_xlsx(
        tmp_path / "add_meters.xlsx",
        {
            "Instructions": [["Add New Meters to Existing Properties - Upload Template"]],
            "Create Meters (Energy)": [
                head,
                [
                    22178843,
                    "Medstar",
                    "Electric - Grid",
                    "Master Meter",
                    "kBtu (thousand Btu)",
                    D(2019, 1, 1),
                ],
                [
                    22178843,
                    "Medstar",
                    "District Steam",
                    "Master Meter",
                    "kBtu (thousand Btu)",
                    D(2019, 1, 1),
                ],
                [22178844, "1801 Penn", "Natural Gas", "Gas", "therms", D(2019, 1, 1)],
            ],
            "Create Meters (Water)": [head],
        },
        hidden=("Create Meters (Water)",),
    )
    reg = read_register(path)
    assert reg.ok and reg.meters_only
    assert [(m.key, m.payload["type"], m.payload["unit"]) for m in reg.meters] == [
        (("22178843", "", "Master Meter"), "electricity", "kBtu"),
        (("22178843", "", "Master Meter (District Steam)"), "steam", "kBtu"),
        (("22178844", "", "Gas"), "natural_gas", "therms"),
    ]
    actions = plan_register(
        reg,
        [{"id": "prp_1", "internal_ref": "22178843"}],
        {"prp_1": [{"id": "bld_1", "name": "Medstar"}]},
        {"bld_1": [{"id": "mtr_1", "name": "Master Meter", "type": "electricity", "unit": "kBtu"}]},
    )
    ops = [(a.kind, a.op, a.key) for a in actions]
    assert ops == [
        ("property", "unchanged", ("22178843",)),
        ("building", "unchanged", ("22178843", "Medstar")),
        ("meter", "unchanged", ("22178843", "Medstar", "Master Meter")),
        ("meter", "create", ("22178843", "Medstar", "Master Meter (District Steam)")),
        ("meter", "conflict", ("22178844", "", "Gas")),
    ]
    assert "register the property first" in (actions[-1].reason or "")
