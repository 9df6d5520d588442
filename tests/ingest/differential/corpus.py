"""The differential corpus: every kind of file the import engine reads, written by our own
generators (seeded, so the same bytes every run), each with the catalog and stored readings it is
checked against. `outcome` runs the engine and returns everything a user or the planner could see:
notes, the summary, every problem (with its row's cells) and every accepted reading.

`golden.json.gz` holds the outcomes the per-row engine (bpsync ≤ 0.x, `map_rows` + `normalise`)
gave for this corpus; tests/ingest/differential/test_differential.py asserts the columnar engine
gives the same. Re-record only when a behaviour change is intended (`python -m
tests.ingest.differential.corpus record`), and say so in the commit.

Quirks covered, with the real exports they come from: thousands separators and decimal commas
with `;` (European utility portals), placeholders such as "N/A" and "-" (PM exports), total rows
(spreadsheets summed by hand), title rows above the header, ragged and blank rows, day-first and
month-first dates, Excel serials typed as text, read date + days (US utility CSVs), end == next
start (older PM Meter Entries), wide month sheets and meter columns (hand-kept workbooks), unknown
units and meter types, currency columns, estimated flags, duplicates, overlaps, negatives,
spikes, readings already stored, and PM / Green Button files from the fidelity generators."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import json
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openpyxl import Workbook

from bpsync.ingest import MeterCatalog, MeterInfo, check, prepare
from bpsync.ingest.checks.collected import StoredReading
from bpsync.ingest.problems import IngestError
from bpsync.paths import package_dir

GOLDEN = Path(__file__).with_name("golden.json.gz")
TODAY = dt.date(2026, 6, 30)


@dataclass
class Case:
    name: str
    write: Callable[[Path], Path]
    template: Any = "auto"  # a name or a Template
    meters: list[MeterInfo] = field(default_factory=list)
    meter_map: dict[str, str] = field(default_factory=dict)
    stored: dict[str, list[StoredReading]] = field(default_factory=dict)
    meter: str | None = None


# ---- building blocks ---------------------------------------------------------------------------


def _csv(rows: list[list[object]], *, delimiter: str = ",", encoding: str = "utf-8"):
    def write(path: Path) -> Path:
        with open(path, "w", newline="", encoding=encoding) as fh:
            csv.writer(fh, delimiter=delimiter).writerows(rows)
        return path

    return write


def _xlsx(rows: list[list[object]], *, sheet: str = "Bills", hidden: list[str] = ()):
    def write(path: Path) -> Path:
        wb = Workbook()
        ws = wb.active
        ws.title = sheet
        for row in rows:
            ws.append(row)
        for name in hidden:
            wb.create_sheet(name).sheet_state = "hidden"
        wb.save(path)
        return path

    return write


def _months(first: dt.date, n: int) -> Iterator[tuple[dt.date, dt.date]]:
    y, m = first.year, first.month
    for _ in range(n):
        start = dt.date(y, m, 1)
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        yield start, dt.date(y, m, 1) - dt.timedelta(days=1)


UNITS = ["kWh", "KWH", "kwh", "MWh", "therms", "CCF", "m3", "kBtu", "gal", "furlongs", ""]
BLANKS = ["", "N/A", "-", "  "]


def _number_text(rng: random.Random, value: float, decimal: str) -> str:
    style = rng.random()
    if decimal == ",":
        text = f"{value:,.2f}".replace(",", " ").replace(".", ",").replace(" ", ".")
        return text if style < 0.5 else f"{value:.1f}".replace(".", ",")
    if style < 0.35:
        return f"{value:,.1f}"
    if style < 0.5:
        return f"${value:,.2f}"
    if style < 0.55:
        return f"({value:.2f})"
    return f"{value:.1f}"


def _date_text(rng: random.Random, day: dt.date, order: str) -> str:
    if order == "ISO":
        return day.isoformat()
    if order == "DMY":
        return day.strftime("%d/%m/%Y")
    if order == "MDY":
        return day.strftime("%m/%d/%Y") if rng.random() < 0.8 else day.strftime("%-m/%-d/%y")
    return str((day - dt.date(1899, 12, 30)).days)  # an Excel serial typed as text


def _long_rows(seed: int, *, order: str, decimal: str, meters: int, months: int) -> list[list]:
    """Meter ID / Start / End / Consumption / Unit / Cost / Currency / Demand / Estimated, with a
    few of every row-level fault."""
    rng = random.Random(seed)
    rows: list[list[object]] = []
    for m in range(meters):
        level = rng.uniform(200, 9000)
        for start, end in _months(dt.date(2024, 1 + m % 3, 1), months):
            value = level * rng.uniform(0.8, 1.2)
            roll = rng.random()
            if roll < 0.03:
                value *= 4  # spike
            elif roll < 0.05:
                value *= 0.1  # drop
            elif roll < 0.06:
                value = -value
            row: list[object] = [
                f"M-{m:03d}",
                _date_text(rng, start, order),
                _date_text(rng, end, order),
                _number_text(rng, value, decimal),
                rng.choice(UNITS[:4]) if m % 4 else "therms",
                _number_text(rng, value * 0.15, decimal) if rng.random() < 0.9 else "",
                rng.choice(["USD", "usd", "EUR", "US$", ""]),
                _number_text(rng, rng.uniform(-5, 80), decimal) if rng.random() < 0.3 else "",
                rng.choice(["yes", "no", "", "Y", "maybe", "TRUE"]),
            ]
            fault = rng.random()
            if fault < 0.02:
                row[1] = rng.choice(BLANKS)
            elif fault < 0.04:
                row[2] = "2024-13-45"
            elif fault < 0.06:
                row[3] = rng.choice([*BLANKS, "12kWh", "1.2.3", "nan", "inf"])
            elif fault < 0.07:
                row[4] = rng.choice(UNITS[-2:])
            elif fault < 0.08:
                row[0] = rng.choice(BLANKS)
            elif fault < 0.09:
                row[1], row[2] = row[2], row[1]  # end before start
            elif fault < 0.1:
                row[0] = f"M-{meters + 7:03d}"  # not in the catalog
            rows.append(row)
            if rng.random() < 0.03:
                rows.append(list(row))  # an exact duplicate
            if rng.random() < 0.02:
                twin = list(row)
                twin[3] = _number_text(rng, value * 1.5, decimal)
                rows.append(twin)  # same period, different value: an overlap
    rng.shuffle(rows)
    return rows


LONG_HEADER = [
    "Meter ID",
    "Start Date",
    "End Date",
    "Consumption",
    "Unit",
    "Cost",
    "Currency",
    "Demand (kW)",
    "Estimated",
]


def _long_catalog(meters: int) -> list[MeterInfo]:
    out = []
    for m in range(meters):
        kind = ("natural_gas", "therms") if m % 4 == 0 else ("electricity", "kWh")
        if m == 5:
            kind = ("water", "m3")  # a unit that cannot convert: unit_mismatch
        out.append(MeterInfo(f"M-{m:03d}", *kind))
    return out


def _stored_for(meters: list[MeterInfo]) -> dict[str, list[StoredReading]]:
    """A few stored readings: one identical to a file row's period, one overlapping."""
    out: dict[str, list[StoredReading]] = {}
    for info in meters[:3]:
        out[info.id] = [
            StoredReading(dt.date(2023, 1, 1), dt.date(2023, 12, 31), 50_000.0, "rdg_year"),
            StoredReading(dt.date(2024, 3, 1), dt.date(2024, 3, 15), 1.0, "rdg_half"),
        ]
    return out


