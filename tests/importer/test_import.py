"""`import_file` end to end against the real service over loopback: every sample file, exact
server state, re-imports, reject reports, dry runs, meters, and the register."""

from __future__ import annotations

import csv
import datetime as dt
import gc
import sys

import pytest
from openpyxl import load_workbook

from bpsync.client import AsyncServiceClient
from bpsync.ingest import check_file, read_register
from bpsync.ingest.lookup.fetch import fetch_portfolio
from bpsync.ingest.lookup.meter_map import load_meter_map
from bpsync.ingest.register.apply import import_register
from bpsync.ingest.run.import_file import ImportOptions, import_file
from tests.importer.conftest import PROFILE, SAMPLES
from tests.importer.helpers import monthly_csv, server_readings

pytestmark = pytest.mark.anyio

BILLS = [
    ("bills_workbook.xlsx", "utility_service_period", 38),
    ("pm_add_bills.xlsx", "pm_add_bills", 24),
    ("wide_monthly_usage.xlsx", "wide_monthly_usage", 36),
    ("utility_read_dates.csv", "utility_read_date_days", 24),
    ("green_button.xml", "green_button", 2),
]


async def expected_from_file(client: AsyncServiceClient, path) -> dict[str, set[tuple]]:
    """What the pure pipeline says the file holds, per meter id (independent of sending)."""
    portfolio = await fetch_portfolio(client, load_meter_map(PROFILE))
    _, result = check_file(path, catalog=portfolio.catalog, today=dt.date(2026, 11, 20))
    return {
        m: {(c.start, c.end, c.consumption, c.cost) for c in result.candidates(m)}
        for m in result.meters()
    }


async def test_every_sample_file_lands_exactly_once(client, registered, samples):
    expected: dict[str, set[tuple]] = {}
    for name, template, count in BILLS:
        path = samples(name)
        from_file = await expected_from_file(client, path)
        summary = await import_file(client, PROFILE, path)
        assert (summary.status, summary.template) == ("complete", template)
        assert (summary.accepted, summary.rejected, summary.pending) == (count, 0, 0)
        assert summary.reject_report is None and summary.exit_code == 0
        for meter, rows in from_file.items():
            expected.setdefault(meter, set()).update(rows)
    stored = await server_readings(client)
    assert {m: set(r) for m, r in stored.items() if r} == expected
    assert all(len(r) == len(set(r)) for r in stored.values())  # nothing twice
    assert sum(len(r) for r in stored.values()) == 124
    # spot values straight from the files
    links = load_meter_map(PROFILE)
    hp_elec = stored[links["1200023456789"]]
    assert (dt.date(2023, 1, 1), dt.date(2023, 1, 31), 99797.7, 27943.36) in hp_elec
    annex = [r[:2] for r in stored[links["ELEC-4471-0107"]]]
    assert annex[-2:] == [
        (dt.date(2024, 3, 1), dt.date(2024, 3, 31)),
        (dt.date(2024, 4, 1), dt.date(2024, 4, 30)),
    ]  # the Green Button billing periods follow the workbook's Jan-Feb bills


async def test_reimport_is_a_noop_and_force_rechecks(client, registered, samples):
    path = samples("pm_add_bills.xlsx")
    first = await import_file(client, PROFILE, path)
    assert first.accepted == 24
    again = await import_file(client, PROFILE, path)
    assert again.status == "no-op" and again.requests == 0 and again.exit_code == 0
    assert "already imported" in again.message and "--force" in again.message
    forced = await import_file(client, PROFILE, path, ImportOptions(force=True))
    assert forced.status == "complete"
    assert (forced.accepted, forced.skipped, forced.rejected) == (0, 24, 0)
    assert forced.skipped_by_reason == {"already_stored": 24}
    stored = await server_readings(client)
    assert sum(len(r) for r in stored.values()) == 24
    # the same content under another name is the same import
    copy = path.with_name("copy.xlsx")
    copy.write_bytes(path.read_bytes())
    assert (await import_file(client, PROFILE, copy)).status == "no-op"


