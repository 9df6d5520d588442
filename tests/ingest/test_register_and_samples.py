"""The portfolio register, and every shipped sample file end to end."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.ingest import MeterCatalog, MeterInfo, check_file, plan_register, read_register
from tests.ingest.conftest import SAMPLES


@pytest.fixture(scope="module")
def register():
    return read_register(SAMPLES / "portfolio_register.xlsx")


@pytest.fixture(scope="module")
def catalog(register):
    metas, links = [], {}
    for i, m in enumerate(register.meters):
        metas.append(
            MeterInfo(f"mtr_{i}", m.payload["type"], m.payload["unit"], None, m.key[1], m.key[2])
        )
        links.update({ref: f"mtr_{i}" for ref, key in register.meter_links.items() if key == m.key})
    return MeterCatalog.build(metas, links)


def test_register_reads_clean(register):
    assert register.ok, register.problems
    assert [p.key for p in register.properties] == [("RP-001",), ("HP-002",)]
    tower = register.buildings[0]
    assert tower.payload["use_types"] == [
        {"type": "office", "gfa_m2": 15000},
        {"type": "retail", "gfa_m2": 3500},
    ]
    assert len(register.meters) == 7 and register.meter_links["8837461"][2] == "Main Electric"


def test_register_plan_is_idempotent(register):
    first = plan_register(register)
    assert {a.op for a in first} == {"create"}
    existing_props = [
        {"id": f"prp_{i}", **a.payload} for i, a in enumerate(first) if a.kind == "property"
    ]
    by_ref = {p["internal_ref"]: p["id"] for p in existing_props}
    buildings, meters = {}, {}
    for i, a in enumerate(first):
        if a.kind == "building":
            buildings.setdefault(by_ref[a.parent[0]], []).append({"id": f"bld_{i}", **a.payload})
    bld = {
        (a.parent[0], a.key[1]): b["id"]
        for a in first
        if a.kind == "building"
        for b in buildings[by_ref[a.parent[0]]]
        if b["name"] == a.key[1]
    }
    for i, a in enumerate(first):
        if a.kind == "meter":
            meters.setdefault(bld[a.parent], []).append({"id": f"mtr_{i}", **a.payload})
    again = plan_register(register, existing_props, buildings, meters)
    assert {a.op for a in again} == {"unchanged"}
    existing_props[0]["name"] = "Old name"
    changed = plan_register(register, existing_props, buildings, meters)
    update = [a for a in changed if a.op == "update"]
    assert [(a.kind, a.payload) for a in update] == [("property", {"name": "Riverside Park"})]


def test_deliberate_errors_register(tmp_path):
    reg = read_register(SAMPLES / "deliberate_errors.xlsx")
    got = {(p.code, p.sheet, p.row, p.column) for p in reg.problems}
    assert got == {
        ("register_invalid", "Properties", 3, "Country"),
        ("register_invalid", "Properties", 4, "Street"),
        ("register_invalid", "Buildings", 3, "Property Ref"),
        ("use_types_gfa_mismatch", "Use Types", 2, "Floor Area (m²)"),
    }


@pytest.mark.parametrize(
    ("name", "template", "readings", "meters"),
    [
        ("bills_workbook.xlsx", "utility_service_period", 38, 4),
        ("pm_add_bills.xlsx", "pm_add_bills", 24, 2),
        ("wide_monthly_usage.xlsx", "wide_monthly_usage", 36, 3),
        ("utility_read_dates.csv", "utility_read_date_days", 24, 2),
        ("green_button.xml", "green_button", 2, 1),
    ],
)
def test_samples_import_cleanly(catalog, name, template, readings, meters):
    prepared, result = check_file(SAMPLES / name, catalog=catalog, today=dt.date(2025, 1, 15))
    assert prepared.template.name == template
    assert not result.errors, result.errors
    assert result.accepted_count == readings and result.summary()["meters"] == meters


def test_utility_csv_is_cp1252_day_first_with_pounds(catalog):
    prepared, result = check_file(SAMPLES / "utility_read_dates.csv", catalog=catalog)
    assert prepared.table.encoding == "cp1252" and "dates read day-first" in prepared.notes
    first = next(result.all_candidates())
    assert (first.start, first.end, first.unit) == (
        dt.date(2023, 1, 1),
        dt.date(2023, 1, 31),
        "kWh",
    )
    assert (first.consumption, first.cost, first.currency) == (99797.7, 27943.36, "GBP")
    assert first.payload()["cost_currency"] == "GBP"


def test_deliberate_errors_bills(catalog):
    _, result = check_file(
        SAMPLES / "deliberate_errors.xlsx", catalog=catalog, today=dt.date(2025, 1, 15)
    )
    errors = {(p.code, p.row) for p in result.errors}
    assert errors == {
        ("overlap", 2),
        ("overlap", 3),
        ("unknown_meter", 5),
        ("bad_date", 6),
        ("end_before_start", 7),
        ("bad_consumption", 8),
        ("unit_mismatch", 11),
        ("missing_date", 12),
    }
    warnings = {(p.code, p.row) for p in result.warnings}
    assert ("negative", 4) in warnings and ("duplicate_row", 10) in warnings
    assert all(p.row_values for p in result.errors)
