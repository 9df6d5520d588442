"""Make the sample files in this folder (run: python sample_data/make_samples.py).

One small, consistent portfolio across every file: two properties, three buildings, seven meters.
Meter references are the same everywhere (utility meter numbers, Portfolio Manager meter ids), so
after importing portfolio_register.xlsx every bill file resolves through the meter map it yields.
Consumption figures follow a seasonal curve with a fixed seed, so re-running gives identical files.
"""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import io
import math
import random
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

HERE = Path(__file__).resolve().parent
YEAR = 2024
rng = random.Random(20240131)

# (property ref, building, meter name, type, unit, utility number, PM meter id, monthly base)
METERS = [
    (
        "RP-001",
        "Riverside Tower",
        "Main Electric",
        "electricity",
        "kWh",
        "ELEC-4471-0091",
        "8837461",
        182_000,
    ),
    (
        "RP-001",
        "Riverside Tower",
        "Gas Boiler",
        "natural_gas",
        "therms",
        "GAS-22-8841",
        "8837463",
        5_400,
    ),
    ("RP-001", "Riverside Tower", "Domestic Water", "water", "kgal", "WTR-5510-02", "8837464", 410),
    (
        "RP-001",
        "Riverside Annex",
        "Annex Electric",
        "electricity",
        "kWh",
        "ELEC-4471-0107",
        "8837462",
        38_500,
    ),
    (
        "HP-002",
        "Harbour Point House",
        "Electricity",
        "electricity",
        "kWh",
        "1200023456789",
        "",
        96_000,
    ),
    ("HP-002", "Harbour Point House", "Gas", "natural_gas", "m3", "7390124", "", 11_800),
    ("HP-002", "Harbour Point House", "Water", "water", "m3", "HP-W-01", "", 640),
]


def seasonal(base: float, month: int, kind: str) -> float:
    """Heating peaks in winter, cooling-driven electricity a little in summer."""
    winter = math.cos((month - 1) / 12 * 2 * math.pi)
    swing = {"natural_gas": 0.55, "electricity": 0.12, "water": 0.05}[kind]
    if kind == "electricity":
        winter = -0.4 * winter + 0.6 * math.cos((month - 7) / 12 * 2 * math.pi) * -1
    return round(base * (1 + swing * winter) * rng.uniform(0.96, 1.04), 1)


def month_range(month: int, year: int = YEAR) -> tuple[dt.date, dt.date]:
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


def bold(ws, row: int) -> None:
    for cell in ws[row]:
        cell.font = Font(bold=True)


def register() -> None:
    wb = Workbook()
    ws = wb.active
    ws.title = "Properties"
    ws.append(["Portfolio register - Northbank Estates"])
    ws["A1"].font = Font(bold=True, size=14)
    ws.append(["Maintained by facilities; one row per property."])
    ws.append([])
    ws.append(
        [
            "Property Ref",
            "Property Name",
            "Street",
            "City",
            "State",
            "Postal Code",
            "Country",
            "Property Type",
        ]
    )
    bold(ws, 4)
    ws.append(
        [
            "RP-001",
            "Riverside Park",
            "250 Riverside Drive",
            "New York",
            "NY",
            "10025",
            "US",
            "office",
        ]
    )
    ws.append(
        ["HP-002", "Harbour Point", "14 Wapping Wall", "London", "", "E1W 3SG", "GB", "office"]
    )
    b = wb.create_sheet("Buildings")
    b.append(
        [
            "Property Ref",
            "Building Name",
            "Primary Use Type",
            "Gross Floor Area (m²)",
            "Year Built",
            "Floors",
            "Occupancy (%)",
            "Operating Hours / Week",
        ]
    )
    bold(b, 1)
    b.append(["RP-001", "Riverside Tower", "office", 18500, 1987, 22, 88, 60])
    b.append(["RP-001", "Riverside Annex", "retail", 4200, 2006, 3, 95, 84])
    b.append(["HP-002", "Harbour Point House", "office", 9800, 1999, 8, 76, 55])
    u = wb.create_sheet("Use Types")
    u.append(["Property Ref", "Building Name", "Use Type", "Floor Area (m²)"])
    bold(u, 1)
    u.append(["RP-001", "Riverside Tower", "office", 15000])
    u.append(["RP-001", "Riverside Tower", "retail", 3500])
    u.append(["HP-002", "Harbour Point House", "office", 8300])
    u.append(["HP-002", "Harbour Point House", "restaurant", 1500])
    m = wb.create_sheet("Meters")
    m.append(
        [
            "Property Ref",
            "Building Name",
            "Meter Name",
            "Meter Type",
            "Unit",
            "Utility Meter Number",
            "PM Meter ID",
            "Provider",
        ]
    )
    bold(m, 1)
    providers = {"electricity": "Con Edison", "natural_gas": "National Grid", "water": "NYC DEP"}
    for ref, building, name, kind, unit, number, pm_id, _ in METERS:
        provider = (
            providers[kind]
            if ref == "RP-001"
            else {"electricity": "EDF Energy", "natural_gas": "Cadent", "water": "Thames Water"}[
                kind
            ]
        )
        m.append([ref, building, name, kind, unit, number, pm_id, provider])
    wb.save(HERE / "portfolio_register.xlsx")