# ---- the cases ---------------------------------------------------------------------------------


def _long_cases() -> list[Case]:
    cases = []
    for seed, (order, decimal, kind) in enumerate(
        [
            ("ISO", ".", "csv"),
            ("MDY", ".", "csv"),
            ("DMY", ".", "csv"),
            ("DMY", ",", "csv"),
            ("SERIAL", ".", "csv"),
            ("ISO", ".", "xlsx"),
            ("MDY", ".", "xlsx"),
        ]
    ):
        meters = 12
        rows = _long_rows(seed, order=order, decimal=decimal, meters=meters, months=14)
        catalog = _long_catalog(meters)
        if kind == "csv":
            head = [["Monthly bills export"], ["generated 2026-06-01", ""], []]
            rows = [*head, LONG_HEADER, *rows]
            rows.insert(len(head) + 4, [])  # a blank row inside the data
            rows.insert(len(head) + 6, ["", "", "", "", ""])  # a row of empty separators
            rows.insert(len(head) + 8, rows[len(head) + 9][:4])  # a short (ragged) row
            rows.append(["Total", "", "", "123456"])
            write = _csv(rows, delimiter=";" if decimal == "," else ",")
        else:
            rows = [["Bills 2024"], LONG_HEADER, *rows]
            write = _xlsx(rows, hidden=["Lists"])
        cases.append(
            Case(
                f"long_{order}_{decimal}_{kind}",
                write,
                "long_csv",
                catalog,
                stored=_stored_for(catalog),
            )
        )
    # Without a catalog (offline checks, template previews): units stay the file's.
    cases.append(
        Case(
            "long_offline",
            _csv([LONG_HEADER, *_long_rows(11, order="ISO", decimal=".", meters=5, months=6)]),
            "long_csv",
        )
    )
    return cases


