"""Property (issue 11): for any generated bill table, read → map → normalise gives back exactly
the table's readings (meter, first and last day, value, unit), for CSV and XLSX, for both period
conventions (inclusive, and end == next start), whether the template states the convention or
end_date = "auto" detects it per meter."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import Workbook

from bpsync.ingest.readers import detect_format, open_table
from bpsync.ingest.run.prepare import collect_table
from bpsync.ingest.understand.evidence import plan_table
from bpsync.ingest.understand.templates import template_from_dict

UNITS = ["kWh", "MWh", "therms", "m3"]


@st.composite
def bill_tables(draw):
    """1-3 meters, each with 2-8 gap-free consecutive bills of 1-45 days."""
    readings = []
    for m in range(draw(st.integers(1, 3))):
        start = draw(st.dates(dt.date(2005, 1, 1), dt.date(2030, 1, 1)))
        unit = draw(st.sampled_from(UNITS))
        for _ in range(draw(st.integers(2, 8))):
            end = start + dt.timedelta(days=draw(st.integers(0, 44)))
            value = draw(st.integers(0, 10**9)) / 100
            readings.append((f"MTR-{m}", start, end, value, unit))
            start = end + dt.timedelta(days=1)
    return readings


def template(convention: str):
    return template_from_dict(
        {
            "name": "generated",
            "layout": "long",
            "date_order": "auto",
            "end_date": convention,
            "meter": {"by": "external_ref", "column": "Meter"},
            "columns": {
                "start_date": "Start Date",
                "end_date": "End Date",
                "consumption": "Usage",
                "unit": "Unit",
            },
        }
    )


def write(folder: Path, kind: str, readings, next_start: bool) -> Path:
    shift = dt.timedelta(days=1 if next_start else 0)
    rows = [(m, s, e + shift, v, u) for m, s, e, v, u in readings]
    if kind == "csv":
        path = folder / "bills.csv"
        lines = ["Meter,Start Date,End Date,Usage,Unit"]
        lines += [f"{m},{s.isoformat()},{e.isoformat()},{v!r},{u}" for m, s, e, v, u in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path
    path = folder / "bills.xlsx"
    wb = Workbook()
    ws = wb.active
    ws.append(["Meter", "Start Date", "End Date", "Usage", "Unit"])
    for m, s, e, v, u in rows:
        ws.append([m, dt.datetime.combine(s, dt.time()), dt.datetime.combine(e, dt.time()), v, u])
    wb.save(path)
    return path


@settings(max_examples=40, deadline=None)
@given(
    readings=bill_tables(),
    kind=st.sampled_from(["csv", "xlsx"]),
    next_start=st.booleans(),
    stated=st.booleans(),
)
def test_read_map_normalise_returns_the_table(readings, kind, next_start, stated):
    convention = ("next_start" if next_start else "inclusive") if stated else "auto"
    t = template(convention)
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), kind, readings, next_start)
        table = open_table(path, fmt=detect_format(path), expected=t.expected_keys())
        collected = collect_table(table, plan_table(table, t), catalog=None)
    assert collected.problems == []
    got = [
        (m.key, dt.date.fromordinal(s), dt.date.fromordinal(e), c, m.unit)
        for m in collected.meters.values()
        for s, e, c in zip(m.starts, m.ends, m.consumption, strict=True)
    ]
    assert got == readings