def bills_workbook() -> None:
    """Multi-sheet workbook: a notes sheet first, title rows and a merged group header above the
    header, header cells with line breaks and hints, costs as text with $ and commas, a placeholder
    demand, a trailing total row, and a hidden lookup sheet."""
    wb = Workbook()
    notes = wb.active
    notes.title = "Read me"
    notes.append(["Riverside Park utility bills, calendar year 2024."])
    notes.append(["Source: Con Edison / National Grid / NYC DEP portal downloads."])
    ws = wb.create_sheet("Bills 2024")
    ws.append(["Riverside Park - utility bills 2024"])
    ws["A1"].font = Font(bold=True, size=14)
    ws.append(["Exported 2025-01-15"])
    ws.append(["Meter", None, "Service period", None, "Consumption", None, "Charges", None])
    ws.merge_cells("A3:B3")
    ws.merge_cells("C3:D3")
    ws.merge_cells("E3:F3")
    ws.merge_cells("G3:H3")
    ws.append(
        [
            "Account\nNumber",
            "Meter  Number ",
            "Service Start\n(Required)",
            "Service End",
            "Usage",
            "Usage Unit",
            "Total Charges",
            "Peak Demand (kW)",
        ]
    )
    for cell in ws[4]:
        cell.alignment = Alignment(wrap_text=True)
        cell.font = Font(bold=True)
    total = 0.0
    rate = {"electricity": 0.21, "natural_gas": 1.35, "water": 11.8}
    for ref, _b, _n, kind, unit, number, _pm, base in METERS:
        if ref != "RP-001":
            continue
        months = range(1, 13) if number != "ELEC-4471-0107" else range(1, 3)  # Annex: Jan-Feb here
        for month in months:
            start, end = month_range(month)
            usage = seasonal(base, month, kind)
            cost = round(usage * rate[kind], 2)
            total += cost
            demand = round(usage / 24 / 30 * 1.6, 1) if kind == "electricity" else "N/A"
            end_cell: object = end if month % 4 else end.strftime("%m/%d/%Y")  # some typed as text
            ws.append(
                [
                    f"48-1120-{number[-4:]}",
                    number,
                    start,
                    end_cell,
                    usage,
                    unit,
                    f"${cost:,.2f}",
                    demand,
                ]
            )
    ws.append(["Total", None, None, None, None, None, f"${total:,.2f}", None])
    for col, width in zip("ABCDEFGH", (16, 18, 14, 14, 12, 10, 14, 12), strict=True):
        ws.column_dimensions[col].width = width
    lookup = wb.create_sheet("Lookup")
    lookup.append(["Meter Number", "Account Number", "Start Date", "End Date", "Usage"])
    lookup.append(["x", "y", "not data", "not data", "0"])
    lookup.sheet_state = "hidden"
    wb.save(HERE / "bills_workbook.xlsx")