def _read_date_days_rows(seed: int, next_start: bool) -> list[list[object]]:
    rng = random.Random(seed)
    rows: list[list[object]] = [
        ["Account", "Meter No.", "Read Date", "Days", "Usage", "Unit", "Amount", "Read Type"]
    ]
    for m in range(6):
        read = dt.date(2024, 1, 15)
        for _ in range(12):
            days = rng.choice([29, 30, 31, 32, 33])
            read = read + dt.timedelta(days=days)
            row = [
                f"ACC{m}",
                f"E{m:04d}",
                read.strftime("%m/%d/%Y"),
                str(days) if rng.random() > 0.04 else rng.choice(["0", "30.5", "", "x"]),
                f"{rng.uniform(100, 5000):,.0f}",
                "KWH",
                f"{rng.uniform(20, 900):.2f}",
                rng.choice(["A", "E", "Est", "Actual", ""]),
            ]
            rows.append(row)
    return rows


def _wide_months_rows(seed: int) -> list[list[object]]:
    rng = random.Random(seed)
    months = [f"{dt.date(2024, m, 1):%b %Y}" for m in range(1, 13)]
    rows: list[list[object]] = [["Meter Reference", "Unit", *months, "Annual Total"]]
    for m in range(8):
        unit = ["kWh", "therms", "m3", "MWh", "bogus"][m % 5]
        values = [
            rng.choice(["", "N/A"])
            if rng.random() < 0.08
            else (
                f"{rng.uniform(100, 5000):,.1f}"
                if rng.random() > 0.05
                else rng.choice(["??", "1e"])
            )
            for _ in months
        ]
        rows.append([f"REF-{m}" if m != 6 else "", unit, *values, "x"])
    rows.append(["Total", "", *["1" for _ in months], ""])
    return rows


def _wide_meters_rows(seed: int) -> list[list[object]]:
    rng = random.Random(seed)
    rows: list[list[object]] = [
        ["Month", "Main (kWh)", "Gas [therms]", "Water (m3)", "Sub 2 (kWh)", "Notes", "Total"]
    ]
    for first, _ in _months(dt.date(2023, 10, 1), 15):
        rows.append(
            [
                first.strftime("%b-%y") if rng.random() > 0.05 else rng.choice(["", "Sept 2099x"]),
                f"{rng.uniform(1000, 9000):,.0f}",
                "" if rng.random() < 0.1 else f"{rng.uniform(10, 900):.1f}",
                rng.choice([f"{rng.uniform(1, 90):.2f}", "-", "n/a", "12 m3"]),
                f"{rng.uniform(100, 900):.0f}",
                "estimated" if rng.random() < 0.2 else "",
                "",
            ]
        )
    return rows


def _external_catalog(refs: list[str], types: list[tuple[str, str]]) -> tuple[list, dict]:
    meters, mapping = [], {}
    for i, ref in enumerate(refs):
        kind, unit = types[i % len(types)]
        meters.append(MeterInfo(f"mtr_{i}", kind, unit))
        if i != 1:  # one reference left unmapped: unknown_meter
            mapping[ref] = f"mtr_{i}"
    return meters, mapping


