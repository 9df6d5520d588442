"""Portfolio Manager as it really is (issue 27 items 6-7): real PM upload templates, exports and
downloads imported with the plain documented commands (`bpsync register import FILE` where the
file lists properties or meters, `bpsync import FILE` for readings; shipped templates only).

Every expected reading is derived here from the workbook with openpyxl, by PM's conventions and
the PROVENANCE rules, never from bpsync's output: a PM export either writes inclusive periods or
End Date = next Start Date, which the data prove (a meter's consecutive bills share their boundary
day) and which gives an inclusive end one day earlier; a reading is stored in its file's unit
(PM's unit names mean the same unit in the service); "Not Available" is no value.

Accounting (item 6): rows read = stored + refused (with a reason) + skipped (with a reason). The
command reports what it stored and refused; the engine (`prepare`, no network) reports every
skipped row as a notice with its reason, and the row count it read."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from bpsync.ingest import prepare
from bpsync.ingest.send.results import reject_report_path
from tests.real_inputs.conftest import Org

# PM's names (as these files write them) → the service's, for the test's own expectations.
TYPES = {
    "Electric - Grid": "electricity",
    "Electricity - Grid Purchase": "electricity",
    "Natural Gas": "natural_gas",
    "District Steam": "steam",
    "District Hot Water": "district_heating",
    "Potable Indoor": "water",
    "Potable Outdoor": "water",
    "Reclaimed Indoor": "water",
    "Diesel": "diesel",
}
UNITS = {
    "kBtu (thousand Btu)": "kBtu",
    "KGal (thousand gallons) (US)": "kgal",
    "kGal (thousand gallons) (US)": "kgal",
    "kWh (thousand Watt-hours)": "kWh",
    "therms": "therms",
    "Gallons (US)": "gallons",
    "ccf (hundred cubic feet)": "ccf",
}
DAY = dt.timedelta(days=1)


# -- the workbook, read independently ---------------------------------------------------------


def _clean(header: object) -> str:
    """A header cell without PM's tags, spaces collapsed ("Meter ID\\n(Pre-filled)" → "Meter ID")."""
    text = re.sub(r"\((Pre-filled|Required|Optional)\)", " ", str(header or ""))
    return " ".join(text.split())


def sheet_rows(path: Path, sheet: str, first: str) -> list[dict[str, Any]]:
    """The rows under the header whose first cell is `first`, as {header: value}; blank rows
    and the title lines above the header are left out."""
    wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        ws = wb[sheet]
        ws.reset_dimensions()  # PM writes a wrong sheet dimension; read every row there is
        rows: Iterator[tuple] = ws.iter_rows(values_only=True)
        header = next(r for r in rows if r and _clean(r[0]) == first)
        keys = [_clean(h) for h in header]
        out, blank_run = [], 0
        for r in rows:
            if any(c is not None and str(c).strip() for c in r):
                out.append(dict(zip(keys, r, strict=False)))
                blank_run = 0
            else:
                blank_run += 1
                if blank_run == 500:  # formatted empty rows to the sheet's end (19,000 here)
                    break
        return out
    finally:
        wb.close()


def _date(value: object) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else dt.date.fromisoformat(str(value))


def _number(value: object) -> float | None:
    if value is None or str(value).strip() in ("", "Not Available"):
        return None
    return float(str(value).replace(",", ""))


def _ref(value: object) -> str:
    """A PM id as PM shows it: ids stored as floats (139774699.0) are whole numbers."""
    return str(int(value)) if isinstance(value, float) else str(value).strip()