async def test_reject_report_for_the_deliberate_errors(client, registered, samples):
    path = samples("deliberate_errors.xlsx")
    summary = await import_file(client, PROFILE, path)
    # rows 2-3 overlap, 5 unknown meter, 6 bad date, 7 end before start, 8 text consumption,
    # 11 m³ into kWh, 12 missing date; 4 (negative) and 9 are accepted, 10 duplicates 9
    assert summary.rejected == 8 and summary.accepted == 2 and summary.exit_code == 13
    assert summary.skipped_by_reason == {"duplicate_row": 1}
    assert summary.reject_report.endswith("deliberate_errors.rejects.xlsx")
    ws = load_workbook(summary.reject_report).active
    rows = list(ws.iter_rows(values_only=True))
    source = list(load_workbook(path)["Bills"].iter_rows(values_only=True))
    assert rows[0][-1] == "Reason" and list(rows[0][:-1]) == [str(h) for h in source[0]]
    reasons = {r[-1].split(":")[0]: r[-1] for r in rows[1:]}
    assert sorted(reasons, key=lambda k: int(k.split()[1])) == [
        f"row {n}" for n in (2, 3, 5, 6, 7, 8, 11, 12)
    ]
    assert "overlaps row 3" in reasons["row 2"] and "not in the meter map" in reasons["row 5"]
    assert "Service End" in reasons["row 7"]
    # the report's first cells are the original row's cells (as text)
    unknown = next(r for r in rows[1:] if r[-1].startswith("row 5"))
    assert unknown[1] == "ELEC-9999-0001"
    # fixing nothing and importing the report again sends nothing twice
    again = await import_file(client, PROFILE, summary.reject_report)
    assert again.accepted == 0 and again.rejected == 8
    # the same file again is tried again (a rejected row may have been fixed outside the file),
    # still reports its rejected rows, sends nothing twice, and exits non-zero
    repeat = await import_file(client, PROFILE, path)
    assert repeat.status == "complete" and repeat.rejected == 8 and repeat.exit_code == 13
    assert repeat.accepted == 0 and repeat.skipped_by_reason.get("already_stored") == 2