def _other_cases() -> list[Case]:
    cases: list[Case] = []
    refs = [f"E{m:04d}" for m in range(6)]
    meters, mapping = _external_catalog(refs, [("electricity", "kWh")])
    for seed in (1, 2):
        cases.append(
            Case(
                f"read_date_days_{seed}",
                _csv(_read_date_days_rows(seed, False)),
                "utility_read_date_days",
                meters,
                mapping,
            )
        )
    wm_refs = [f"REF-{m}" for m in range(8)]
    meters, mapping = _external_catalog(
        wm_refs, [("electricity", "kWh"), ("natural_gas", "therms"), ("water", "m3")]
    )
    cases.append(
        Case("wide_months_csv", _csv(_wide_months_rows(3)), "wide_months_by_meter", meters, mapping)
    )
    cases.append(
        Case(
            "wide_months_xlsx", _xlsx(_wide_months_rows(4)), "wide_months_by_meter", meters, mapping
        )
    )
    wide_refs = ["Main", "Gas", "Water", "Sub 2"]
    meters, mapping = _external_catalog(
        wide_refs, [("electricity", "kWh"), ("natural_gas", "therms"), ("water", "m3")]
    )
    cases.append(
        Case("wide_meters_csv", _csv(_wide_meters_rows(5)), "wide_monthly_usage", meters, mapping)
    )
    cases.append(
        Case("wide_meters_xlsx", _xlsx(_wide_meters_rows(6)), "wide_monthly_usage", meters, mapping)
    )
    cases.append(_building_name_case())
    cases.extend(_pm_cases())
    cases.extend(_greenbutton_cases())
    cases.extend(_sample_cases())
    return cases


def _building_name_case() -> Case:
    """Meters found by building name + meter name (a facilities spreadsheet with no meter ids):
    names in other spacing and case, one building unknown, one name empty."""
    from bpsync.ingest.understand.templates import template_from_dict

    template = template_from_dict(
        {
            "name": "by_building",
            "layout": "long",
            "meter": {"by": "building_name", "building_column": "Site", "name_column": "Meter"},
            "columns": {
                "start_date": "From",
                "end_date": "To",
                "consumption": "kWh",
            },
            "fixed": {"unit": "kWh"},
        }
    )
    rng = random.Random(12)
    rows: list[list[object]] = [["Site", "Meter", "From", "To", "kWh"]]
    for site, meter in (("North  Tower", "Main"), ("north tower", "sub 1"), ("Annex", "Main")):
        for start, end in _months(dt.date(2024, 1, 1), 8):
            rows.append([site, meter if rng.random() > 0.05 else "", start, end, rng.randint(1, 9)])
    meters = [
        MeterInfo("mtr_a", "electricity", "kWh", "bld_1", "North Tower", "Main"),
        MeterInfo("mtr_b", "electricity", "MWh", "bld_1", "North Tower", "Sub 1"),
    ]
    return Case("building_name_xlsx", _xlsx(rows), template, meters)


def _pm_cases() -> list[Case]:
    from tests.ingest.fidelity.fixtures import pm

    rng = random.Random(9)
    rows = []
    for meter in ("1001", "1002", "1003"):
        for i, (start, end) in enumerate(_months(dt.date(2024, 1, 1), 12)):
            # 1001 writes end == next start (older exports), 1002 inclusive, 1003 one row only
            if meter == "1003" and i:
                break
            shown_end = end + dt.timedelta(days=1) if meter == "1001" else end
            rows.append(
                [
                    "Tower",
                    "55501",
                    f"Meter {meter}",
                    meter,
                    rng.choice(["Electric - Grid", "Electric - Grid", "Plutonium"]),
                    start,
                    shown_end,
                    round(rng.uniform(1000, 5000), 1),
                    "kWh (thousand Watt-hours)" if i != 7 else "furlongs",
                    round(rng.uniform(100, 900), 2),
                    "No" if i % 5 else "Yes",
                ]
            )
    meters = [MeterInfo(f"mtr_{m}", "electricity", "kWh") for m in ("1001", "1002", "1003")]
    mapping = {m: f"mtr_{m}" for m in ("1001", "1002", "1003")}
    return [
        Case(
            "pm_add_bills_v2",
            lambda p: pm.add_bills_v2(p),
            "auto",
            [MeterInfo("mtr_pm", "electricity", "kWh")],
            {"8837461": "mtr_pm"},
        ),
        Case(
            "pm_meter_entries",
            lambda p: pm.meter_entries_export(p, rows),
            "pm_meter_entries_export",
            meters,
            mapping,
        ),
    ]


