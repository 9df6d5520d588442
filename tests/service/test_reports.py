"""Reports over real HTTP: the types table, request validation, background generation (called
deterministically with generate_pending, and once through the live worker loop), signed download
URLs, content checks on the generated files, templates and the list."""

from __future__ import annotations

import base64
import calendar
import csv
import datetime as dt
import io
import json
import re
import time
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from openpyxl import load_workbook
from sqlalchemy import select

from bpservice.app import create_app
from bpservice.db.models import Event
from bpservice.settings import RateLimits, Settings
from bpservice.workers.reports import generate_pending
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap

YEAR = 2025
PERIOD = {"start": f"{YEAR}-01-01", "end": f"{YEAR}-12-31"}


# --- helpers -------------------------------------------------------------------------------------


def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()


def months(year: int) -> list[tuple[str, str]]:
    return [
        (f"{year}-{m:02d}-01", f"{year}-{m:02d}-{calendar.monthrange(year, m)[1]:02d}")
        for m in range(1, 13)
    ]


def make_building(
    api: httpx.Client,
    *,
    name: str = "Main",
    property_name: str = "Riverside House",
    country: str = "GB",
    city: str = "City",
    state: str | None = None,
    use: str = "office",
    gfa: float = 1000.0,
    use_types: list[dict[str, Any]] | None = None,
    property_id: str | None = None,
    monthly: dict[tuple[str, str], float] | None = None,
) -> dict[str, Any]:
    """A building (on a new property unless given) with a year of monthly readings per meter:
    `monthly` maps (meter type, unit) to the consumption of every month of YEAR."""
    if property_id is None:
        address = {"street": "1 High Street", "city": city, "country": country}
        if state:
            address["state"] = state
        body = {"name": property_name, "address": address, "type": use}
        property_id = ok(api.post("/v1/properties", json=body), 201)["data"]["id"]
    body = {"name": name, "primary_use_type": use, "gfa_m2": gfa, "year_built": 1990, "floors": 5}
    if use_types:
        body["use_types"] = use_types
    building = ok(api.post(f"/v1/properties/{property_id}/buildings", json=body), 201)["data"]
    for (meter_type, unit), amount in (monthly or {}).items():
        meter = ok(
            api.post(
                f"/v1/buildings/{building['id']}/meters", json={"type": meter_type, "unit": unit}
            ),
            201,
        )["data"]
        readings = [
            {"start_date": s, "end_date": e, "consumption": amount} for s, e in months(YEAR)
        ]
        path = f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings/batch"
        result = ok(api.post(path, json={"readings": readings}), 201)["data"]
        assert result["accepted"] == 12
    return building


def request_report(api: httpx.Client, **body: Any) -> dict[str, Any]:
    body.setdefault("reporting_period", PERIOD)
    return ok(api.post("/v1/reports", json=body), 202)["data"]


def generate(service: Service) -> int:
    return generate_pending(service.app, service.clock())


def complete(api: httpx.Client, service: Service, **body: Any) -> dict[str, Any]:
    report = request_report(api, **body)
    assert generate(service) >= 1
    data = ok(api.get(f"/v1/reports/{report['id']}"))["data"]
    assert data["status"] == "complete", data
    return data


def download(service: Service, report: dict[str, Any]) -> bytes:
    """Fetch the signed URL the way a browser would: no Authorization header."""
    with service.client("") as anonymous:
        response = anonymous.get(report["download_url"])
    assert response.status_code == 200, response.text
    assert len(response.content) == report["file_size_bytes"]
    return response.content


def pdf_text(data: bytes) -> str:
    """The text drawn on a reportlab PDF's pages: inflate each content stream, join its strings."""
    assert data.startswith(b"%PDF-")
    chunks = []
    for raw in re.findall(rb"stream\r?\n(.*?)endstream", data, re.S):
        raw = raw.strip()
        if raw.endswith(b"~>"):  # reportlab writes [/ASCII85Decode /FlateDecode] streams
            raw = zlib.decompress(base64.a85decode(raw[:-2]))
        for s in re.findall(rb"\((.*?)(?<!\\)\)\s*Tj", raw, re.S):
            chunks.append(s.replace(rb"\(", b"(").replace(rb"\)", b")").decode("latin-1"))
    return " ".join(chunks)


def sheet_rows(data: bytes, sheet: str) -> list[list[Any]]:
    wb = load_workbook(io.BytesIO(data))
    return [list(r) for r in wb[sheet].iter_rows(values_only=True)]


