"""Compliance numbers, round two, over real HTTP: each meter named with its months in a compliance
report, a part year said to be annualised and how, and no borrowed years in a portfolio summary."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Service
from tests.service.test_reports import (
    NYC,
    YEAR,
    column,
    complete,
    download,
    make_building,
    months,
    ok,
    pdf_text,
    sheet_rows,
    summary_of,
    table_of,
)


def _meter(api: httpx.Client, building: dict[str, Any], name: str, count: int) -> None:
    """An electricity meter called `name` with 100,000 kWh readings for the first `count` months
    of YEAR."""
    meter = ok(
        api.post(
            f"/v1/buildings/{building['id']}/meters",
            json={"type": "electricity", "unit": "kWh", "name": name},
        ),
        201,
    )["data"]
    readings = [
        {"start_date": s, "end_date": e, "consumption": 100_000} for s, e in months(YEAR)[:count]
    ]
    path = f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings/batch"
    ok(api.post(path, json={"readings": readings}), 201)


def test_ll97_report_names_each_meter_and_says_the_year_is_annualised(
    service: Service, api: httpx.Client
) -> None:
    """Issue items 2 and 3: two electricity meters, 'Main supply' with all of 2025 and 'Car park'
    with January-June only (181 of 365 days). The coverage table and the estimate warning name
    each meter with its months; the result says the figures are annualised, how, and from which
    months (the issue's part-year report scaled to 544.14 t without a word)."""
    building = make_building(api, **NYC, gfa=3000)
    _meter(api, building, "Main supply", 12)
    _meter(api, building, "Car park", 6)
    report = complete(
        api, service, type="compliance_ll97", format="xlsx", building_id=building["id"]
    )
    data = download(service, report)
    headings, body, _ = table_of(sheet_rows(data, "Coverage"))
    rows = {r[column(headings, "Energy meter")]: r for r in body}
    assert set(rows) == {"Main supply (electricity)", "Car park (electricity)"}
    months_col = column(headings, "Months with readings")
    assert rows["Main supply (electricity)"][months_col] == "January to December 2025"
    assert rows["Car park (electricity)"][months_col] == "January to June 2025"
    assert rows["Car park (electricity)"][column(headings, "Months estimated")] == 6
    basis = str(summary_of(data)["Basis"])
    assert basis.startswith("Annualised from part of the year")
    assert "Car park (electricity): readings in 6 of 12 months (January to June 2025)" in basis
    assert "181 of 365 days" in basis and "days in the year / its days with readings" in basis
    assert "Main supply" not in basis  # a whole year is not estimated
    text = " ".join(str(r[0]) for r in sheet_rows(data, "Summary") if r and r[0])
    assert "estimated from part of the year" in text
    assert "electricity 6 of 12 months" not in text
    # Energy: the full meter as metered, the half-year meter scaled by 365 / 181.
    headings, _, totals = table_of(sheet_rows(data, "Emissions"))
    assert totals is not None
    expected = 1_200_000 + 600_000 * 365 / 181
    assert abs(totals[column(headings, "Energy (kWh)")] - expected) < 1e-3


def test_portfolio_summary_for_a_year_without_data_borrows_no_other_year(
    service: Service, api: httpx.Client
) -> None:
    """Issue item 4: a portfolio summary for 2023, a year with no readings, printed other years'
    EUIs under the 2023 dates (the terminal's 2025 summary silently used 2023-2024 data). The
    buildings here have 2025 readings only: the 2023 summary says there is no data for 2023 and
    shows the 2025 figures only in their own sheet, dated 2025, outside the totals."""
    make_building(api, name="A1", gfa=1000, monthly={("electricity", "kWh"): 10_000})
    report = complete(
        api,
        service,
        type="portfolio_summary",
        format="xlsx",
        reporting_period={"start": "2023-01-01", "end": "2023-12-31"},
    )
    data = download(service, report)
    headings, body, totals = table_of(sheet_rows(data, "Buildings"))
    assert body[0][column(headings, "EUI (kWh/m²)")] is None
    assert body[0][column(headings, "Assessment period")] == "no data in requested period"
    assert totals is not None and totals[column(headings, "EUI (kWh/m²)")] is None
    headings, body, _ = table_of(sheet_rows(data, "Other periods"))
    row = body[0]
    assert str(row[column(headings, "From")])[:10] == "2025-01-01"
    assert str(row[column(headings, "To")])[:10] == "2025-12-31"
    assert row[column(headings, "EUI (kWh/m²)")] == 120  # 120,000 kWh / 1,000 m², dated 2025
    text = " ".join(str(c) for r in sheet_rows(data, "Summary") for c in r if c)
    assert "No energy data for this period" in text and "other dates" in text


def _office_at_the_national_median(api: httpx.Client) -> dict[str, Any]:
    """A 50,000 ft² Chicago office whose source EUI is 116.4 kBtu/ft², the national median of
    EPA's U.S. Energy Use Intensity by Property Type table: electricity only, source = site x
    2.80 (EPA's US ratio)."""
    gfa = 50_000 / 10.7639
    monthly = 116.4 * 3.15459 * gfa / 2.80 / 12
    return make_building(
        api,
        country="US",
        city="Chicago",
        state="IL",
        gfa=gfa,
        monthly={("electricity", "kWh"): monthly},
    )


def test_certificate_says_where_an_office_scores_50(service: Service, api: httpx.Client) -> None:
    """Issue item 5: a 50,000 ft² US office whose source EUI is the national median of EPA's
    U.S. Energy Use Intensity by Property Type table (116.4 kBtu/ft²) scores 66 with EPA's
    office model (Technical Reference, August 2018), because the model predicts 168.6 kBtu/ft²
    for an office of that size. The certificate says where this building would score 50: at
    the prediction x 0.8586, the median ratio of the model's own reference (144.7 kBtu/ft² =
    456.6 kWh/m²)."""
    building = _office_at_the_national_median(api)
    report = complete(
        api, service, type="benchmark_certificate", format="pdf", building_id=building["id"]
    )
    text = " ".join(pdf_text(download(service, report)).split())
    assert "66 / 100" in text
    # reportlab writes ² as the octal escape \262 in the page stream.
    assert "scores 50 at a source EUI of 456.6 kWh/m\\262/yr (144.7 kBtu/ft\\262)" in text


def test_benchmarks_state_where_an_office_scores_50(service: Service, api: httpx.Client) -> None:
    """The same 50,000 ft² office over GET /v1/buildings/{id}/benchmarks: the energy_rating
    carries the source EUI at which it would score 50 (144.7 kBtu/ft² = 456.6 kWh/m², EPA's
    office model prediction x 0.8586), so a client sees that score 66 at the national median
    table's 116.4 kBtu/ft² is no error."""
    building = _office_at_the_national_median(api)
    scores = ok(api.get(f"/v1/buildings/{building['id']}/benchmarks"))["data"]["scores"]
    rating = next(s for s in scores if s["standard"] == "energy_rating")
    assert rating["score"] == 66
    assert round(rating["median_source_eui_kwh_m2"], 1) == 456.6