def _greenbutton_cases() -> list[Case]:
    from tests.ingest.fidelity.fixtures import greenbutton as gb

    zone = "America/New_York"
    hourly = gb.intervals(dt.date(2024, 1, 1), dt.date(2024, 3, 31), zone, 60, 1500)
    bills = gb.monthly_bills([(2024, 1), (2024, 2), (2024, 3)], "UTC", hour=1)
    out = []
    for name, xml in (
        ("gb_intervals", gb.feed("Hourly", hourly)),
        ("gb_bills", gb.feed("Bills", [], bills=bills, kind=1)),
    ):

        def write(path: Path, xml: str = xml) -> Path:
            path.write_text(xml, encoding="utf-8")
            return path

        out.append(
            Case(name, write, "auto", [MeterInfo("mtr_gb", "electricity", "kWh")], meter="mtr_gb")
        )
    return out


def _sample_cases() -> list[Case]:
    folder = package_dir("sample_data")
    out = []
    for name in sorted(p.name for p in folder.iterdir() if p.is_file()):  # not __pycache__
        if name.endswith((".md", ".py")) or name == "portfolio_register.xlsx":
            continue

        def write(path: Path, name: str = name) -> Path:
            target = path.with_name(name)
            target.write_bytes((folder / name).read_bytes())
            return target

        out.append(Case(f"sample_{name}", write))
    return out


def cases() -> list[Case]:
    return _long_cases() + _other_cases()


def suffix(case: Case) -> str:
    if case.name.startswith("gb_"):
        return ".xml"
    return ".xlsx" if "xlsx" in case.name or case.name.startswith("pm_") else ".csv"


# ---- running the engine ------------------------------------------------------------------------


def _num(value: float | None) -> Any:
    if value is None:
        return None
    return repr(value) if math.isnan(value) or math.isinf(value) else value


def outcome(case: Case, folder: Path) -> dict[str, Any]:
    """Everything the engine says about the case's file, as plain JSON."""
    path = case.write(folder / f"{case.name}{suffix(case)}")
    catalog = MeterCatalog.build(case.meters, case.meter_map) if case.meters else None
    try:
        prepared = prepare(path, case.template, catalog=catalog, meter=case.meter)
        result = check(prepared, existing=case.stored, today=TODAY)
    except IngestError as exc:
        return {"error": [exc.code, str(exc)]}
    readings = [
        [
            c.row,
            c.meter_key,
            c.meter_id,
            c.start.isoformat(),
            c.end.isoformat(),
            _num(c.consumption),
            c.unit,
            _num(c.cost),
            c.currency,
            _num(c.demand_kw),
            c.estimated,
            c.column_index,
        ]
        for c in result.all_candidates()
    ]
    problems = [
        [
            p.code,
            p.reason,
            p.where.file,
            p.where.sheet,
            p.where.row,
            p.where.column,
            p.where.column_index,
            p.value,
            p.severity,
            p.meter,
            list(p.row_values),
        ]
        for p in result.problems
    ]
    return {
        "template": prepared.template.name,
        "describe": prepared.describe(),
        "notes": prepared.notes,
        "summary": result.summary(),
        "flags": sorted([list(k), v] for k, v in result.flags.items()),
        "meter_ranges": {
            k: [a.isoformat(), b.isoformat()]
            for k, (a, b) in prepared.collected.meter_ranges().items()
        },
        "readings": readings,
        "problems": problems,
    }


def record(folder: Path) -> dict[str, Any]:
    return {case.name: outcome(case, folder) for case in cases()}


if __name__ == "__main__" and sys.argv[1:] == ["record"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = record(Path(tmp))
    GOLDEN.write_bytes(gzip.compress(json.dumps(data, indent=0, sort_keys=True).encode(), mtime=0))
    print(f"recorded {len(data)} cases to {GOLDEN}")