def table_of(rows: list[list[Any]]) -> tuple[list[Any], list[list[Any]], list[Any] | None]:
    """(headings, body rows, totals row) of a table sheet written by the xlsx renderer: title,
    blank row, heading row, the rows, a totals row whose first cell is 'Total', then a note."""
    headings, body, totals = rows[2], [], None
    for row in rows[3:]:
        if all(v is None for v in row):
            break
        if row[0] == "Total":
            totals = row
            break
        body.append(row)
    return headings, body, totals


def column(headings: list[Any], title: str) -> int:
    return headings.index(title)


# --- the types table ---------------------------------------------------------------------------


def test_types_are_the_spec_table(checked: httpx.Client) -> None:
    data = ok(checked.get("/v1/reports/types"))["data"]
    assert [(t["type"], t["formats"], t["scope"]) for t in data] == [
        ("benchmark_certificate", ["pdf"], "building"),
        ("portfolio_summary", ["pdf", "xlsx"], "organisation"),
        ("compliance_esg", ["xlsx"], "organisation"),
        ("compliance_ll97", ["pdf", "xlsx"], "building"),
        ("compliance_berdo", ["pdf", "xlsx"], "building"),
        ("custom", ["pdf", "xlsx", "csv", "json"], "organisation"),
    ]
    assert all(set(t) == {"type", "description", "formats", "scope"} for t in data)
    assert all(t["description"] for t in data)


# --- request validation --------------------------------------------------------------------------


def test_request_validation(service: Service, checked: httpx.Client) -> None:
    office = make_building(checked)
    mixed = make_building(checked, name="Mixed", use="mixed_use", country="US")
    small_nyc = make_building(checked, name="Small", country="US", city="New York", state="NY")
    with service.client(service.live_key) as live:
        live_building = make_building(live, name="Live")
    cases: list[tuple[dict[str, Any], str, str]] = [
        (
            {"type": "benchmark_certificate", "format": "xlsx", "building_id": office["id"]},
            "format",
            "unsupported_format",
        ),
        ({"type": "compliance_esg", "format": "pdf"}, "format", "unsupported_format"),
        ({"type": "benchmark_certificate", "format": "pdf"}, "building_id", "required"),
        (
            {
                "type": "benchmark_certificate",
                "format": "pdf",
                "building_id": office["id"],
                "filters": {"country": "GB"},
            },
            "filters",
            "not_allowed",
        ),
        (
            {"type": "portfolio_summary", "format": "pdf", "building_id": office["id"]},
            "building_id",
            "not_allowed",
        ),
        (
            {"type": "benchmark_certificate", "format": "pdf", "building_id": live_building["id"]},
            "building_id",
            "not_found",
        ),
        (
            {"type": "benchmark_certificate", "format": "pdf", "building_id": "bld_nope"},
            "building_id",
            "not_found",
        ),
        ({"type": "custom", "format": "csv"}, "template_id", "required"),
        (
            {"type": "custom", "format": "csv", "template_id": "rtp_missing"},
            "template_id",
            "not_found",
        ),
        (
            {"type": "portfolio_summary", "format": "pdf", "template_id": "rtp_x"},
            "template_id",
            "not_allowed",
        ),
        (
            {
                "type": "compliance_ll97",
                "format": "pdf",
                "building_id": office["id"],
                "reporting_period": {"start": "2023-01-01", "end": "2023-12-31"},
            },
            "reporting_period",
            "unsupported_compliance_year",
        ),
        (
            {
                "type": "compliance_berdo",
                "format": "pdf",
                "building_id": office["id"],
                "reporting_period": {"start": "2024-01-01", "end": "2024-12-31"},
            },
            "reporting_period",
            "unsupported_compliance_year",
        ),
        (
            {
                "type": "compliance_ll97",
                "format": "pdf",
                "building_id": office["id"],
                "reporting_period": {"start": "2025-01-15", "end": "2025-12-31"},
            },
            "reporting_period",
            "whole_months_required",
        ),
        (
            {
                "type": "compliance_ll97",
                "format": "pdf",
                "building_id": office["id"],
                "reporting_period": {"start": "2024-07-01", "end": "2025-06-30"},
            },
            "reporting_period",
            "calendar_year_required",
        ),
        (
            {
                "type": "compliance_berdo",
                "format": "pdf",
                "building_id": office["id"],
                "reporting_period": {"start": "2025-01-01", "end": "2025-06-30"},
            },
            "reporting_period",
            "calendar_year_required",
        ),
        (  # A London office gets "not applicable", never an LL97 or BERDO verdict.
            {"type": "compliance_ll97", "format": "pdf", "building_id": office["id"]},
            "building_id",
            "not_applicable",
        ),
        (
            {"type": "compliance_berdo", "format": "pdf", "building_id": office["id"]},
            "building_id",
            "not_applicable",
        ),
        (  # In New York but 10,764 ft² (LL97 covers more than 25,000 ft²).
            {"type": "compliance_ll97", "format": "pdf", "building_id": small_nyc["id"]},
            "building_id",
            "not_applicable",
        ),
        (
            {"type": "compliance_ll97", "format": "pdf", "building_id": mixed["id"]},
            "building_id",
            "unmapped_use_type",
        ),
        (
            {
                "type": "portfolio_summary",
                "format": "pdf",
                "reporting_period": {"start": "2026-01-01", "end": "2026-12-31"},
            },
            "reporting_period.end",
            "future_date",
        ),
        (
            {
                "type": "portfolio_summary",
                "format": "pdf",
                "reporting_period": {"start": "2023-01-01", "end": "2025-12-31"},
            },
            "reporting_period",
            "period_too_long",
        ),
    ]
    for body, field, code in cases:
        body.setdefault("reporting_period", PERIOD)
        r = checked.post("/v1/reports", json=body)
        assert r.status_code == 422, (body, r.text)
        error = r.json()["error"]
        assert error["code"] == "validation_error"
        assert error["details"][0]["field"] == field and error["details"][0]["code"] == code, body
    r = checked.post(
        "/v1/reports",
        json={"type": "compliance_esg", "format": "pdf", "reporting_period": PERIOD},
    )
    assert r.json()["error"]["allowed_formats"] == ["xlsx"]
    # Shape errors: unknown type, missing period, reversed period, unknown field, bad filter.
    for body in (
        {"type": "annual", "format": "pdf", "reporting_period": PERIOD},
        {"type": "portfolio_summary", "format": "pdf"},
        {
            "type": "portfolio_summary",
            "format": "pdf",
            "reporting_period": {"start": "2025-12-31", "end": "2025-01-01"},
        },
        {"type": "portfolio_summary", "format": "pdf", "reporting_period": PERIOD, "x": 1},
        {
            "type": "portfolio_summary",
            "format": "pdf",
            "reporting_period": PERIOD,
            "filters": {"country": "UK"},
        },
    ):
        r = checked.post("/v1/reports", json=body)
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", r.text
    # Nothing was queued by any refused request.
    assert ok(checked.get("/v1/reports"))["meta"]["total"] == 0


