"""The exported workbooks against PM's real templates in ../shared/real-inputs (set 1's
Add_Bills_to_Meters.xlsx and Add_Meters.xlsx, set 2's Add_Bills_to_Meters_AAPS_Historical.xlsx):
sheet names and order, header rows and column names, list validations and the lists they name,
meter types and unit labels. Skipped where ../shared is absent."""

from __future__ import annotations

import datetime as dt
import re
import warnings
from pathlib import Path

import pytest

from bpsync.pm_export import layout as L
from bpsync.pm_export.rows import Bill, MeterRow, PropertyRow, plan_bills, plan_meters
from bpsync.pm_export.workbook import write_bills, write_meters
from tests.pm_export.conftest import REAL

BILLS = [
    REAL / "set1" / "Add_Bills_to_Meters.xlsx",
    REAL / "set2" / "Add_Bills_to_Meters_AAPS_Historical.xlsx",
]
METERS = REAL / "set1" / "Add_Meters.xlsx"

pytestmark = pytest.mark.skipif(
    not all(p.exists() for p in [*BILLS, METERS]),
    reason=f"PM's real templates are not here ({REAL}): ../shared is absent",
)


def _load(path: Path):  # type: ignore[no-untyped-def]
    import openpyxl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Data Validation extension is not supported"
        return openpyxl.load_workbook(path)


def _headers(ws, rows: int) -> list[list]:  # type: ignore[no-untyped-def]
    out = []
    for r in range(1, rows + 1):
        cells = [c.value for c in ws[r]]
        while cells and cells[-1] is None:
            cells.pop()
        out.append(cells)
    return out


def _lists(ws) -> set[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    """(column, first row, list) of every list validation; a units list is named by its role."""
    found = set()
    for dv in ws.data_validations.dataValidation:
        if dv.type != "list":
            continue
        for rng in str(dv.sqref).split():
            col, row = re.match(r"([A-Z]+)(\d+)", rng).groups()  # type: ignore[union-attr]
            formula = dv.formula1
            if ws.title == L.CREATE_ENERGY and col == "F":
                formula, row = L.UNITS, "2"  # PM: ELECTRICUnits / AllEnergyUnits by rows
            found.add((col, int(row), formula))
    return found


def _named(wb, name: str) -> list:  # type: ignore[no-untyped-def]
    sheet, ref = wb.defined_names[name].attr_text.split("!")
    cells = wb[sheet][ref.replace("$", "")]
    cells = cells if isinstance(cells, tuple) else ((cells,),)
    return [c.value for row in cells for c in (row if isinstance(row, tuple) else (row,))]


@pytest.fixture(scope="module")
def ours(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Both workbooks, written with one meter of every kind PM has bills for."""
    root = tmp_path_factory.mktemp("layout")
    prop = PropertyRow("prp_1", "Office One", "22178843")
    meters = [
        MeterRow(f"mtr_{i}", kind, unit, "prp_1", "bld_1", f"{kind}", "Main")
        for i, (kind, unit) in enumerate(
            [
                ("electricity", "kWh"),
                ("natural_gas", "therms"),
                ("steam", "klbs"),
                ("district_heating", "GJ"),
                ("district_cooling", "ton_hours"),
                ("fuel_oil", "gallons"),
                ("diesel", "litres"),
                ("lpg", "gallons"),
                ("water", "kgal"),
            ]
        )
    ]
    bills = [Bill(m.id, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 10.0) for m in meters]
    links = {str(100 + i): m.id for i, m in enumerate(meters)}
    bills_path = write_bills(plan_bills([prop], meters, bills, links), root / "bills.xlsx", "test")
    meters_path = write_meters(
        plan_meters([prop], meters, {}, {m.id: dt.date(2024, 1, 1) for m in meters}),
        root / "meters.xlsx",
        "test",
    )
    return _load(bills_path), _load(meters_path)


@pytest.mark.parametrize("real", BILLS, ids=lambda p: p.name)
def test_bills_sheets_headers_and_validations(ours, real):  # type: ignore[no-untyped-def]
    mine, theirs = ours[0], _load(real)
    assert mine.sheetnames == theirs.sheetnames == list(L.BILL_SHEETS)
    for name, header_rows in L.HEADERS.items():
        if name not in theirs.sheetnames:
            continue
        rows = len(header_rows)
        assert _headers(mine[name], rows) == _headers(theirs[name], rows), name
        assert _lists(mine[name]) == _lists(theirs[name]), name
    for list_name in L.BILL_LIST_NAMES:
        assert _named(mine, list_name) == _named(theirs, list_name)


def test_bills_meter_types_are_pms(ours):  # type: ignore[no-untyped-def]
    theirs = _load(BILLS[0])["Validation"]
    known = {c.value for col in ("F", "G") for c in theirs[col] if c.value}
    assert {k.bills_type for k in L.KINDS.values()} <= known
    ws = ours[0]
    units = {ws[s].cell(r, 10).value for s in (L.NON_ELECTRIC, L.WATER) for r in range(2, 10)}
    units.discard(None)
    assert units and units <= {u for lst in L.UNIT_LISTS.values() for u in lst}


def test_meters_sheets_headers_and_validations(ours):  # type: ignore[no-untyped-def]
    mine, theirs = ours[1], _load(METERS)
    assert mine.sheetnames == theirs.sheetnames == list(L.METER_SHEETS)
    for name in L.METER_SHEETS:
        if name not in L.HEADERS:
            continue
        rows = len(L.HEADERS[name])
        assert _headers(mine[name], rows) == _headers(theirs[name], rows), name
        if name != "Create Meters (WasteMaterials)":  # its meter-type list is not written
            assert _lists(mine[name]) == _lists(theirs[name]), name
    for list_name in [*L.NAMED_LISTS, *L.UNIT_LISTS]:
        if list_name in ("Waste_Percent_Full",):
            continue  # a bills list
        assert _named(mine, list_name) == _named(theirs, list_name), list_name
    assert {k.meters_type for k in L.KINDS.values()} <= set(
        _named(theirs, "EnergyMeters") + _named(theirs, "WaterMeters")
    )
    energy = mine[L.CREATE_ENERGY]
    per_row = {
        cell: dv.formula1
        for dv in energy.data_validations.dataValidation
        if dv.type == "list" and str(dv.sqref).startswith("F")
        for cell in str(dv.sqref).split()
    }
    by_type = {k.meters_type: k.units_list for k in L.KINDS.values()}
    rows = range(2, energy.max_row + 1)
    assert len(per_row) == len(rows) == 8
    for r in rows:  # each row is validated with its own meter type's units
        assert per_row[f"F{r}"] == by_type[energy.cell(r, 3).value]
        assert energy.cell(r, 6).value in L.UNIT_LISTS[per_row[f"F{r}"]]
