"""Report content and renderers as pure functions over plain dicts (no database, no server)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest
from openpyxl import load_workbook

from bpservice.reporting.content.blocks import NoData, building_row
from bpservice.reporting.content.certificate import benchmark_certificate
from bpservice.reporting.content.custom import custom
from bpservice.reporting.content.portfolio import portfolio_summary, portfolio_totals
from bpservice.reporting.render import render

REPORT = {
    "id": "rpt_test",
    "type": "custom",
    "format": "csv",
    "period": {"start": dt.date(2025, 1, 1), "end": dt.date(2025, 12, 31)},
    "generated_at": dt.datetime(2026, 1, 5, 10, 0, tzinfo=dt.UTC),
    "filters": {},
}
ORG = {"id": "org_1", "name": "Acme Estates"}


def entry(name: str, gfa: float, eui: float | None, prop: str = "Alpha") -> dict[str, Any]:
    energy = {"electricity": eui * gfa} if eui is not None else {}
    return {
        "building": {
            "id": f"bld_{name}",
            "name": name,
            "primary_use_type": "office",
            "use_types": None,
            "gfa_m2": gfa,
            "year_built": 2000,
            "floors": 3,
        },
        "property": {
            "id": f"prp_{prop}",
            "name": prop,
            "type": "office",
            "country": "GB",
            "city": "London",
            "street": "1 Way",
        },
        "benchmark": None
        if eui is None
        else {
            "reporting_period": {"start": "2025-01-01", "end": "2025-12-31"},
            "data_quality_grade": "A",
            "eui_kwh_m2": eui,
            "carbon_intensity_kgco2e_m2": eui / 5,
            "scores": [
                {
                    "standard": "svc",
                    "score": 50,
                    "percentile": 50,
                    "peer_group": "g",
                    "peer_count": 3,
                }
            ],
        },
        "energy_kwh": energy,
        "water_m3": None,
    }


TEMPLATE = {
    "id": "rtp_1",
    "name": "T",
    "columns": ["building_name", "gfa_m2", "eui_kwh_m2"],
    "sort": "eui_kwh_m2",
}


def test_custom_sorts_with_missing_values_last_and_totals_only_quantities() -> None:
    doc = custom(
        REPORT, ORG, TEMPLATE, [entry("b", 200, 150), entry("a", 100, None), entry("c", 300, 90)]
    )
    (table,) = doc.tables()
    assert [r["building_name"] for r in table.rows] == ["c", "b", "a"]
    assert table.totals == {"gfa_m2": 600, "building_name": "Total"}  # EUI is not summed
    body = json.loads(render(doc, "json"))
    assert body["rows"][2] == {"building_name": "a", "gfa_m2": 100, "eui_kwh_m2": None}
    assert body["report"]["reporting_period"] == {"start": "2025-01-01", "end": "2025-12-31"}


def test_csv_neutralises_formulas() -> None:
    evil = entry('=HYPERLINK("http://x")', 100, 10)
    doc = custom(REPORT, ORG, TEMPLATE, [evil])
    rows = list(csv.reader(io.StringIO(render(doc, "csv").decode("utf-8-sig"))))
    assert rows[0] == ["building_name", "gfa_m2", "eui_kwh_m2"]
    assert rows[1][0].startswith("'=")
    wb = load_workbook(io.BytesIO(render(doc, "xlsx")))
    # xlsx has string cells: the text is kept exactly, with no visible apostrophe
    assert wb["Report"]["A4"].value == '=HYPERLINK("http://x")'
    assert wb["Report"]["A4"].data_type == "s"


def test_portfolio_totals_are_area_weighted() -> None:
    rows = [
        building_row(e) for e in (entry("a", 100, 200), entry("b", 300, 100), entry("c", 50, None))
    ]
    totals = portfolio_totals(rows)
    assert totals["gfa_m2"] == 450
    assert totals["annual_energy_kwh"] == pytest.approx(20_000 + 30_000)
    assert totals["eui_kwh_m2"] == pytest.approx(50_000 / 400)


def test_nothing_to_report_raises_no_data() -> None:
    with pytest.raises(NoData):
        portfolio_summary(REPORT, ORG, [], None)
    with pytest.raises(NoData):
        benchmark_certificate(REPORT, ORG, entry("a", 100, None), [])