def test_scopes(service: Service) -> None:
    reader = service.new_key(["reports:read"])
    with service.client(reader) as client:
        assert client.get("/v1/reports/types").status_code == 200
        r = client.post(
            "/v1/reports",
            json={"type": "portfolio_summary", "format": "pdf", "reporting_period": PERIOD},
        )
        assert r.status_code == 403 and r.json()["error"]["required_scope"] == "reports:write"
        r = client.post("/v1/reports/templates", json={"name": "x", "columns": ["building_id"]})
        assert r.status_code == 403
    with service.client(service.new_key(["properties:read"])) as client:
        assert client.get("/v1/reports").status_code == 403


# --- lifecycle, signed URLs, events ------------------------------------------------------------


def test_certificate_lifecycle_and_signed_urls(
    service: Service, checked: httpx.Client, api: httpx.Client, tmp_path: Path
) -> None:
    building = make_building(
        checked,
        name="Tower A",
        property_name="Riverside House",
        monthly={("electricity", "kWh"): 10_000, ("natural_gas", "kWh"): 5_000},
    )
    r = checked.post(
        "/v1/reports",
        json={
            "type": "benchmark_certificate",
            "format": "pdf",
            "building_id": building["id"],
            "reporting_period": PERIOD,
        },
    )
    assert r.status_code == 202, r.text
    accepted = r.json()["data"]
    assert set(accepted) == {"id", "type", "status", "format", "created_at", "estimated_completion"}
    assert accepted["id"].startswith("rpt_") and accepted["status"] == "processing"
    assert accepted["estimated_completion"] > accepted["created_at"]
    assert r.headers["Location"] == f"/v1/reports/{accepted['id']}"

    pending = ok(checked.get(f"/v1/reports/{accepted['id']}"))["data"]
    assert pending["status"] == "processing" and pending["download_url"] is None
    r = api.get(f"/v1/reports/{accepted['id']}/download")
    assert r.status_code == 409 and r.json()["error"]["code"] == "report_not_ready"

    service.clock.advance(3)
    assert generate(service) == 1
    assert generate(service) == 0  # nothing left
    report = ok(checked.get(f"/v1/reports/{accepted['id']}"))["data"]
    now = service.clock()
    assert report["status"] == "complete"
    assert report["completed_at"] == now.isoformat().replace("+00:00", "Z")
    expires = dt.datetime.fromisoformat(report["download_expires_at"].replace("Z", "+00:00"))
    assert expires == now + dt.timedelta(hours=24)
    assert report["download_url"].startswith(
        f"{service.base_url}/v1/reports/{report['id']}/download?"
    )
    assert report["reason"] is None and report["reason_code"] is None

    pdf = download(service, report)
    text = pdf_text(pdf)
    for expected in (
        "Building Performance Certificate",
        "Tower A",
        "Riverside House",
        "2025-01-01 to 2025-12-31",
        "Energy use intensity",
        "kWh/m",
        "svc benchmark",
    ):
        assert expected in text, expected
    # 12 x 15,000 kWh over 1,000 m² = 180 kWh/m²/yr
    assert "180.0 kWh/m" in text

    # The event went out in the same transaction, without the URL (a credential).
    with service.app.state.db.read() as session:
        events = session.scalars(select(Event).where(Event.type == "report.generated")).all()
    assert len(events) == 1
    assert events[0].data["report"]["id"] == report["id"]
    assert events[0].data["report"]["file_size_bytes"] == report["file_size_bytes"]
    assert "download_url" not in json.dumps(events[0].data)

    # The bearer token alone also downloads (spec scope reports:read).
    r = api.get(f"/v1/reports/{report['id']}/download")
    assert r.status_code == 200 and r.content == pdf
    assert r.headers["content-type"] == "application/pdf"
    assert r.headers["content-disposition"].endswith('.pdf"')

    url = urlsplit(report["download_url"])
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    with service.client("") as anonymous:
        # No signature and no token.
        r = anonymous.get(f"/v1/reports/{report['id']}/download")
        assert r.status_code == 401
        # Tampered signature, tampered expiry, signature of another report.
        for bad in (
            {**query, "signature": "0" * 64},
            {**query, "expires": str(int(query["expires"]) + 3600)},
            {"expires": query["expires"]},
        ):
            r = anonymous.get(f"{url.path}?{urlencode(bad)}")
            assert r.status_code == 403 and r.json()["error"]["code"] == "download_url_invalid"
        other = url.path.replace(report["id"], "rpt_" + "0" * 24)
        r = anonymous.get(f"{other}?{url.query}")
        assert r.status_code == 403 and r.json()["error"]["code"] == "download_url_invalid"

        # 24 hours later the URL is refused clearly, even with a token; a fresh read gives a new one.
        service.clock.advance(24 * 3600)
        r = anonymous.get(report["download_url"])
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "download_url_expired"
        assert "fresh URL" in r.json()["error"]["message"]
        assert api.get(report["download_url"]).status_code == 403
        fresh = ok(checked.get(f"/v1/reports/{report['id']}"))["data"]
        assert fresh["download_url"] != report["download_url"]
        assert anonymous.get(fresh["download_url"]).content == pdf

    # Reports are per environment: the live key cannot see it.
    with service.client(service.live_key) as live:
        assert live.get(f"/v1/reports/{report['id']}").status_code == 404
        assert live.get(f"/v1/reports/{report['id']}/download").status_code == 404
        assert ok(live.get("/v1/reports"))["meta"]["total"] == 0

    # The signing key is in the database: a restarted service accepts the URL it issued.
    db_url = service.app.state.settings.database_url
    restarted = create_app(Settings(database_url=db_url, clock=service.clock, run_workers=False))
    with LiveServer(restarted) as server, httpx.Client(base_url=server.url) as client:
        path = urlsplit(fresh["download_url"])
        r = client.get(f"{path.path}?{path.query}")
        assert r.status_code == 200 and r.content == pdf