def pm_template() -> None:
    """The Portfolio Manager "add bills to meters" upload layout, with dates as Excel dates."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Meter Entries"
    ws.append(
        [
            "Portfolio Manager Property ID",
            "Portfolio Manager Meter ID",
            "Meter Name",
            "Start Date",
            "End Date",
            "Delivery Date",
            "Usage/Quantity",
            "Cost ($)",
            "Estimation",
            "Demand (kW)",
        ]
    )
    bold(ws, 1)
    for _ref, _b, name, kind, _u, _num, pm_id, base in METERS:
        if not pm_id or kind != "electricity":
            continue
        for month in range(1, 13):
            start, end = month_range(month, YEAR - 1)  # 2023: the year before the bills workbook
            usage = seasonal(base, month, kind)
            ws.append(
                [
                    "7751204",
                    pm_id,
                    name,
                    start,
                    end,
                    None,
                    usage,
                    round(usage * 0.2, 2),
                    "Yes" if month == 8 else "No",
                    round(usage / 480, 1),
                ]
            )
    for row in ws.iter_rows(min_row=2, min_col=4, max_col=5):
        for cell in row:
            cell.number_format = "mm/dd/yyyy"
    wb.save(HERE / "pm_add_bills.xlsx")


def wide_monthly() -> None:
    """One row per month, one column per Harbour Point meter, units in the headers."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Monthly usage 2024"
    ws.append(["Harbour Point House - monthly usage"])
    ws.append([])
    ws.append(["Month", "1200023456789 (kWh)", "7390124 (m³)", "HP-W-01 (m3)", "Notes"])
    bold(ws, 3)
    for month in range(1, 13):
        label = dt.date(YEAR, month, 1).strftime("%b %Y")
        row = [label]
        for _ref, _b, _n, kind, _u, number, _pm, base in METERS:
            if number in ("1200023456789", "7390124", "HP-W-01"):
                row.append(seasonal(base, month, kind))
        row.append("meter exchange" if month == 6 else None)
        ws.append(row)
    wb.save(HERE / "wide_monthly_usage.xlsx")


def utility_csv() -> None:
    """UK supplier export saved by Excel on Windows: cp1252, semicolons, day-first read dates
    plus the number of days billed, amounts in pounds."""
    out = io.StringIO()
    w = csv.writer(out, delimiter=";", lineterminator="\r\n")
    w.writerow(
        ["Account", "Meter No.", "Read Date", "Days", "Usage", "Unit", "Amount (£)", "Read Type"]
    )
    for _ref, _b, _n, kind, unit, number, _pm, base in METERS:
        if number not in ("1200023456789", "7390124"):
            continue
        for month in range(1, 13):
            start, end = month_range(month, YEAR - 1)
            usage = seasonal(base, month, kind)
            amount = round(usage * (0.28 if kind == "electricity" else 0.09), 2)
            unit_text = "m³" if unit == "m3" else unit
            w.writerow(
                [
                    "HPH-55012",
                    number,
                    end.strftime("%d/%m/%Y"),
                    (end - start).days + 1,
                    f"{usage:,.1f}",
                    unit_text,
                    f"£{amount:,.2f}",
                    "E" if month == 3 else "A",
                ]
            )
    (HERE / "utility_read_dates.csv").write_bytes(out.getvalue().encode("cp1252"))