def expected_bills(
    rows: list[dict[str, Any]], meter: str = "Portfolio Manager Meter ID", usage="Usage/Quantity"
) -> dict[str, list[tuple]]:
    """{PM meter id: [(start, inclusive end, usage, cost)]} by PM's conventions: the export is
    End Date = next Start Date when its meters' consecutive bills share their boundary day (then
    every end is one day earlier), inclusive otherwise."""
    by_meter: dict[str, list[tuple]] = {}
    for r in rows:
        by_meter.setdefault(_ref(r[meter]), []).append(
            (
                _date(r["Start Date"]),
                _date(r["End Date"]),
                _number(r[usage]),
                _number(r.get("Cost ($)", r.get("Cost"))),
            )
        )
    shared = any(
        a[1] == b[0]
        for bills in by_meter.values()
        for a, b in zip(sorted(bills), sorted(bills)[1:], strict=False)
    )
    return {
        m: sorted((s, e - DAY if shared else e, u, c) for s, e, u, c in bills)
        for m, bills in by_meter.items()
    }


def engine(path: Path, sheet: str | None = None) -> tuple[int, Counter, Counter]:
    """(rows read, notices by code, errors by code) of the engine's pure half (no meters known,
    so no unknown_meter): every skipped row is a notice naming why."""
    prepared = prepare(path, "auto", sheet=sheet)
    problems = prepared.collected.problems
    notices = Counter(p.code for p in problems if p.severity == "notice")
    errors = Counter(p.code for p in problems if p.is_error)
    return prepared.collected.rows_read, notices, errors


def held(org: Org) -> dict[str, dict[str, Any]]:
    """{property internal_ref: {"property", "buildings", "meters"}} of what the service holds."""
    out: dict[str, dict[str, Any]] = {}
    with org.api() as api:
        for p in api.get("/v1/properties", params={"per_page": 200}).json()["data"]:
            if not p.get("internal_ref"):
                continue
            bs = api.get(f"/v1/properties/{p['id']}/buildings").json()["data"]
            ms = [
                m
                for b in bs
                for m in api.get(
                    f"/v1/buildings/{b['id']}/meters", params={"per_page": 200}
                ).json()["data"]
            ]
            out[p["internal_ref"]] = {"property": p, "buildings": bs, "meters": ms}
    return out


