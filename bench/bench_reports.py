"""Time to generate each report type for a 100-building portfolio.

Builds a temporary service database through the API (25 properties x 4 buildings, GB and US, each
with a year of monthly electricity, gas and water readings), then requests each report type and
format and times `generate_pending` on it alone (gather + render + store, the worker's whole job).

    .venv/bin/python bench/bench_reports.py [--buildings 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import calendar
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import RateLimits, Settings
from bpservice.workers.reports import generate_pending

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
PERIOD = {"start": "2025-01-01", "end": "2025-12-31"}
USES = ("office", "retail", "hotel", "residential")


def _months(year: int) -> list[tuple[str, str]]:
    return [
        (f"{year}-{m:02d}-01", f"{year}-{m:02d}-{calendar.monthrange(year, m)[1]:02d}")
        for m in range(1, 13)
    ]


def build_portfolio(client: TestClient, buildings: int) -> list[str]:
    ids = []
    for p in range(0, buildings, 4):
        country = "US" if (p // 4) % 2 else "GB"
        # US properties alternate between New York and Boston so LL97 and BERDO apply.
        address: dict[str, str] = {"street": f"{p} Main St", "city": "City", "country": country}
        if country == "US":
            city, state = ("New York", "NY") if (p // 4) % 4 == 1 else ("Boston", "MA")
            address.update(city=city, state=state)
        prop = client.post(
            "/v1/properties",
            json={
                "name": f"Property {p // 4:03d}",
                "address": address,
                "type": "office",
            },
        ).json()["data"]
        for b in range(p, min(p + 4, buildings)):
            building = client.post(
                f"/v1/properties/{prop['id']}/buildings",
                json={
                    "name": f"Building {b:03d}",
                    "primary_use_type": USES[b % 4],
                    "gfa_m2": 2000 + 150 * b,
                    "year_built": 1970 + b % 50,
                    "floors": 2 + b % 20,
                },
            ).json()["data"]
            ids.append(building["id"])
            for meter_type, unit, amount in (
                ("electricity", "kWh", 20_000 + 300 * b),
                ("natural_gas", "therms", 400 + 5 * b),
                ("water", "m3", 80 + b),
            ):
                meter = client.post(
                    f"/v1/buildings/{building['id']}/meters",
                    json={"type": meter_type, "unit": unit},
                ).json()["data"]
                readings = [
                    {"start_date": s, "end_date": e, "consumption": amount}
                    for s, e in _months(2025)
                ]
                r = client.post(
                    f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings/batch",
                    json={"readings": readings},
                )
                assert r.status_code == 201, r.text
    return ids


def measure(
    buildings: int = 100, repeat: int = 3, only: set[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """Build the portfolio, then time `generate_pending` for each report type and format (or
    only the (type, format) pairs in `only`). Returns the build seconds and one dict per case:
    type, format, median and max seconds, size in KB."""
    results: dict[str, Any] = {"buildings": buildings, "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            rate_limits=RateLimits(per_key=10**9, bulk=10**9, reports=10**9),
            clock=lambda: NOW,
            run_workers=False,
        )
        app = create_app(settings)
        with app.state.db.write() as session:
            keys = admin.bootstrap(session, now=NOW)
        client = TestClient(app, headers={"Authorization": f"Bearer {keys['test_key']}"})
        started = time.perf_counter()
        ids = build_portfolio(client, buildings)
        results["build_seconds"] = time.perf_counter() - started
        template = client.post(
            "/v1/reports/templates",
            json={
                "name": "All columns",
                "columns": [
                    "property_name",
                    "building_name",
                    "country",
                    "gfa_m2",
                    "data_quality_grade",
                    "eui_kwh_m2",
                    "carbon_intensity_kgco2e_m2",
                    "annual_energy_kwh",
                    "electricity_kwh",
                    "natural_gas_kwh",
                    "annual_water_m3",
                    "svc_score",
                    "energy_rating_score",
                    "eu_epc_grade",
                    "stranding_year_1_5c",
                ],
            },
        ).json()["data"]
        nyc_office = ids[4]  # Property 001 is in New York; building 4 is an office
        boston_office = ids[12]  # Property 003 is in Boston; building 12 is an office
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("benchmark_certificate", "pdf", {"building_id": ids[0]}),
            ("portfolio_summary", "pdf", {}),
            ("portfolio_summary", "xlsx", {}),
            ("compliance_esg", "xlsx", {}),
            ("compliance_ll97", "pdf", {"building_id": nyc_office}),
            ("compliance_ll97", "xlsx", {"building_id": nyc_office}),
            ("compliance_berdo", "pdf", {"building_id": boston_office}),
            ("compliance_berdo", "xlsx", {"building_id": boston_office}),
            *[
                ("custom", f, {"template_id": template["id"]})
                for f in ("pdf", "xlsx", "csv", "json")
            ],
        ]
        for report_type, fmt, extra in cases:
            if only is not None and (report_type, fmt) not in only:
                continue
            times, size = [], 0
            for _ in range(repeat):
                body = {"type": report_type, "format": fmt, "reporting_period": PERIOD, **extra}
                r = client.post("/v1/reports", json=body)
                assert r.status_code == 202, r.text
                t0 = time.perf_counter()
                assert generate_pending(app, NOW) == 1
                times.append(time.perf_counter() - t0)
                report = client.get(f"/v1/reports/{r.json()['data']['id']}").json()["data"]
                assert report["status"] == "complete", report
                size = report["file_size_bytes"]
            results["cases"].append(
                {
                    "type": report_type,
                    "format": fmt,
                    "median_s": statistics.median(times),
                    "max_s": max(times),
                    "size_kb": size / 1024,
                }
            )
        client.close()
        app.state.db.dispose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--buildings", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = measure(args.buildings, args.repeat)
    print(f"portfolio: {args.buildings} buildings built in {results['build_seconds']:.1f} s")
    print(f"{'type':<24}{'format':<8}{'median s':>10}{'max s':>8}{'size KB':>9}")
    for c in results["cases"]:
        print(
            f"{c['type']:<24}{c['format']:<8}{c['median_s']:>10.3f}"
            f"{c['max_s']:>8.3f}{c['size_kb']:>9.1f}"
        )


if __name__ == "__main__":
    main()
