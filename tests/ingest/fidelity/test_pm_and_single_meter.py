"""Import fidelity (issue 11), Portfolio Manager files and single-meter exports, end to end into a
real bpservice: exact stored readings in the meter's unit."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.ingest.lookup.meter_map import load_meter_map
from bpsync.ingest.run.import_file import ImportOptions, import_file
from tests.importer.conftest import PROFILE
from tests.importer.helpers import server_readings
from tests.ingest.fidelity.fixtures import pm

pytestmark = pytest.mark.anyio
D = dt.datetime


async def stored_for(client, ref: str) -> list[tuple]:
    return (await server_readings(client))[load_meter_map(PROFILE)[ref]]


async def test_pm_add_bills_v2_upload_template(client, registered, tmp_path):
    """Mimics PM's "Add Bills to Existing Meters" upload template v2.0 (see fixtures/pm.py): the
    file's Meter Unit (MWh) is used, never the meter's (kWh); End Date formulas give their cached
    values; "12.5" typed as text is read; the row with a Meter Consumption ID is not inserted; the
    hidden Water sheet is ignored."""
    path = pm.add_bills_v2(tmp_path / "AddBills_v2.xlsx")
    summary = await import_file(client, PROFILE, path)
    assert (summary.template, summary.accepted, summary.rejected) == ("pm_add_bills_v2", 2, 0)
    assert await stored_for(client, "8837461") == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31), 12500.0, 1520.1),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29), 11250.0, 1390.55),
    ]
    assert await stored_for(client, "8837464") == []  # the hidden Water sheet


async def test_pm_meter_entries_old_and_new_conventions(client, registered, tmp_path):
    """Mimics a PM "Meter Entries" export workbook (Properties, Meters, Meter Entries sheets):
    the electric meter written the old way (End Date == next Start Date), the gas meter the new,
    inclusive way; one row with a Meter Type PM has but bpsync does not know (Wood), one with
    unknown Usage Units, and one whose Meter Type contradicts the linked meter."""
    e, g, kwh = pm.ELEC, pm.GAS, pm.KWH
    wood = ["Riverside Tower", 5012345, "Stove", 8837461, "Wood"]
    path = pm.meter_entries_export(
        tmp_path / "PM_Export.xlsx",
        [
            [*e, D(2024, 1, 1), D(2024, 2, 1), 1000, kwh, 150, "No"],
            [*e, D(2024, 2, 1), D(2024, 3, 1), 900, kwh, 140, "No"],
            [*e, D(2024, 3, 1), D(2024, 4, 1), 800, kwh, 130, "Yes"],
            [*g, D(2024, 1, 1), D(2024, 1, 31), 50, "therms", 60, "No"],
            [*g, D(2024, 2, 1), D(2024, 2, 29), 40, "therms", 50, "No"],
            [*wood, D(2024, 4, 1), D(2024, 5, 1), 5, kwh, 1, "No"],
            [*g, D(2024, 3, 1), D(2024, 3, 31), 30, "Bogus units", 40, "No"],
            [*g[:3], 8837461, "Natural Gas", D(2024, 5, 1), D(2024, 6, 1), 9, kwh, 1, "No"],
        ],
    )
    dry = await import_file(client, PROFILE, path, ImportOptions(dry_run=True))
    assert dry.template == "pm_meter_entries_export"
    assert "read sheet 'Meter Entries' (header on row 1)" in dry.notes
    assert any(
        n.startswith("end dates read as the next bill's start") and "8837461 (4 of 4" in n
        for n in dry.notes
    ), dry.notes
    assert any("inclusive for: 8837463 (2 of 2" in n for n in dry.notes), dry.notes
    summary = await import_file(client, PROFILE, path)
    assert (summary.accepted, summary.rejected) == (5, 3)
    reasons = {p["code"]: p for p in summary.problems}
    assert reasons["unknown_meter_type"]["value"] == "Wood"
    assert reasons["unknown_meter_type"]["column"] == "Meter Type"
    assert reasons["unknown_meter_type"]["row"] == 7
    assert reasons["unknown_unit"]["value"] == "Bogus units"
    assert "file says this is a natural gas meter" in reasons["meter_type_mismatch"]["reason"]
    assert await stored_for(client, "8837461") == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1000.0, 150.0),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29), 900.0, 140.0),
        (dt.date(2024, 3, 1), dt.date(2024, 3, 31), 800.0, 130.0),
    ]
    assert await stored_for(client, "8837463") == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31), 50.0, 60.0),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29), 40.0, 50.0),
    ]


async def test_template_can_force_the_convention(client, registered, tmp_path):
    """The same old-style export with a user template forcing "inclusive": the dates are kept as
    written (and the overlapping bills are then refused, not silently shifted)."""
    folder = tmp_path / "tpl"
    folder.mkdir()
    shipped = (
        load_text := __import__(
            "bpsync.ingest.understand.templates", fromlist=["x"]
        ).builtin_templates_dir()
    )
    text = (shipped / "pm_meter_entries_export.toml").read_text()
    text = text.replace('name = "pm_meter_entries_export"', 'name = "pm_inclusive"')
    (folder / "pm_inclusive.toml").write_text(
        text.replace('end_date = "auto"', 'end_date = "inclusive"')
    )
    del load_text
    e, kwh = pm.ELEC, pm.KWH
    path = pm.meter_entries_export(
        tmp_path / "PM_Export.xlsx",
        [
            [*e, D(2024, 1, 1), D(2024, 1, 31), 1000, kwh, 150, "No"],
            [*e, D(2024, 2, 1), D(2024, 2, 29), 900, kwh, 140, "No"],
        ],
    )
    options = ImportOptions(template="pm_inclusive", template_dirs=[folder])
    summary = await import_file(client, PROFILE, path, options)
    assert (summary.accepted, summary.rejected) == (2, 0)
    assert await stored_for(client, "8837461") == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1000.0, 150.0),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29), 900.0, 140.0),
    ]


async def test_single_meter_csv_with_meter_option(client, registered, tmp_path):
    """Mimics a residential utility's "Download usage" CSV: one account per file, so no meter
    column at all. `--meter REF` puts every row in that meter."""
    path = tmp_path / "my_usage.csv"
    path.write_text(
        "Service Start,Service End,Usage (kWh),Total Charges\n"
        "2024-01-05,2024-02-04,612,98.40\n"
        "2024-02-05,2024-03-05,577,93.10\n",
        encoding="utf-8",
    )
    options = ImportOptions(meter="ELEC-4471-0107")
    summary = await import_file(client, PROFILE, path, options)
    assert (summary.accepted, summary.rejected) == (2, 0), summary.problems
    assert await stored_for(client, "ELEC-4471-0107") == [
        (dt.date(2024, 1, 5), dt.date(2024, 2, 4), 612.0, 98.4),
        (dt.date(2024, 2, 5), dt.date(2024, 3, 5), 577.0, 93.1),
    ]


async def test_reimport_with_another_template_is_not_skipped(client, registered, tmp_path):
    """Importing the same file again with a different template (or meter) is a new import, not an
    "already imported" no-op."""
    path = tmp_path / "my_usage.csv"
    path.write_text(
        "Service Start,Service End,Usage (kWh),Total Charges\n2024-01-05,2024-02-04,612,98.40\n",
        encoding="utf-8",
    )
    first = await import_file(client, PROFILE, path, ImportOptions(meter="ELEC-4471-0107"))
    assert first.accepted == 1
    again = await import_file(client, PROFILE, path, ImportOptions(meter="ELEC-4471-0107"))
    assert again.status == "no-op"
    other = await import_file(client, PROFILE, path, ImportOptions(meter="ELEC-4471-0091"))
    assert (other.status, other.accepted) == ("complete", 1)
    assert await stored_for(client, "ELEC-4471-0091") == [
        (dt.date(2024, 1, 5), dt.date(2024, 2, 4), 612.0, 98.4)
    ]


async def test_decimal_comma_and_semicolons(client, registered, tmp_path):
    """Mimics a German/Dutch utility portal CSV: `;` between fields, "1.234,5" numbers (a dot
    groups thousands), and a value "1.250" that alone could be either: the column's other values
    prove the decimal comma, so it is 1250, not 1.25."""
    path = tmp_path / "verbrauch.csv"
    path.write_text(
        "Meter Number;Service Start;Service End;Usage (kWh);Total Charges\n"
        "1200023456789;2024-01-01;2024-01-31;1.234,5;310,20\n"
        "1200023456789;2024-02-01;2024-02-29;1.250;299,95\n",
        encoding="utf-8",
    )
    dry = await import_file(client, PROFILE, path, ImportOptions(dry_run=True))
    assert "numbers read with a decimal comma (e.g. '1.234,5')" in dry.notes
    summary = await import_file(client, PROFILE, path)
    assert (summary.template, summary.accepted) == ("utility_service_period", 2)
    assert await stored_for(client, "1200023456789") == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1234.5, 310.2),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29), 1250.0, 299.95),
    ]


async def test_create_meters_uses_the_files_meter_type(client, registered, tmp_path):
    """A PM-style export naming meters by building and name with a Meter Type column: a district
    hot water meter billed in kWh is created as district_heating (its unit alone would say
    electricity)."""
    path = tmp_path / "by_name.csv"
    path.write_text(
        "Building,Meter,Meter Type,Start Date,End Date,Usage,Unit\n"
        "Riverside Annex,Loop 2,District Hot Water,2024-01-01,2024-01-31,4100,kWh\n",
        encoding="utf-8",
    )
    template = tmp_path / "by_name.toml"
    template.write_text(
        'name = "by_name"\nlayout = "long"\ndate_order = "auto"\n'
        '[meter]\nby = "building_name"\nbuilding_column = ["Building"]\nname_column = ["Meter"]\n'
        '[columns]\nstart_date = ["Start Date"]\nend_date = ["End Date"]\n'
        'consumption = ["Usage"]\nunit = ["Unit"]\nmeter_type = ["Meter Type"]\n',
        encoding="utf-8",
    )
    notes: list[str] = []
    options = ImportOptions(template=str(template), create_meters=True)
    summary = await import_file(client, PROFILE, path, options, note=notes.append)
    assert (summary.accepted, summary.rejected) == (1, 0), summary.problems
    assert any(
        "created meter Riverside Annex / Loop 2 (district_heating, kWh)" in n for n in notes
    ), notes
