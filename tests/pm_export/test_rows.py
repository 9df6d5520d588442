"""The pure part: which links are PM ids, which unit a meter is written in, what is left out."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.pm_export import layout as L
from bpsync.pm_export.rows import (
    Bill,
    MeterRow,
    PropertyRow,
    plan_bills,
    plan_meters,
    pm_id,
    pm_meter_ids,
    pm_unit,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("139067318", "139067318"),
        (" 8003 ", "8003"),
        ("8003.0", "8003"),  # a workbook cell read as a float
        (8003, "8003"),
        ("008262223", None),  # a leading zero: a utility number, never a PM id
        ("ELEC-4471-0091", None),
        ("", None),
        (None, None),
        ("12.5", None),
    ],
)
def test_pm_id(text, expected):  # type: ignore[no-untyped-def]
    assert pm_id(text) == expected


def test_pm_meter_ids_keeps_only_numeric_links():  # type: ignore[no-untyped-def]
    links = {"139067318": "mtr_a", "ELEC-1": "mtr_a", "9": "mtr_b", "10": "mtr_b", "0042": "mtr_c"}
    assert pm_meter_ids(links) == {"mtr_a": ["139067318"], "mtr_b": ["9", "10"]}


@pytest.mark.parametrize(
    ("kind", "unit", "label", "written"),
    [
        ("electricity", "kWh", "kWh (thousand Watt-hours)", "kWh"),
        ("electricity", "Wh", "kWh (thousand Watt-hours)", "kWh"),
        ("electricity", "MJ", "GJ", "GJ"),
        ("electricity", "therms", "kBtu (thousand Btu)", "kBtu"),
        ("natural_gas", "kWh", "kBtu (thousand Btu)", "kBtu"),
        ("natural_gas", "m3", "cm (cubic meters)", "m3"),
        ("steam", "Mlbs", "kLbs. (thousand pounds)", "Mlbs"),  # the service's Mlbs = 1,000 lb
        ("water", "kgal", "kGal (thousand gallons) (US)", "kgal"),
        ("lpg", "kg", "kBtu (thousand Btu)", "kBtu"),
    ],
)
def test_pm_unit(kind, unit, label, written):  # type: ignore[no-untyped-def]
    got = pm_unit(kind, unit)
    assert got is not None and (got.label, got.unit) == (label, written)
    assert got.label in L.KINDS[kind].units
    assert (got.factor is None) == (unit == written)


def test_kwh_gas_is_converted_with_the_imports_factor():  # type: ignore[no-untyped-def]
    got = pm_unit("natural_gas", "kWh")
    assert got is not None and got.factor == pytest.approx(1 / 0.293071)
    assert pm_unit("solar", "kWh") is None and pm_unit("waste_landfill", "kg") is None


PROP = PropertyRow("prp_1", "HQ", "22178843")


def _meter(i: str, kind: str = "electricity", building: str = "Main", name: str | None = None):  # type: ignore[no-untyped-def]
    return MeterRow(f"mtr_{i}", kind, "kWh", "prp_1", f"bld_{building}", name or i, building)


def test_ambiguous_links_are_left_out_with_a_fix():  # type: ignore[no-untyped-def]
    meter = _meter("a")
    bill = Bill("mtr_a", dt.date(2024, 1, 1), dt.date(2024, 1, 31), 5.0)
    plan = plan_bills([PROP], [meter], [bill], {"111": "mtr_a", "222": "mtr_a"})
    assert plan.readings == 0
    (out,) = plan.left_out
    assert out.readings == 1 and "111, 222" in out.reason
    assert out.fix == "bpsync meters link 222 --remove"


def test_estimated_where_known():  # type: ignore[no-untyped-def]
    bills = [
        Bill("mtr_a", dt.date(2024, 1, 1), dt.date(2024, 1, 31), 5.0, estimated=True),
        Bill("mtr_a", dt.date(2024, 2, 1), dt.date(2024, 2, 29), 6.0),
    ]
    plan = plan_bills([PROP], [_meter("a")], bills, {"7": "mtr_a"})
    rows = plan.sheets[L.ELECTRICITY]
    assert [r[13] for r in rows] == ["Yes", "No"] and [r[14] for r in rows] == ["No", "No"]


def test_meter_names_made_unique_within_a_pm_property():  # type: ignore[no-untyped-def]
    meters = [_meter("a", building="East", name="Main"), _meter("b", building="West", name="Main")]
    plan = plan_meters([PROP], meters, {}, {})
    names = [r[4] for r in plan.sheets[L.CREATE_ENERGY]]
    assert names == ["Main (East)", "Main (West)"]
    assert all(r[6] is None for r in plan.sheets[L.CREATE_ENERGY])
    assert len(plan.notes) == 2 and "no stored reading" in plan.notes[0]
