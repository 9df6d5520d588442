"""Writing the planned rows as PM's workbooks with openpyxl: PM's sheets in PM's order (a data
sheet without rows is hidden, as PM hides the kinds a download has no meters of), header rows,
input prompts and list validations, the named lists on a hidden Validation sheet, dates as real
date cells. The file is written next to its target and renamed into place."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpsync.pm_export import layout as L

if TYPE_CHECKING:
    from openpyxl.workbook import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

    from bpsync.pm_export.rows import BillsPlan, MetersPlan

DATE_FORMAT = "mm/dd/yyyy"  # PM's US convention; the cells are dates, so nothing is ambiguous
LAST_ROW = 1048576

# The input message PM shows on a column (title, then ours: PM's meaning in a sentence).
PROMPTS: dict[str, tuple[str, str]] = {
    "Meter ID": ("Meter ID", "Do not edit: Portfolio Manager's id of this meter."),
    "Meter Consumption ID": (
        "Meter Consumption ID",
        "Empty for a new bill. A number here tells Portfolio Manager not to input the row.",
    ),
    "Portfolio Manager ID": ("Portfolio Manager ID", "Do not edit: the PM Property ID."),
    "Start Date": ("Start Date", "The first day of the billing period."),
    "End Date": ("End Date", "The last day of the billing period (inclusive)."),
    "Usage": ("Usage", "The quantity used in the period, in the meter's unit. No commas."),
    "Quantity": ("Quantity", "The quantity used in the period, in the meter's unit. No commas."),
    "Meter Unit": ("Meter Unit", "Do not edit: the unit chosen when the meter was created."),
    "Cost": ("Cost", "The cost of the period: no currency sign, no commas."),
    "Estimation": ("Estimation", "Is the usage an estimate? (Yes/No)"),
    "Green Power?": ("Green Power?", "Is this usage Green Power? (Yes/No)"),
    "Units": ("Units", "The unit this meter will measure consumption in."),
    "Meter Type": ("Meter Type", "Do not edit."),
    "Date Meter Became Active": (
        "Date Meter Became Active",
        "The date of this meter's first bill.",
    ),
    "In Use?": ("In Use?", 'Is this meter still "In Use?" (Yes/No)'),
}


def _title(header: object) -> str:
    """A header's name without its line break and "(Required)"-style tags."""
    text = " ".join(str(header).split("\n")[0].split())
    return text.split(" (")[0].strip()