async def test_service_rejections_reach_the_report(client, registered, samples, tmp_path):
    """A row the service refuses (it starts inside the building's locked period, which the
    local checks do not know) lands in the CSV report with its original cells."""
    portfolio = await fetch_portfolio(client, {})
    meter = next(m.id for m in portfolio.catalog.meters.values() if m.unit == "kWh")
    path = monthly_csv(tmp_path / "bills.csv", {meter: 3})
    await client.buildings.lock(portfolio.building_of[meter], "2022-01-31")
    summary = await import_file(client, PROFILE, path)
    assert summary.rejected == 1 and summary.accepted == 2
    with open(summary.reject_report, encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Meter ID", "Start Date", "End Date", "Consumption", "Unit", "Reason"]
    assert rows[1][:5] == [meter, "2022-01-01", "2022-01-31", "1000", "kWh"]
    assert rows[1][5].startswith("row 2: ") and "locked" in rows[1][5]


async def test_dry_run_sends_nothing_and_plans(client, registered, samples):
    switch_interval = sys.getswitchinterval()
    summary = await import_file(
        client, PROFILE, samples("bills_workbook.xlsx"), ImportOptions(dry_run=True)
    )
    # The interpreter settings held while it worked (bpsync.ingest.run.runtime) are given back.
    assert sys.getswitchinterval() == switch_interval and gc.get_freeze_count() == 0
    assert summary.status == "dry-run" and summary.pending == 38
    assert summary.plan["readings"] == 38 and summary.plan["meters"] == 4
    assert "nothing was sent" in summary.message
    assert sum(len(r) for r in (await server_readings(client)).values()) == 0
    real = await import_file(client, PROFILE, samples("bills_workbook.xlsx"))
    assert real.status == "complete" and real.accepted == 38  # the dry run journaled nothing


async def test_register_is_idempotent_and_updates(client, registered, samples):
    register = read_register(SAMPLES / "portfolio_register.xlsx")
    again = await import_register(client, register, PROFILE)
    assert again.created == {"property": 0, "building": 0, "meter": 0}
    assert again.unchanged == {"property": 2, "building": 3, "meter": 7}
    assert again.linked == 0
    props = await client.properties.list().to_list()
    target = next(p for p in props if p.internal_ref == "RP-001")
    await client.properties.update(target.id, name="Old name")
    fixed = await import_register(client, register, PROFILE)
    assert fixed.updated["property"] == 1 and fixed.created["property"] == 0
    props = await client.properties.list().to_list()
    assert len(props) == 2 and {p.name for p in props} == {"Riverside Park", "Harbour Point"}
    assert len(load_meter_map(PROFILE)) == 11


async def test_create_meters_by_building_and_name(client, registered, tmp_path):
    path = tmp_path / "by_name.csv"
    path.write_text(
        "Building,Meter,Start Date,End Date,Usage,Unit\n"
        "Riverside Annex,Annex Gas,2024-01-01,2024-01-31,510,therms\n"
        "Riverside Annex,Annex Gas,2024-02-01,2024-02-29,480,therms\n"
        "Riverside Annex,Mystery,2024-01-01,2024-01-31,5,kWh\n",
        encoding="utf-8",
    )
    template = tmp_path / "by_name.toml"
    template.write_text(
        'name = "by_name"\nlayout = "long"\ndate_order = "auto"\n'
        '[meter]\nby = "building_name"\nbuilding_column = ["Building"]\nname_column = ["Meter"]\n'
        '[columns]\nstart_date = ["Start Date"]\nend_date = ["End Date"]\n'
        'consumption = ["Usage"]\nunit = ["Unit"]\n',
        encoding="utf-8",
    )
    notes: list[str] = []
    plain = await import_file(
        client, PROFILE, path, ImportOptions(template=str(template), dry_run=True)
    )
    assert plain.rejected == 3
    summary = await import_file(
        client,
        PROFILE,
        path,
        ImportOptions(template=str(template), create_meters=True),
        note=notes.append,
    )
    assert summary.accepted == 2 and summary.rejected == 1
    assert any(
        "created meter Riverside Annex / Annex Gas (natural_gas, therms)" in n for n in notes
    )
    assert any("Mystery" in n and "type is not clear" in n for n in notes)


async def test_stored_readings_are_fetched_only_for_meters_that_can_hold_some(
    client, registered, tmp_path
):
    """The meter list's latest_reading_date says which meters have nothing that could overlap
    the file (or inform its anomaly history): those cost no GET (issue 16's lookups)."""
    portfolio = await fetch_portfolio(client, {})
    kwh = [m.id for m in portfolio.catalog.meters.values() if m.unit == "kWh"][:3]
    assert portfolio.requests == 6  # the whole organisation: properties → buildings → meters
    lookups = 1  # only the file's three meters, in one list call (C2)
    path = monthly_csv(tmp_path / "first.csv", {m: 3 for m in kwh})
    dry = await import_file(client, PROFILE, path, ImportOptions(dry_run=True))
    assert dry.requests == lookups  # three meters with no readings: no readings GET at all
    done = await import_file(client, PROFILE, path)
    assert done.accepted == 9
    # the same meters, the next months: now they hold readings that may overlap or inform
    later = monthly_csv(tmp_path / "later.csv", {m: 2 for m in kwh}, first=dt.date(2022, 4, 1))
    dry_later = await import_file(client, PROFILE, later, ImportOptions(dry_run=True))
    assert dry_later.requests == lookups + 1  # their readings: one list call for three (C3)
    # an overlap is still found (the stored March reading against a new March row)
    clash = monthly_csv(tmp_path / "clash.csv", {kwh[0]: 1}, first=dt.date(2022, 3, 1))
    rows = clash.read_text().splitlines()
    clash.write_text("\n".join([rows[0], rows[1].replace(",1000,", ",999,")]) + "\n")
    checked = await import_file(client, PROFILE, clash, ImportOptions(dry_run=True))
    # a correction of the stored March reading: listed, not applied without --update
    assert checked.not_applied == 1 and checked.requests == lookups + 1
    # The list call above is the prefetch (the 400 days before each meter's latest reading,
    # fetched while the file is read). A file reaching further back costs its meter a list of
    # its own, and the older stored readings still clash (Jan and Feb 2022, other values).
    old = monthly_csv(tmp_path / "old.csv", {kwh[0]: 4}, first=dt.date(2021, 11, 1))
    back = await import_file(client, PROFILE, old, ImportOptions(dry_run=True))
    assert back.requests == lookups + 2 and back.not_applied == 2