def green_button() -> None:
    """Hourly Green Button feed for the Riverside Annex, March-April 2024 (US Eastern, with the
    10 March DST change), plus two billing summaries with cost."""
    tz_offset, dst_offset = -18000, 3600
    start_utc = int(dt.datetime(YEAR, 3, 1, 5, 0, tzinfo=dt.UTC).timestamp())  # 00:00 EST
    end_utc = int(dt.datetime(YEAR, 5, 1, 4, 0, tzinfo=dt.UTC).timestamp())  # 00:00 EDT
    base = "https://utility.example.com/DataCustodian/espi/1_1/resource/Subscription/5"
    readings = []
    t = start_utc
    while t < end_utc:
        local_hour = (dt.datetime.fromtimestamp(t, dt.UTC) + dt.timedelta(seconds=tz_offset)).hour
        load = 38_500 / 30 / 24 * (1.5 if 8 <= local_hour < 20 else 0.55) * rng.uniform(0.9, 1.1)
        wh = int(load * 1000)
        readings.append(
            f"<IntervalReading><cost>{int(wh / 1000 * 0.21 * 100000)}</cost><timePeriod><duration>3600</duration>"
            f"<start>{t}</start></timePeriod><value>{wh}</value></IntervalReading>"
        )
        t += 3600
    march_start = start_utc
    april_start = int(dt.datetime(YEAR, 4, 1, 4, 0, tzinfo=dt.UTC).timestamp())
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:espi="http://naesb.org/espi">
  <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f001</id>
  <title>Green Button Usage Feed</title>
  <updated>2024-05-02T06:00:00Z</updated>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f002</id>
    <link href="{base}/UsagePoint/1" rel="self"/>
    <link href="{base}/UsagePoint/1/MeterReading" rel="related"/>
    <link href="{base}/UsagePoint/1/UsageSummary" rel="related"/>
    <link href="https://utility.example.com/DataCustodian/espi/1_1/resource/LocalTimeParameters/1" rel="related"/>
    <title>ELEC-4471-0107</title>
    <content><espi:UsagePoint><espi:ServiceCategory><espi:kind>0</espi:kind></espi:ServiceCategory></espi:UsagePoint></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f003</id>
    <link href="https://utility.example.com/DataCustodian/espi/1_1/resource/LocalTimeParameters/1" rel="self"/>
    <title>US Eastern</title>
    <content><espi:LocalTimeParameters><espi:dstEndRule>B40E2000</espi:dstEndRule><espi:dstOffset>{dst_offset}</espi:dstOffset><espi:dstStartRule>360E2000</espi:dstStartRule><espi:tzOffset>{tz_offset}</espi:tzOffset></espi:LocalTimeParameters></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f004</id>
    <link href="{base}/UsagePoint/1/MeterReading/1" rel="self"/>
    <link href="{base}/UsagePoint/1/MeterReading" rel="up"/>
    <link href="{base}/UsagePoint/1/MeterReading/1/IntervalBlock" rel="related"/>
    <link href="https://utility.example.com/DataCustodian/espi/1_1/resource/ReadingType/1" rel="related"/>
    <title>Hourly Electricity Consumption</title>
    <content><espi:MeterReading/></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f005</id>
    <link href="https://utility.example.com/DataCustodian/espi/1_1/resource/ReadingType/1" rel="self"/>
    <title>Energy Delivered (Wh)</title>
    <content><espi:ReadingType><espi:accumulationBehaviour>4</espi:accumulationBehaviour><espi:commodity>1</espi:commodity><espi:currency>840</espi:currency><espi:dataQualifier>12</espi:dataQualifier><espi:flowDirection>1</espi:flowDirection><espi:intervalLength>3600</espi:intervalLength><espi:kind>12</espi:kind><espi:phase>769</espi:phase><espi:powerOfTenMultiplier>0</espi:powerOfTenMultiplier><espi:timeAttribute>0</espi:timeAttribute><espi:uom>72</espi:uom></espi:ReadingType></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f006</id>
    <link href="{base}/UsagePoint/1/MeterReading/1/IntervalBlock/1" rel="self"/>
    <link href="{base}/UsagePoint/1/MeterReading/1/IntervalBlock" rel="up"/>
    <content><espi:IntervalBlock><espi:interval><espi:duration>{end_utc - start_utc}</espi:duration><espi:start>{start_utc}</espi:start></espi:interval>
{"".join(readings).replace("<IntervalReading>", "<espi:IntervalReading>").replace("</IntervalReading>", "</espi:IntervalReading>").replace("<cost>", "<espi:cost>").replace("</cost>", "</espi:cost>").replace("<timePeriod>", "<espi:timePeriod>").replace("</timePeriod>", "</espi:timePeriod>").replace("<duration>", "<espi:duration>").replace("</duration>", "</espi:duration>").replace("<start>", "<espi:start>").replace("</start>", "</espi:start>").replace("<value>", "<espi:value>").replace("</value>", "</espi:value>")}
    </espi:IntervalBlock></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f007</id>
    <link href="{base}/UsagePoint/1/UsageSummary/1" rel="self"/>
    <link href="{base}/UsagePoint/1/UsageSummary" rel="up"/>
    <content><espi:UsageSummary><espi:billingPeriod><espi:duration>{april_start - march_start}</espi:duration><espi:start>{march_start}</espi:start></espi:billingPeriod><espi:billLastPeriod>850312000</espi:billLastPeriod><espi:currency>840</espi:currency></espi:UsageSummary></content>
  </entry>
  <entry>
    <id>urn:uuid:6a5b0c0e-3a1f-4c57-9b1e-8d2f10a7f008</id>
    <link href="{base}/UsagePoint/1/UsageSummary/2" rel="self"/>
    <link href="{base}/UsagePoint/1/UsageSummary" rel="up"/>
    <content><espi:UsageSummary><espi:billingPeriod><espi:duration>{end_utc - april_start}</espi:duration><espi:start>{april_start}</espi:start></espi:billingPeriod><espi:billLastPeriod>823974000</espi:billLastPeriod><espi:currency>840</espi:currency></espi:UsageSummary></content>
  </entry>