def _column(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(index)


def _style_header(ws: Worksheet, rows: int, width: int) -> None:
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    thin = Side(style="thin")
    fill = PatternFill("solid", fgColor="FFD9E1F2")
    for r in range(1, rows + 1):
        ws.row_dimensions[r].height = 64 if r == 1 else 32
        for c in range(1, width + 1):
            cell = ws.cell(r, c)
            cell.font = Font(bold=True)
            cell.fill = fill
            cell.alignment = Alignment(horizontal="center", vertical="center", wrap_text=True)
            cell.border = Border(left=thin, right=thin, top=thin, bottom=thin)
    for c in range(1, width + 1):
        ws.column_dimensions[_column(c)].width = 18
    ws.freeze_panes = f"A{rows + 1}"


def _data_sheet(wb: Workbook, name: str, rows: Sequence[Sequence[object]]) -> Worksheet:
    from openpyxl.worksheet.datavalidation import DataValidation

    ws = wb.create_sheet(name)
    header_rows = L.HEADERS[name]
    width = max(len(h) for h in header_rows)
    for r, header in enumerate(header_rows, start=1):
        for c, value in enumerate(header, start=1):
            if value is not None:
                ws.cell(r, c, value)
    _style_header(ws, len(header_rows), width)
    first = len(header_rows) + 1
    for r, row in enumerate(rows, start=first):
        for c, value in enumerate(row, start=1):
            if value is None:
                continue
            cell = ws.cell(r, c, value)
            if isinstance(value, dt.date):
                cell.number_format = DATE_FORMAT
    listed = {col for col, _, _ in L.LIST_VALIDATIONS.get(name, ())}
    for c, header in enumerate(header_rows[0], start=1):
        prompt = PROMPTS.get(_title(header)) if header else None
        if prompt is None or _column(c) in listed:
            continue
        dv = DataValidation(allow_blank=True, showInputMessage=True)
        dv.promptTitle, dv.prompt = prompt
        dv.add(f"{_column(c)}1:{_column(c)}{LAST_ROW}")
        ws.add_data_validation(dv)
    for col, row, formula in L.LIST_VALIDATIONS.get(name, ()):
        if formula == L.UNITS:
            continue  # per row, by the caller
        header = header_rows[0][ord(col) - ord("A")]
        dv = DataValidation(type="list", formula1=formula, allow_blank=True, showInputMessage=True)
        if header and _title(header) in PROMPTS:
            dv.promptTitle, dv.prompt = PROMPTS[_title(header)]
        dv.add(f"{col}{row}:{col}{LAST_ROW}")
        ws.add_data_validation(dv)
    return ws


def _lists_sheets(wb: Workbook, names: Mapping[str, Sequence[object]]) -> None:
    from openpyxl.workbook.defined_name import DefinedName

    wb.create_sheet(L.LISTS).sheet_state = "hidden"
    ws = wb.create_sheet(L.VALIDATION)
    ws.sheet_state = "hidden"
    for c, (name, values) in enumerate(names.items(), start=1):
        ws.cell(1, c, name)
        for r, value in enumerate(values, start=2):
            ws.cell(r, c, value)
        col = _column(c)
        ref = f"{L.VALIDATION}!${col}$2:${col}${len(values) + 1}"
        wb.defined_names[name] = DefinedName(name, attr_text=ref)


def _instructions(wb: Workbook, title: str, lines: Sequence[str]) -> None:
    from openpyxl.styles import Font

    ws = wb.active
    assert ws is not None
    ws.title = L.INSTRUCTIONS
    ws["B2"] = title
    ws["B2"].font = Font(bold=True, size=14)
    for r, line in enumerate(lines, start=4):
        ws.cell(r, 2, line)
    ws.cell(len(lines) + 6, 3, "Template Version")
    ws.cell(len(lines) + 6, 6, L.TEMPLATE_VERSION)
    ws.column_dimensions["B"].width = 100


def _save(wb: Workbook, path: Path) -> Path:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        wb.save(tmp)
        os.replace(tmp, path)  # a reader never sees half a workbook
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _show(wb: Workbook, data_sheets: Sequence[str], filled: Mapping[str, Sequence[Any]]) -> None:
    shown = [s for s in data_sheets if filled.get(s)] or [data_sheets[1]]
    for name in data_sheets[1:]:
        if name in (L.LISTS, L.VALIDATION):
            continue
        wb[name].sheet_state = "visible" if name in shown else "hidden"
    wb.active = wb.sheetnames.index(shown[0])


def bills_workbook(plan: BillsPlan, note: str) -> Workbook:
    """The Add Bills workbook for `plan`, in memory (`note` says where it came from)."""
    from openpyxl import Workbook

    wb = Workbook()
    _instructions(
        wb,
        L.BILLS_TITLE,
        [
            note,
            "Each row is a new bill of an existing Portfolio Manager meter (its Meter ID).",
            "Start and End Date are the first and last day of the billing period.",
            "Upload: Portfolio Manager > My Portfolio > Upload and/or Update Multiple Properties"
            " > Add Bills to Existing Meters.",
        ],
    )
    for name in L.BILL_SHEETS[1:]:
        if name == L.LISTS:
            _lists_sheets(wb, {n: L.NAMED_LISTS[n] for n in L.BILL_LIST_NAMES})
        elif name != L.VALIDATION:
            _data_sheet(wb, name, plan.sheets.get(name, ()))
    _order(wb, L.BILL_SHEETS)
    _show(wb, L.BILL_SHEETS, plan.sheets)
    return wb


def meters_workbook(plan: MetersPlan, note: str) -> Workbook:
    """The Create Meters workbook for `plan`, in memory."""
    from openpyxl import Workbook
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = Workbook()
    _instructions(
        wb,
        L.METERS_TITLE,
        [
            note,
            "Each row is a new meter of an existing Portfolio Manager property (its Property ID).",
            "Custom Meter ID 1 holds the meter's id in bpsync: once PM has made the meter, link"
            " it with `bpsync meters link <PM Meter ID> <bpsync meter id>`.",
            "Upload: Portfolio Manager > My Portfolio > Upload and/or Update Multiple Properties"
            " > Add Meters to Existing Properties.",
        ],
    )
    named: dict[str, Sequence[object]] = {
        **{n: v for n, v in L.NAMED_LISTS.items() if n not in L.BILL_LIST_NAMES[1:]},
        **L.UNIT_LISTS,
    }
    for name in L.METER_SHEETS[1:]:
        if name == L.LISTS:
            _lists_sheets(wb, named)
        elif name != L.VALIDATION:
            ws = _data_sheet(wb, name, plan.sheets.get(name, ()))
            units = plan.units_lists.get(name, [])
            col = next((c for c, _, f in L.LIST_VALIDATIONS.get(name, ()) if f == L.UNITS), None)
            by_list: dict[str, list[int]] = {}
            for offset, list_name in enumerate(units):
                by_list.setdefault(list_name, []).append(offset + 2)
            for list_name, rows in by_list.items() if col else ():
                dv = DataValidation(type="list", formula1=list_name, allow_blank=True)
                dv.promptTitle, dv.prompt = PROMPTS["Units"]
                dv.showInputMessage = True
                for row in rows:
                    dv.add(f"{col}{row}")
                ws.add_data_validation(dv)
    _order(wb, L.METER_SHEETS)
    _show(wb, L.METER_SHEETS, plan.sheets)
    return wb


def _order(wb: Workbook, names: Sequence[str]) -> None:
    wb._sheets = [wb[n] for n in names]  # openpyxl has no public reorder


def write_bills(plan: BillsPlan, path: Path, note: str) -> Path:
    return _save(bills_workbook(plan, note), path)


def write_meters(plan: MetersPlan, path: Path, note: str) -> Path:
    return _save(meters_workbook(plan, note), path)