def register(org: Org, path: Path) -> dict[str, Any]:
    import json

    result = org.bpsync("--json", "register", "import", str(path))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def stored_by_ref(org: Org, links: dict[str, tuple[str, str]]) -> dict[str, list[tuple]]:
    """{reference: [(start, end, consumption, cost)]} of the meters `links` names, read back in
    one list per 200 meters (`GET /v1/readings?filter[meter_id]=…`, decisions C3)."""
    ids = {mid: ref for ref, (mid, _) in links.items()}
    out: dict[str, list[tuple]] = {ref: [] for ref in links}
    with org.api() as api:
        page = 1
        while True:
            r = api.get(
                "/v1/readings",
                params={"filter[meter_id]": ",".join(ids), "per_page": 1000, "page": page},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            for x in body["data"]:
                out[ids[x["meter_id"]]].append(
                    (
                        dt.date.fromisoformat(x["start_date"]),
                        dt.date.fromisoformat(x["end_date"]),
                        x["consumption"],
                        x["cost"],
                    )
                )
            if page >= body["meta"]["total_pages"]:
                break
            page += 1
    return {ref: sorted(v) for ref, v in out.items()}


def link_pm_meters(
    org: Org,
    bills: dict[str, list[tuple]],
    rows: list[dict[str, Any]],
    meter_col: str,
    unit_col: str,
) -> dict[str, tuple[str, str]]:
    """Meters as a facility manager registers them: a register workbook of their own (one
    property, one building) listing each meter with the type and unit PM states and its PM
    meter id, imported with `bpsync register import` (which links the ids)."""
    meters: dict[str, list] = {}
    for r in rows:
        ref = _ref(r[meter_col])
        if ref in bills and ref not in meters:
            meters[ref] = [
                "FM",
                "Plant",
                f"PM {ref}",
                TYPES[r["Meter Type"]],
                UNITS[r[unit_col]],
                ref,
            ]
    path = org.workdir / "fm_register.xlsx"
    wb = openpyxl.Workbook()
    sheets = {
        "Properties": [
            ["Property Ref", "Property Name", "Street", "City", "Country", "Property Type"],
            ["FM", "Facilities", "1 Main St", "Washington", "US", "office"],
        ],
        "Buildings": [
            [
                "Property Ref",
                "Building Name",
                "Primary Use Type",
                "Gross Floor Area (m²)",
                "Year Built",
                "Floors",
            ],
            ["FM", "Plant", "office", 5000, 1970, 4],
        ],
        "Meters": [
            ["Property Ref", "Building Name", "Meter Name", "Meter Type", "Unit", "PM Meter ID"],
            *meters.values(),
        ],
    }
    wb.remove(wb.active)
    for title, table in sheets.items():
        ws = wb.create_sheet(title)
        for line in table:
            ws.append(line)
    wb.save(path)
    register(org, path)
    [fm] = [h for ref, h in held(org).items() if ref == "FM"]
    ids = {m["name"]: m["id"] for m in fm["meters"]}
    building = fm["buildings"][0]["id"]
    return {ref: (ids[f"PM {ref}"], building) for ref in meters}


# -- the files ---------------------------------------------------------------------------------


def test_espm_bps_sample_meter_readings(org: Org):
    """PM's Meter Entries export of 17 meters (kBtu; 'Not Available' costs): with every meter
    registered by the facility manager, all 579 entries are stored with the inclusive periods
    the data show and no cost where PM has none."""
    path = org.copy("set1/ESPM_BPS_Sample_Meter_Readings.xlsx")
    rows = sheet_rows(path, "Meter Entries", "Property Name")
    known = expected_bills(rows)
    links = link_pm_meters(org, known, rows, "Portfolio Manager Meter ID", "Usage Units")
    out = org.import_json(str(path))
    assert (out["accepted"], out["rejected"], len(known)) == (len(rows), 0, 17)
    assert len(rows) == 579 and out["accounting"]["with_readings"] == 579
    assert stored_by_ref(org, links) == known
    assert known["139067318"][0] == (dt.date(2019, 1, 1), dt.date(2019, 1, 31), 274925.3, None)
    assert engine(path) == (579, Counter(), Counter())


def test_has_meters_two_buildings(org: Org):
    """A PM download of two properties (faker names): `register import` of its Properties and
    Meters sheets (PM's own columns), then its 104 entries, water ones (Potable Indoor/Outdoor,
    refused as unknown types before) included; End Date = next Start Date."""
    path = org.copy("set1/Has_Meters_two_buildings.xlsx")
    reg = register(org, path)
    assert reg["created"] == {"property": 2, "building": 2, "meter": 5}
    holding = held(org)
    moreno = holding["1508802"]
    [building] = moreno["buildings"]
    assert (building["name"], building["gfa_m2"], building["year_built"], building["floors"]) == (
        "Moreno and Sons",
        round(53674 / 10.7639, 2),
        2004,
        1,
    )
    assert holding["27546598"]["property"]["type"] == "warehouse"
    meter_rows = sheet_rows(path, "Meters", "Property Name")
    types = {(m["name"], m["type"], m["unit"]) for m in moreno["meters"]}
    assert types == {
        (r["Meter Name"], TYPES[r["Meter Type"]], UNITS[r["Units"]]) for r in meter_rows
    }
    out = org.import_json(str(path))
    rows = sheet_rows(path, "Meter Entries", "Property Name")
    bills = expected_bills(rows)
    assert (out["accepted"], out["rejected"]) == (len(rows), 0) == (104, 0)
    names = {_ref(r["Portfolio Manager Meter ID"]): r["Meter Name"] for r in meter_rows}
    ids = {m["name"]: m["id"] for m in moreno["meters"]}
    got = {ref: org.stored(ids[names[ref]], building["id"]) for ref in bills}
    assert got == bills
    water = bills["56714050"]  # Potable Indoor, kGal: each bill ends the day before the next
    assert all(a[1] + DAY == b[0] for a, b in itertools.pairwise(water))


def test_monthly_usage_report_reads_month_and_grid_electricity(org: Org):
    """PM's "Report with Meters" Monthly Usage sheet: a property's grid electricity per calendar
    month (kBtu in the header); "Not Available" months are skipped with that reason."""
    path = org.copy("set1/example-pm-data-request-with-meters-new-format.xlsx")
    rows = sheet_rows(path, "Monthly Usage", "Portfolio Manager Property ID")
    meter = org.meter("electricity", "kBtu", "Grid", ref="4544232")
    out = org.import_json(str(path))
    assert out["template"] == "pm_monthly_usage"
    expected = []
    for r in rows:
        value = _number(r["Electricity Use (Grid) - Monthly (kBtu)"])
        if value is None:
            continue
        first = dt.datetime.strptime(r["Month"], "%b-%y").date()
        last = (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - DAY
        expected.append((first, last, value, None))
    assert (
        org.stored(meter)
        == expected
        == [
            (dt.date(2016, 1, 1), dt.date(2016, 1, 31), 85887.1, None),
            (dt.date(2016, 2, 1), dt.date(2016, 2, 29), 175697.3, None),
        ]
    )
    assert (out["accepted"], out["rejected"]) == (2, 0)
    assert engine(path) == (4, Counter({"no_usage": 2}), Counter())


def test_unknown_types_and_units_are_refused_the_rest_stored(org: Org):
    """SEED's fixture with injected unknown meter types and units: those rows are refused with a
    row-level reason, the others stored (End Date = next Start Date)."""
    path = org.copy("set1/example-pm-monthly-meter-usage-with-unknown-types-and-units.xlsx")
    rows = sheet_rows(path, "Meter Entries", "Property Name")
    good = [r for r in rows if r["Meter Type"] in TYPES and r["Usage Units"] in UNITS]
    bad = [r for r in rows if r not in good]
    assert (len(good), len(bad)) == (4, 4)
    all_bills = expected_bills(rows)  # the convention is the export's, from all its rows
    links = {}
    for ref in ("5766973-0", "5766975-0"):
        links[ref] = (org.meter("electricity", "kBtu", ref, ref=ref), org.building_id)
    for ref in ("5766973-1", "5766975-1"):
        links[ref] = (org.meter("natural_gas", "kBtu", ref, ref=ref), org.building_id)
    out = org.import_json(str(path), exit_code=13)
    assert (out["accepted"], out["rejected"]) == (4, 4)
    refused = {(p["row"], p["code"]) for p in out["problems"] if p["severity"] == "error"}
    assert refused == {
        (7 + rows.index(r), "unknown_unit") for r in bad if r["Usage Units"] not in UNITS
    } | {(7 + rows.index(r), "unknown_meter_type") for r in bad if r["Meter Type"] not in TYPES}
    good_keys = {(_ref(r["Portfolio Manager Meter ID"]), _date(r["Start Date"])) for r in good}
    expected = {
        ref: [b for b in bills if (ref, b[0]) in good_keys] for ref, bills in all_bills.items()
    }
    assert stored_by_ref(org, links) == expected
    assert expected["5766975-1"] == [(dt.date(2016, 2, 1), dt.date(2016, 2, 29), 496310.9, None)]


def test_single_property_download_registers_its_property_and_meters(org: Org):
    """A single-property download: `register import` of its `Property` and `Meters` sheets
    (two meters both named "Master Meter", told apart by PM meter id), then its entries."""
    path = org.copy("set1/portfolio-manager-single-22482007.xlsx")
    reg = register(org, path)
    assert reg["created"] == {"property": 1, "building": 1, "meter": 2}
    assert any("1 floor" in rule for rule in reg["rules"])
    school = held(org)["22482007"]
    assert (school["property"]["type"], school["property"]["address"]["city"]) == (
        "education",
        "WASHINGTON",
    )
    [building] = school["buildings"]
    assert (building["gfa_m2"], building["year_built"]) == (round(127991 / 10.7639, 2), 1924)
    ids = {m["name"]: m["id"] for m in school["meters"]}
    assert set(ids) == {"Master Meter", "Master Meter (PM 139774700)"}
    out = org.import_json(str(path))
    rows = sheet_rows(path, "Meter Entries", "Property Name")
    bills = expected_bills(rows)
    assert (out["accepted"], out["rejected"]) == (len(rows), 0) == (72, 0)
    assert org.stored(ids["Master Meter"], building["id"]) == bills["139774699"]
    assert org.stored(ids["Master Meter (PM 139774700)"], building["id"]) == bills["139774700"]
    again = register(org, path)  # idempotent; the placeholder floors are never an update
    assert again["created"] == {"property": 0, "building": 0, "meter": 0}
    assert again["updated"] == {"property": 0, "building": 0, "meter": 0}


def test_add_meters_create_meters_template(org: Org):
    """PM's "Create Meters" upload template: `register import` reads its visible Create Meters
    sheet and puts each meter in the building of the property whose ref is its PM id."""
    path = org.copy("set1/Add_Meters.xlsx")
    rows = sheet_rows(path, "Create Meters (Energy)", "Portfolio Manager ID")
    buildings = {}
    with org.api() as api:
        for pm_id, name in dict.fromkeys(
            (_ref(r["Portfolio Manager ID"]), r["Property Name"]) for r in rows
        ):
            prop = api.post(
                "/v1/properties",
                json={
                    "name": name,
                    "address": {"street": "1 A St", "city": "Washington", "country": "US"},
                    "type": "office",
                    "internal_ref": pm_id,
                },
            ).json()["data"]
            b = api.post(
                f"/v1/properties/{prop['id']}/buildings",
                json={
                    "name": name,
                    "primary_use_type": "office",
                    "gfa_m2": 1000,
                    "year_built": 1990,
                    "floors": 3,
                },
            ).json()["data"]
            buildings[pm_id] = b["id"]
    reg = register(org, path)
    assert (
        reg["created"]
        == {"property": 0, "building": 0, "meter": len(rows)}
        == {"property": 0, "building": 0, "meter": 17}
    )
    expected: dict[str, set] = {}
    for r in rows:
        names = expected.setdefault(_ref(r["Portfolio Manager ID"]), set())
        name = r["Meter Name"]
        if any(n == name for n, _, _ in names):
            name = f"{name} ({r['Meter Type']})"  # PM allows one name twice; its type tells
        names.add((name, TYPES[r["Meter Type"]], UNITS[r["Units"]]))
    got = {
        ref: {(m["name"], m["type"], m["unit"]) for m in h["meters"]}
        for ref, h in held(org).items()
    }
    assert got == expected
    assert ("Master Meter (District Steam)", "steam", "kBtu") in got["22178843"]


def test_add_bills_to_meters_both_sheets(org: Org):
    """PM's Add Bills template (v2.0) filled for 17 meters on two visible sheets of one layout:
    the plain import takes both, sheet by sheet; kBtu for electricity, gas and steam."""
    path = org.copy("set1/Add_Bills_to_Meters.xlsx")
    electric = sheet_rows(path, "Add Bills-Electricity", "Meter ID")
    other = sheet_rows(path, "Add Bills-Non Electric", "Meter ID")
    known = expected_bills(electric, "Meter ID", "Usage") | expected_bills(
        other, "Meter ID", "Quantity"
    )
    links = link_pm_meters(org, known, electric + other, "Meter ID", "Meter Unit")
    out = org.import_json(str(path))
    assert (len(electric), len(other), len(known)) == (324, 255, 17)
    assert (out["accepted"], out["rejected"]) == (324 + 255, 0)
    assert out["accounting"]["rows_read"] == 324 + 255
    assert "'Add Bills-Electricity', 'Add Bills-Non Electric' share one layout" in out["notes"][0]
    assert stored_by_ref(org, links) == known
    assert known["139179128"][0] == (dt.date(2019, 1, 1), dt.date(2019, 12, 31), 3046884.0, None)
    name = reject_report_path(path, "Add Bills-Electricity").name
    assert name == "Add_Bills_to_Meters.Add Bills-Electricity.rejects.xlsx"  # one per sheet
    again = org.import_json(str(path), "--sheet", "Add Bills-Non Electric")
    # that sheet was imported by the plain command: nothing is sent twice
    assert again["status"] == "no-op" and again["requests"] == 0
    assert stored_by_ref(org, links) == known
    assert engine(path) == (324, Counter(), Counter())


def test_testinput1_2015_my_portfolio_download(org: Org):
    """The 2015 "My Portfolio" download: `register import` of its Properties and Meters sheets
    (PM's 2015 type names, `KGal (thousand gallons) (US)`), then its 108 entries, each carrying
    a Meter Consumption ID (a download: stored), End Date = next Start Date."""
    path = org.copy("set2/testInput1.xlsx")
    reg = register(org, path)
    assert reg["created"] == {"property": 2, "building": 2, "meter": 9}
    holding = held(org)
    meter_rows = sheet_rows(path, "Meters", "Property Name")
    by_ref = {}
    for r in meter_rows:
        h = holding[_ref(r["Portfolio Manager ID"])]
        [m] = [m for m in h["meters"] if m["name"] == r["Meter Name"]]
        assert (m["type"], m["unit"]) == (TYPES[r["Meter Type"]], UNITS[r["Units"]])
        by_ref[_ref(r["Portfolio Manager Meter ID"])] = (m["id"], h["buildings"][0]["id"])
    out = org.import_json(str(path))
    rows = sheet_rows(path, "Meter Consumption Data", "Property Name")
    bills = expected_bills(rows)
    assert (out["accepted"], out["rejected"]) == (len(rows), 0) == (108, 0)
    assert stored_by_ref(org, by_ref) == bills
    water = bills["16873485"]  # Potable Indoor, kgal
    assert water[0] == (dt.date(2014, 11, 1), dt.date(2014, 11, 30), 4.0, 8.0)
    assert water[-1][:2] == (dt.date(2015, 10, 1), dt.date(2015, 10, 31))


def test_aaps_add_bills_template_prefilled_rows_skipped(org: Org):
    """PM's Add Bills template generated for 93 gas meters: the 92 pre-filled most-recent bills
    carry a Meter Consumption ID (PM does not insert them: skipped with that reason), the 93
    new-bill rows are blank; nothing is stored and nothing is an error."""
    path = org.copy("set2/Add_Bills_to_Meters_AAPS_Historical.xlsx")
    rows = sheet_rows(path, "Add Bills-Non Electric", "Meter ID")
    prefilled = [r for r in rows if r["Meter Consumption ID"] is not None]
    blank = [r for r in rows if r["Meter Consumption ID"] is None and r["Start Date"] is None]
    assert (len(prefilled), len(blank), len(rows)) == (92, 93, 185)
    for r in rows[:4]:  # the facility manager's meters, in therms and ccf
        ref = _ref(r["Meter ID"])
        if ref not in org.meters:
            org.meter("natural_gas", UNITS[r["Meter Unit"]], ref, ref=ref)
    out = org.import_json(str(path))
    assert (out["accepted"], out["rejected"], out["problems"]) == (0, 0, [])
    # Every row accounted for, with the reason each was skipped (issue 27 item 6).
    assert out["skipped"] == 185
    assert out["accounting"] == {
        "rows_read": 185,
        "with_readings": 0,
        "refused": 0,
        "skipped": {"already_in_source": 92, "no_entry": 93},
        "nothing_to_import": 0,
    }
    dry = org.bpsync("import", str(path), "--dry-run", "--force")
    said = " ".join(dry.output.split())
    assert "rows read 185: 0 with readings, 0 refused, 185 skipped (92 already in Portfolio" in said
    assert "93 blank template rows)" in said
    assert all(org.stored(mid) == [] for mid in org.meters.values())
    assert engine(path) == (
        185,
        Counter({"already_in_source": 92, "no_entry": 93}),
        Counter(),
    )


@pytest.fixture(autouse=True)
def _quiet_openpyxl(recwarn: pytest.WarningsRecorder) -> None:
    """openpyxl warns about PM's data-validation extensions; they change nothing read here."""