</feed>
"""
    (HERE / "green_button.xml").write_text(xml, encoding="utf-8")


def deliberate_errors() -> None:
    """One workbook full of mistakes: a Bills sheet (overlap, negative, unknown meter, bad and
    ambiguous-free dates, end before start, text consumption, a duplicate, a water quantity into
    an electricity meter) and register sheets (use types not summing, a bad country, a missing
    field, a building of an unknown property)."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Bills"
    ws.append(
        [
            "Account Number",
            "Meter Number",
            "Service Start",
            "Service End",
            "Usage",
            "Usage Unit",
            "Total Charges",
        ]
    )
    rows = [
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-01-01",
            "2024-01-31",
            181_200,
            "kWh",
            "$38,052.00",
        ],
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-01-31",
            "2024-02-29",
            176_400,
            "kWh",
            "$37,044.00",
        ],  # overlaps row 2
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-03-01",
            "2024-03-31",
            -4_100,
            "kWh",
            "$0.00",
        ],  # negative
        [
            "48-1120-9999",
            "ELEC-9999-0001",
            "2024-01-01",
            "2024-01-31",
            52_000,
            "kWh",
            "$10,920.00",
        ],  # unknown meter
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-04-31",
            "2024-05-30",
            150_000,
            "kWh",
            "$31,500.00",
        ],  # no 31 April
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-06-30",
            "2024-06-01",
            149_000,
            "kWh",
            "$31,290.00",
        ],  # end before start
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-07-01",
            "2024-07-31",
            "approx 160000",
            "kWh",
            "$33,600.00",
        ],  # text
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-08-01",
            "2024-08-31",
            171_000,
            "kWh",
            "$35,910.00",
        ],
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-08-01",
            "2024-08-31",
            171_000,
            "kWh",
            "$35,910.00",
        ],  # duplicate
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "2024-09-01",
            "2024-09-30",
            1_250,
            "m3",
            "$410.00",
        ],  # water units
        [
            "48-1120-0091",
            "ELEC-4471-0091",
            "",
            "2024-10-31",
            165_000,
            "kWh",
            "$34,650.00",
        ],  # missing start
    ]
    for r in rows:
        ws.append(r)
    p = wb.create_sheet("Properties")
    p.append(
        [
            "Property Ref",
            "Property Name",
            "Street",
            "City",
            "State",
            "Postal Code",
            "Country",
            "Property Type",
        ]
    )
    p.append(
        [
            "RP-001",
            "Riverside Park",
            "250 Riverside Drive",
            "New York",
            "NY",
            "10025",
            "US",
            "office",
        ]
    )
    p.append(
        ["HP-002", "Harbour Point", "14 Wapping Wall", "London", "", "E1W 3SG", "UK", "office"]
    )  # UK
    p.append(["QS-003", "Quayside", "", "Leeds", "", "LS10 1DJ", "GB", "office"])  # no street
    b = wb.create_sheet("Buildings")
    b.append(
        [
            "Property Ref",
            "Building Name",
            "Primary Use Type",
            "Gross Floor Area (m²)",
            "Year Built",
            "Floors",
        ]
    )
    b.append(["RP-001", "Riverside Tower", "office", 18500, 1987, 22])
    b.append(["XX-404", "Ghost Building", "office", 1000, 2001, 2])  # unknown property
    u = wb.create_sheet("Use Types")
    u.append(["Property Ref", "Building Name", "Use Type", "Floor Area (m²)"])
    u.append(["RP-001", "Riverside Tower", "office", 15000])
    u.append(["RP-001", "Riverside Tower", "retail", 3000])  # 18,000 ≠ 18,500
    wb.save(HERE / "deliberate_errors.xlsx")


def main() -> None:
    register()
    bills_workbook()
    pm_template()
    wide_monthly()
    utility_csv()
    green_button()
    deliberate_errors()


if __name__ == "__main__":
    main()