def test_failed_report_has_a_reason(service: Service, api: httpx.Client) -> None:
    empty = make_building(api, name="No data")
    report = request_report(
        api, type="benchmark_certificate", format="pdf", building_id=empty["id"]
    )
    assert generate(service) == 1
    data = ok(api.get(f"/v1/reports/{report['id']}"))["data"]
    assert data["status"] == "failed"
    assert data["reason_code"] == "no_data" and "no energy data" in data["reason"]
    assert data["download_url"] is None and data["completed_at"] is None
    assert data["failed_at"] is not None
    r = api.get(f"/v1/reports/{report['id']}/download")
    assert r.status_code == 409 and r.json()["error"]["code"] == "report_failed"
    with service.app.state.db.read() as session:
        assert not session.scalars(select(Event).where(Event.type == "report.generated")).all()

    # A compliance year with no readings in it fails too (the building has 2025 data only).
    building = make_building(
        api,
        country="US",
        city="New York",
        state="NY",
        gfa=3000,
        monthly={("electricity", "kWh"): 1000},
    )
    service.clock.advance(400 * 24 * 3600)  # 2027-12: the 2026 calendar year is over
    report = request_report(
        api,
        type="compliance_ll97",
        format="pdf",
        building_id=building["id"],
        reporting_period={"start": "2026-01-01", "end": "2026-12-31"},
    )
    generate(service)
    data = ok(api.get(f"/v1/reports/{report['id']}"))["data"]
    assert (data["status"], data["reason_code"]) == ("failed", "no_data")
    assert "2026-01-01" in data["reason"]


