"""`bpsync export pm-bills` and `pm-meters` through typer against the real service: every flag,
the ledger, what is left out and why, exit codes, one-line errors."""

from __future__ import annotations

import datetime as dt
import json

import openpyxl
import pytest

from bpsync.ingest import link_meter
from bpsync.pm_export.ledger import ledger_path
from tests.conftest import Service
from tests.pm_export.conftest import invoke, monthly, new_org, stored


@pytest.fixture(autouse=True)
def _isolated(isolated, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(isolated)  # a default output file lands in the test's folder
    return isolated


def _month(m: int, value: float) -> dict:
    start = dt.date(2024, m, 1)
    end = dt.date(2024 + m // 12, m % 12 + 1, 1) - dt.timedelta(days=1)
    return {"start_date": str(start), "end_date": str(end), "consumption": value, "cost": 10.5 * m}


@pytest.fixture
def world(service: Service):  # type: ignore[no-untyped-def]
    """Org with two properties: P1 (PM id 5227) holds a linked electricity meter and a gas meter,
    an unlinked water meter and a solar meter; P2 (no PM id) a linked gas meter."""
    org = new_org(service)
    with service.client(org.key) as api:
        elec = org.meter(api, "electricity", "kWh", "Main Electric")
        gas = org.meter(api, "natural_gas", "therms", "Boiler Gas")
        water = org.meter(api, "water", "gallons", "Domestic Water")
        solar = org.meter(api, "solar", "kWh", "Roof PV")
        p2 = api.post(
            "/v1/properties",
            json={
                "name": "Annex",
                "address": {"street": "2 B St", "city": "Ann Arbor", "country": "US"},
                "type": "office",
                "internal_ref": "ANNEX-1",
            },
        ).json()["data"]
        b2 = api.post(
            f"/v1/properties/{p2['id']}/buildings",
            json={
                "name": "Annex",
                "primary_use_type": "office",
                "gfa_m2": 900,
                "year_built": 2001,
                "floors": 1,
            },
        ).json()["data"]
        r = api.post(
            f"/v1/buildings/{b2['id']}/meters",
            json={"type": "natural_gas", "unit": "ccf", "name": "Annex Gas"},
        )
        annex = r.json()["data"]["id"]
        for meter in (elec, gas, water, solar):
            monthly(api, org, meter, [_month(m, 100.0 + m) for m in (1, 2, 3)])
        r = api.post(
            f"/v1/buildings/{b2['id']}/meters/{annex}/readings/batch",
            json={"readings": [_month(m, 50.0 + m) for m in (1, 2)]},
        )
        assert r.json()["data"]["rejected"] == 0
    link_meter("default", "139067318", elec)
    link_meter("default", "ELEC-4471-0091", elec)  # a utility number: not a PM id
    link_meter("default", "139067329", gas)
    link_meter("default", "8003", annex)
    ids = {"elec": elec, "gas": gas, "water": water, "solar": solar, "annex": annex}
    return org, ids, p2["id"], b2["id"], service.base_url


def run(world, *args):  # type: ignore[no-untyped-def]
    org, _, _, _, url = world
    return invoke(*args, key=org.key, url=url)


def test_pm_bills_writes_lists_and_skips_on_the_next_export(world, tmp_path):  # type: ignore[no-untyped-def]
    _, ids, p2, _, _ = world
    out = tmp_path / "bills.xlsx"
    first = run(world, "export", "pm-bills", "-o", str(out))
    assert first.exit_code == 13, first.output  # the water meter holds readings: not linked
    text = first.stdout
    assert f"wrote 8 reading(s) to {out}" in text
    assert "Add Bills-Electricity: 3" in text and "Add Bills-Non Electric: 5" in text
    assert "Domestic Water" in text and "no PM Meter ID in the meter map" in text
    assert f"fix: bpsync meters link <PM Meter ID> {ids['water']}" in text
    assert "Roof PV" in text and "On-Site sheet" in text
    assert f"bpsync properties update {p2} --internal-ref <PM Property ID>" in text
    wb = openpyxl.load_workbook(out)
    gas = [[c.value for c in row] for row in wb["Add Bills-Non Electric"].iter_rows(min_row=2)]
    assert gas[0] == [
        8003,
        None,
        None,  # Annex has no PM Property ID: left empty, and said
        "Annex",
        "Annex Gas",
        "Natural Gas",
        dt.datetime(2024, 1, 1),
        dt.datetime(2024, 1, 31),
        51.0,
        "ccf (hundred cubic feet)",
        10.5,
        "No",
    ]
    assert gas[2][:3] == [139067329, None, 5227]
    ledger = json.loads(ledger_path("default").read_text())["bills"]
    assert ledger[ids["elec"]] == [
        "2024-01-01/2024-01-31",
        "2024-02-01/2024-02-29",
        "2024-03-01/2024-03-31",
    ]
    again = run(world, "--json", "export", "pm-bills", "-o", str(tmp_path / "again.xlsx"))
    body = json.loads(again.stdout)
    assert (body["readings"], body["already_exported"], body["file"]) == (0, 8, None)
    assert not (tmp_path / "again.xlsx").exists()
    everything = run(
        world, "--json", "export", "pm-bills", "--all", "-o", str(tmp_path / "all.xlsx")
    )
    assert json.loads(everything.stdout)["readings"] == 8
    assert (tmp_path / "all.xlsx").exists()


def test_pm_bills_scope_and_period(world, tmp_path):  # type: ignore[no-untyped-def]
    _, ids, p2, b2, _ = world

    def count(*args: str) -> dict:
        result = run(world, "--json", "export", "pm-bills", "--dry-run", *args)
        assert result.exit_code in (0, 13), result.output
        return json.loads(result.stdout)

    assert count("--meter", ids["elec"])["readings"] == 3
    assert count("--meter", ids["elec"], "--meter", ids["gas"])["readings"] == 6
    assert count("--building", b2)["readings"] == 2
    assert count("--property", p2)["readings"] == 2
    assert count("--property", p2, "--from", "2024-02-01")["readings"] == 1
    assert count("--to", "2024-01-31")["readings"] == 3
    assert count("--from", "2024-02-01", "--to", "2024-02-29")["readings"] == 3
    assert not list(tmp_path.glob("*.xlsx")) and not ledger_path("default").exists()  # dry runs
    elec_only = run(
        world, "export", "pm-bills", "--meter", ids["elec"], "-o", str(tmp_path / "e.xlsx")
    )
    assert elec_only.exit_code == 0 and "left out" not in elec_only.stdout  # nothing else in scope


def test_pm_bills_refusals_are_one_line(world, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "bills.xlsx"
    out.write_bytes(b"")
    exists = run(world, "export", "pm-bills", "-o", str(out))
    assert exists.exit_code == 7 and "give --force" in exists.stderr
    forced = run(world, "export", "pm-bills", "-o", str(out), "--force", "--profile", "default")
    assert forced.exit_code == 13 and openpyxl.load_workbook(out)
    unknown = run(world, "export", "pm-bills", "--meter", "mtr_nope", "--dry-run")
    assert unknown.exit_code == 5
    assert (
        unknown.stderr.strip().splitlines()[-1] == "error: no meter 'mtr_nope' in this organisation"
    )
    bad_date = run(world, "export", "pm-bills", "--from", "2024-13-01")
    assert bad_date.exit_code == 2 and "YYYY-MM-DD" in bad_date.output
    backwards = run(world, "export", "pm-bills", "--from", "2024-03-01", "--to", "2024-01-01")
    assert backwards.exit_code == 2 and "--to is before --from" in backwards.stderr
    not_xlsx = run(world, "export", "pm-bills", "-o", str(tmp_path / "bills.csv"))
    assert not_xlsx.exit_code == 2 and "must be an .xlsx file" in not_xlsx.stderr
    ledger_path("default").parent.mkdir(parents=True, exist_ok=True)
    ledger_path("default").write_text("{not json")
    broken = run(world, "export", "pm-bills", "--dry-run")
    assert broken.exit_code == 6 and "not a valid export ledger" in broken.stderr
    assert "Traceback" not in broken.output


def test_pm_meters(world, service, tmp_path):  # type: ignore[no-untyped-def]
    org, ids, p2, _, _ = world
    out = tmp_path / "meters.xlsx"
    result = run(world, "export", "pm-meters", "-o", str(out))
    assert result.exit_code == 13, result.output  # solar and the Annex's meters are left out
    assert f"wrote 1 meter(s) to {out}" in result.stdout
    assert "skipped 3 meter(s) already in Portfolio Manager" in result.stdout
    assert "Roof PV" in result.stdout and "CHP" not in result.stdout
    wb = openpyxl.load_workbook(out)
    ws = wb["Create Meters (Water)"]
    assert [c.value for c in ws[2]][:12] == [
        5227,
        "King Elementary",
        "Potable: Mixed Indoor/Outdoor",
        None,
        "Domestic Water",
        "Gallons (US)",
        dt.datetime(2024, 1, 1),
        "Yes",
        None,
        "Yes",
        "bpsync meter id",
        ids["water"],
    ]
    assert wb["Create Meters (Water)"].sheet_state == "visible"
    assert wb["Create Meters (Energy)"].sheet_state == "hidden"
    dry = run(world, "--json", "export", "pm-meters", "--dry-run", "--property", p2)
    body = json.loads(dry.stdout)
    assert body["meters"] == 0 and body["already_in_pm"] == 1 and body["file"] is None
    with service.client(org.key) as api:
        new = org.meter(api, "natural_gas", "therms", "New Boiler")
    fresh = run(
        world, "--json", "export", "pm-meters", "--meter", new, "-o", str(tmp_path / "n.xlsx")
    )
    body = json.loads(fresh.stdout)
    assert fresh.exit_code == 0 and body["meters"] == 1
    assert "has no stored reading" in body["notes"][0]
    row = [
        c.value for c in openpyxl.load_workbook(tmp_path / "n.xlsx")["Create Meters (Energy)"][2]
    ]
    assert row[:11] == [
        5227,
        "King Elementary",
        "Natural Gas",
        None,
        "New Boiler",
        "therms",
        None,
        "Yes",
        None,
        "Metered",
        "Yes",
    ]


def test_stored_readings_unchanged(world):  # type: ignore[no-untyped-def]
    """Exporting reads only: the service holds what it held."""
    org, ids, *_ = world

    with world_client(world) as api:
        before = stored(api, org, ids["elec"])
    assert run(world, "export", "pm-bills", "--dry-run").exit_code == 13
    with world_client(world) as api:
        assert stored(api, org, ids["elec"]) == before


def world_client(world):  # type: ignore[no-untyped-def]
    import httpx

    org, *_, url = world
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {org.key}"})


def test_pm_meters_default_file_force_building_profile(world, tmp_path):  # type: ignore[no-untyped-def]
    org, ids, _, _, _ = world
    default = tmp_path / f"pm_meters_{dt.date.today().isoformat()}.xlsx"  # the cwd
    first = run(world, "export", "pm-meters", "--meter", ids["water"])
    assert first.exit_code == 0 and default.exists(), first.output
    again = run(world, "export", "pm-meters", "--meter", ids["water"])
    assert again.exit_code == 7 and "give --force" in again.stderr
    forced = run(
        world,
        "-p",
        "default",
        "--json",
        "export",
        "pm-meters",
        "--building",
        org.building_id,
        "--force",
    )
    body = json.loads(forced.stdout)
    assert forced.exit_code == 13  # Roof PV (solar) is left out
    assert body["meters"] == 1 and body["already_in_pm"] == 2 and body["file"] == str(default)
    assert [x["meter"] for x in body["left_out"]] == ["Roof PV"]
    bills_default = run(world, "export", "pm-bills", "--meter", ids["gas"])
    assert bills_default.exit_code == 0
    assert (tmp_path / f"pm_bills_{dt.date.today().isoformat()}.xlsx").exists()