# --- content -------------------------------------------------------------------------------------


def _portfolio(api: httpx.Client) -> list[dict[str, Any]]:
    """Three GB offices (two on one property, one without readings) and a US retail building."""
    a = make_building(
        api,
        name="A1",
        property_name="Alpha",
        gfa=1000,
        monthly={("electricity", "kWh"): 10_000, ("water", "m3"): 50},
    )
    b = make_building(
        api,
        name="A2",
        property_id=a["property_id"],
        gfa=2000,
        monthly={("electricity", "kWh"): 12_000, ("natural_gas", "kWh"): 8_000},
    )
    c = make_building(api, name="B1", property_name="Beta", gfa=500)
    d = make_building(
        api,
        name="US1",
        property_name="Gamma",
        country="US",
        use="retail",
        gfa=1500,
        monthly={("electricity", "kWh"): 9_000},
    )
    return [a, b, c, d]


def test_portfolio_summary_xlsx_and_pdf(service: Service, api: httpx.Client) -> None:
    _portfolio(api)
    report = complete(
        api, service, type="portfolio_summary", format="xlsx", filters={"country": "GB"}
    )
    rows = sheet_rows(download(service, report), "Buildings")
    headings, body, totals = table_of(rows)
    building_col = column(headings, "Building")
    assert sorted(r[building_col] for r in body) == ["A1", "A2", "B1"]  # one row per building
    gfa = column(headings, "GFA (m²)")
    energy = column(headings, "Annual energy (kWh)")
    eui = column(headings, "EUI (kWh/m²)")
    by_name = {r[building_col]: r for r in body}
    assert by_name["A1"][energy] == pytest.approx(120_000)
    assert by_name["A2"][energy] == pytest.approx(240_000)
    assert by_name["A1"][eui] == pytest.approx(120)
    assert by_name["B1"][energy] is None and by_name["B1"][eui] is None
    assert totals is not None
    assert totals[gfa] == pytest.approx(3500)
    assert totals[energy] == pytest.approx(360_000)
    # Area-weighted over the buildings with data: 360,000 kWh / 3,000 m².
    assert totals[eui] == pytest.approx(120)
    emissions = column(headings, "Annual emissions (tCO2e)")
    assert totals[emissions] == pytest.approx(sum(r[emissions] or 0 for r in body))
    summary = sheet_rows(download(service, report), "Summary")
    assert summary[0][0] == "Portfolio Summary"

    pdf_report = complete(api, service, type="portfolio_summary", format="pdf")
    text = pdf_text(download(service, pdf_report))
    for name in ("A1", "A2", "B1", "US1", "Total", "4 buildings"):
        assert name in text


def test_esg_workbook_per_property(service: Service, api: httpx.Client) -> None:
    _portfolio(api)
    report = complete(api, service, type="compliance_esg", format="xlsx")
    data = download(service, report)
    wb = load_workbook(io.BytesIO(data))
    assert wb.sheetnames == ["Summary", "Energy", "GHG", "Water", "Coverage"]
    summary = summary_of(data)
    assert summary["Assessment period used"].startswith("2025-01-01 to 2025-12-31")
    headings, body, _ = table_of(sheet_rows(data, "Coverage"))
    complete_col = column(headings, "Months fully metered (least)")
    assert sorted(r[complete_col] for r in body if r[complete_col] is not None) == [12, 12, 12]

    headings, body, totals = table_of(sheet_rows(data, "Energy"))
    prop = column(headings, "Property")
    assert [r[prop] for r in body] == ["Alpha", "Beta", "Gamma"]  # one row per property
    alpha = body[0]
    assert alpha[column(headings, "Buildings")] == 2
    assert alpha[column(headings, "Electricity (kWh)")] == pytest.approx(264_000)
    assert alpha[column(headings, "Natural gas (kWh)")] == pytest.approx(96_000)
    assert alpha[column(headings, "Total energy (kWh)")] == pytest.approx(360_000)
    assert alpha[column(headings, "Energy intensity (kWh/m²)")] == pytest.approx(120)
    assert body[1][column(headings, "Buildings with data")] == 0
    assert totals is not None
    assert totals[column(headings, "Total energy (kWh)")] == pytest.approx(360_000 + 108_000)
    assert totals[column(headings, "GFA (m²)")] == pytest.approx(5000)

    headings, body, totals = table_of(sheet_rows(data, "GHG"))
    total_col = column(headings, "Total emissions (tCO2e)")
    s1, s2 = (
        column(headings, "Scope 1 (fuels burnt on site) (tCO2e)"),
        column(headings, "Scope 2 (purchased energy) (tCO2e)"),
    )
    for row in body:
        if row[total_col] is not None:
            assert row[total_col] == pytest.approx(row[s1] + row[s2])
    assert body[0][s1] > 0  # Alpha burns gas
    assert totals is not None
    assert totals[total_col] == pytest.approx(sum(r[total_col] or 0 for r in body))

    headings, body, totals = table_of(sheet_rows(data, "Water"))
    water = column(headings, "Water (m³)")
    assert body[0][water] == pytest.approx(600)
    assert body[0][column(headings, "Water intensity (m³/m²)")] == pytest.approx(0.6)
    assert totals is not None and totals[water] == pytest.approx(600)


NYC = {"country": "US", "city": "New York", "state": "NY"}
BOSTON = {"country": "US", "city": "Boston", "state": "MA"}


def summary_of(data: bytes) -> dict[str, Any]:
    """Label -> value column of the xlsx Summary sheet (numbers stay numbers)."""
    return {r[0]: r[1] for r in sheet_rows(data, "Summary") if r and r[0]}


def test_ll97_figures(service: Service, api: httpx.Client) -> None:
    # 10,000 m² of which 8,000 office and 2,000 retail, in Manhattan; a year (2025) of 100,000
    # kWh electricity and 1,000 therms of gas a month.
    building = make_building(
        api,
        **NYC,
        gfa=10_000,
        use_types=[{"type": "office", "gfa_m2": 8000}, {"type": "retail", "gfa_m2": 2000}],
        monthly={("electricity", "kWh"): 100_000, ("natural_gas", "therms"): 1_000},
    )
    report = complete(
        api, service, type="compliance_ll97", format="xlsx", building_id=building["id"]
    )
    data = download(service, report)
    # By hand: electricity 1,200,000 kWh x 0.000288962 = 346.7544 t; gas 12,000 therms =
    # 1,200,000 kBtu x 0.00005311 = 63.732 t; total 410.4864 t.
    # Limit (1 RCNY §103-14, 2024-2029): Office 0.00758 and Retail Store 0.00758 tCO2e/ft² over
    # 107,639 ft² = 815.90362 t. The 2025 occupancy-group option: B 0.00846, M 0.01181.
    emissions = 346.7544 + 63.732
    limit = 10_000 * 10.7639 * 0.00758
    groups = 8000 * 10.7639 * 0.00846 + 2000 * 10.7639 * 0.01181
    headings, body, totals = table_of(sheet_rows(data, "Emissions"))
    tco2e = column(headings, "Emissions (tCO2e)")
    assert totals is not None and totals[tco2e] == pytest.approx(emissions, rel=1e-6)
    gas = next(r for r in body if r[0] == "Natural gas")
    assert gas[column(headings, "Quantity")] == pytest.approx(1_200_000, rel=1e-6)
    headings, body, totals = table_of(sheet_rows(data, "Limit"))
    assert [r[column(headings, "Property type")] for r in body] == ["Office", "Retail Store"]
    assert totals is not None and totals[column(headings, "Limit (tCO2e)")] == pytest.approx(limit)
    headings, body, totals = table_of(sheet_rows(data, "Limit (occupancy group)"))
    assert [r[column(headings, "Occupancy group")] for r in body] == [
        "B (business)",
        "M (mercantile)",
    ]
    assert totals is not None and totals[column(headings, "Limit (tCO2e)")] == pytest.approx(groups)
    summary = summary_of(data)
    # Headline figures are numbers, not text (issue 12, item 12).
    assert summary["Annual emissions"] == pytest.approx(emissions, rel=1e-6)
    assert summary["Excess emissions"] == 0
    assert summary["Status"] == "Within the limit"
    assert summary["Assessment period used"] == "calendar year 2025 (2025-01-01 to 2025-12-31)"
    assert any("not a filing" in str(r[0]) for r in sheet_rows(data, "Summary") if r and r[0])
    # Every table sheet has filter buttons over its data rows.
    wb = load_workbook(io.BytesIO(data))
    assert wb["Emissions"].auto_filter.ref.startswith("A3:")

    # Over the limit: an office burning far more. 3,000 m² office, 400,000 kWh a month.
    big = make_building(api, name="Big", **NYC, gfa=3000, monthly={("electricity", "kWh"): 400_000})
    report = complete(api, service, type="compliance_ll97", format="pdf", building_id=big["id"])
    text = pdf_text(download(service, report))
    # 4,800,000 x 0.000288962 = 1,387.0176 t; limit 32,291.7 x 0.00758 = 244.77109 t;
    # excess 1,142.24651 t; penalty $306,122.06.
    excess = 4_800_000 * 0.000288962 - 3000 * 10.7639 * 0.00758
    assert "1,387.02 tCO2e" in text and "244.77 tCO2e" in text
    assert f"{excess:,.2f} tCO2e" in text
    assert f"${excess * 268:,.2f}" in text and "Over the limit" in text
    assert "28-320" in text and "103-14" in text  # cited
    assert "[verified]" not in text and "shared/reference" not in text
    assert "Assessment period used" in text and "Data coverage" in text
    assert "not a filing" in text


def test_berdo_figures(service: Service, api: httpx.Client) -> None:
    # 4,000 m² (43,056 ft²) Boston office, 2025: 240,000 kWh a month.
    building = make_building(api, **BOSTON, gfa=4000, monthly={("electricity", "kWh"): 240_000})
    report = complete(
        api, service, type="compliance_berdo", format="xlsx", building_id=building["id"]
    )
    data = download(service, report)
    # 2,880 MWh x (1 - 0.27 RPS Class I 2025) x 249 kgCO2e/MWh = 523,497.6 kg over 43,055.6 ft²
    # = 12.159 kg/ft², above the 2025-2029 office standard of 5.3.
    kg = 2_880 * (1 - 0.27) * 249
    sqft = 4000 * 10.7639
    summary = summary_of(data)
    assert summary["Emissions intensity"] == pytest.approx(kg / sqft)
    assert summary["Emissions standard"] == pytest.approx(5.3)
    assert summary["Status"] == "Exceeds the standard"
    excess = (kg / 1000) - 5.3 * sqft / 1000
    assert summary["Excess emissions"] == pytest.approx(excess)
    assert summary["Alternative compliance payment"] == pytest.approx(excess * 234)
    headings, body, _ = table_of(sheet_rows(data, "Standard"))
    assert body[0][column(headings, "BERDO building type")] == "Office"
    headings, body, _ = table_of(sheet_rows(data, "Emissions"))
    electricity = body[0]
    assert electricity[column(headings, "Factor")] == pytest.approx(249 * 0.73)
    assert electricity[column(headings, "Factor unit")] == "kgCO2e/MWh"


def test_compliance_report_of_a_part_year_building(service: Service, api: httpx.Client) -> None:
    # Six months of readings in 2025: the report is for the calendar year, says which months are
    # estimated, and never compares half a year with the annual limit.
    building = make_building(api, **NYC, gfa=3000)
    meter = ok(
        api.post(
            f"/v1/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kWh"}
        ),
        201,
    )["data"]
    readings = [
        {"start_date": s, "end_date": e, "consumption": 100_000} for s, e in months(YEAR)[:6]
    ]
    path = f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings/batch"
    ok(api.post(path, json={"readings": readings}), 201)
    report = complete(
        api, service, type="compliance_ll97", format="xlsx", building_id=building["id"]
    )
    data = download(service, report)
    headings, body, _ = table_of(sheet_rows(data, "Coverage"))
    row = body[0]
    assert row[column(headings, "Months fully metered")] == 6
    assert row[column(headings, "Months estimated")] == 6
    # Energy scaled from the 181 days covered to the 365 days of the year.
    headings, body, totals = table_of(sheet_rows(data, "Emissions"))
    assert totals is not None
    assert totals[column(headings, "Energy (kWh)")] == pytest.approx(600_000 * 365 / 181)


# --- custom templates --------------------------------------------------------------------------


def test_templates_and_custom_reports(
    service: Service, checked: httpx.Client, api: httpx.Client
) -> None:
    _portfolio(api)
    columns = ok(checked.get("/v1/reports/templates/columns"))["data"]
    assert {"building_name", "eui_kwh_m2", "annual_water_m3"} <= {c["key"] for c in columns}

    r = checked.post("/v1/reports/templates", json={"name": "x", "columns": ["nope"]})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["code"] == "unknown_column"
    r = checked.post("/v1/reports/templates", json={"name": "x", "columns": []})
    assert r.status_code == 422
    body = {
        "name": "Energy list",
        "title": "Energy by building",
        "columns": ["building_name", "country", "gfa_m2", "annual_energy_kwh", "eui_kwh_m2"],
        "filters": {"country": "GB"},
        "sort": "-annual_energy_kwh",
    }
    template = ok(checked.post("/v1/reports/templates", json=body), 201)["data"]
    assert template["id"].startswith("rtp_") and template["filters"] == {"country": "GB"}
    assert ok(checked.get(f"/v1/reports/templates/{template['id']}"))["data"] == template
    assert ok(checked.get("/v1/reports/templates"))["meta"]["total"] == 1

    report = complete(api, service, type="custom", format="json", template_id=template["id"])
    doc = json.loads(download(service, report))
    assert doc["report"]["title"] == "Energy by building"
    assert [c["key"] for c in doc["columns"]] == body["columns"]
    assert [r["building_name"] for r in doc["rows"]] == [
        "A2",
        "A1",
        "B1",
    ]  # energy, desc, None last
    assert doc["totals"]["annual_energy_kwh"] == pytest.approx(360_000)
    assert doc["totals"]["gfa_m2"] == pytest.approx(3500)

    report = complete(
        api,
        service,
        type="custom",
        format="csv",
        template_id=template["id"],
        filters={"country": "US"},
    )  # request filters override the template's
    text = download(service, report).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == body["columns"]
    assert [r[0] for r in rows[1:]] == ["US1"]

    # A queued report keeps the template as it was; editing or deleting it changes nothing.
    queued = request_report(api, type="custom", format="xlsx", template_id=template["id"])
    patched = ok(
        checked.patch(f"/v1/reports/templates/{template['id']}", json={"columns": ["building_id"]})
    )["data"]
    assert patched["columns"] == ["building_id"]
    assert checked.delete(f"/v1/reports/templates/{template['id']}").status_code == 204
    assert checked.get(f"/v1/reports/templates/{template['id']}").status_code == 404
    generate(service)
    data = ok(api.get(f"/v1/reports/{queued['id']}"))["data"]
    headings, body_rows, _ = table_of(sheet_rows(download(service, data), "Report"))
    assert headings[0] == "Building" and len(body_rows) == 3

    report = complete(
        api,
        service,
        type="custom",
        format="pdf",
        template_id=ok(checked.post("/v1/reports/templates", json=body), 201)["data"]["id"],
    )
    assert "Energy by building" in pdf_text(download(service, report))


# --- list ----------------------------------------------------------------------------------------


def test_list_is_newest_first_and_paginated(service: Service, checked: httpx.Client) -> None:
    ids = []
    for _ in range(3):
        ids.append(request_report(checked, type="portfolio_summary", format="pdf")["id"])
        service.clock.advance(1)
    page = ok(checked.get("/v1/reports", params={"per_page": 2}))
    assert [r["id"] for r in page["data"]] == ids[::-1][:2]
    assert page["meta"] == {"total": 3, "page": 1, "per_page": 2, "total_pages": 2}
    item = page["data"][0]
    assert "download_url" not in item and item["reporting_period"] == PERIOD
    generate(service)  # no buildings: each fails with no_data
    failed = ok(checked.get("/v1/reports", params={"filter[status]": "failed"}))
    assert failed["meta"]["total"] == 3
    assert failed["data"][0]["reason_code"] == "no_data"
    assert checked.get("/v1/reports", params={"per_page": 500}).status_code == 422


def test_report_bucket_is_20_per_minute(limited_service: Service) -> None:
    with limited_service.client() as client:
        body = {"type": "portfolio_summary", "format": "pdf", "reporting_period": PERIOD}
        statuses = [client.post("/v1/reports", json=body).status_code for _ in range(21)]
        assert statuses[:20] == [202] * 20 and statuses[20] == 429
        r = client.post("/v1/reports", json=body)
        assert r.json()["error"]["bucket"] == "reports"
        assert client.get("/v1/reports").status_code == 200  # reading is not limited by it


# --- the real background loop --------------------------------------------------------------------


def test_background_worker_generates_reports(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'live.db'}",
        rate_limits=RateLimits(per_key=100_000, reports=100_000, bulk=100_000),
        clock=clock,
        run_workers=True,
    )
    app = create_app(settings)
    with LiveServer(app) as server:
        service = _bootstrap(app, clock, server.url)
        with service.client() as api:
            building = make_building(api, monthly={("electricity", "kWh"): 10_000})
            report = request_report(
                api, type="benchmark_certificate", format="pdf", building_id=building["id"]
            )
            deadline = time.monotonic() + 20
            while True:
                data = ok(api.get(f"/v1/reports/{report['id']}"))["data"]
                if data["status"] != "processing" or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert data["status"] == "complete", data
            assert download(service, data).startswith(b"%PDF-")
