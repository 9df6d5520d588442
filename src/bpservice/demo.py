"""Demo data for a fresh sandbox: a small international portfolio with two years of monthly bills,
submitted through the API itself so every rule (validation, anomaly flags, events) applies."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import httpx
from fastapi import FastAPI

PORTFOLIO: list[dict[str, Any]] = [
    {
        "property": {
            "name": "Riverside House",
            "address": {
                "street": "12 Riverside Walk",
                "city": "London",
                "postal_code": "SE1 9PP",
                "country": "GB",
            },
            "type": "office",
            "internal_ref": "UK-001",
        },
        "buildings": [
            {
                "name": "Riverside House",
                "primary_use_type": "office",
                "gfa_m2": 8200,
                "year_built": 1998,
                "floors": 9,
                "occupancy_pct": 85,
                "operating_hours_week": 60,
                "use_types": [
                    {"type": "office", "gfa_m2": 7400},
                    {"type": "retail", "gfa_m2": 800},
                ],
                "meters": [
                    ("electricity", "kWh", 118_000),
                    ("natural_gas", "kWh", 61_000),
                    ("water", "m3", 820),
                ],
            },
        ],
    },
    {
        "property": {
            "name": "Hudson Yards Tower",
            "address": {
                "street": "500 W 33rd St",
                "city": "New York",
                "state": "NY",
                "postal_code": "10001",
                "country": "US",
            },
            "type": "office",
            "internal_ref": "US-NYC-014",
        },
        "buildings": [
            {
                "name": "Tower A",
                "primary_use_type": "office",
                "gfa_m2": 46_000,
                "year_built": 2010,
                "floors": 38,
                "occupancy_pct": 78,
                "operating_hours_week": 65,
                "meters": [
                    ("electricity", "kWh", 690_000),
                    ("natural_gas", "therms", 9_800),
                    ("steam", "Mlbs", 310),
                ],
            },
        ],
    },
    {
        "property": {
            "name": "Back Bay Residences",
            "address": {
                "street": "220 Commonwealth Ave",
                "city": "Boston",
                "state": "MA",
                "postal_code": "02116",
                "country": "US",
            },
            "type": "residential",
        },
        "buildings": [
            {
                "name": "North Block",
                "primary_use_type": "residential",
                "gfa_m2": 12_500,
                "year_built": 1965,
                "floors": 7,
                "meters": [("electricity", "kWh", 98_000), ("natural_gas", "therms", 7_200)],
            },
            {
                "name": "South Block",
                "primary_use_type": "residential",
                "gfa_m2": 9_800,
                "year_built": 1971,
                "floors": 6,
                "meters": [("electricity", "kWh", 80_000), ("fuel_oil", "gallons", 2_100)],
            },
        ],
    },
    {
        "property": {
            "name": "Galerie Haussmann",
            "address": {
                "street": "40 Boulevard Haussmann",
                "city": "Paris",
                "postal_code": "75009",
                "country": "FR",
            },
            "type": "retail",
        },
        "buildings": [
            {
                "name": "Galerie",
                "primary_use_type": "retail",
                "gfa_m2": 15_300,
                "year_built": 1912,
                "floors": 6,
                "meters": [("electricity", "kWh", 260_000), ("district_heating", "MWh", 140)],
            },
        ],
    },
    {
        "property": {
            "name": "Spreeufer Campus",
            "address": {
                "street": "Stralauer Allee 6",
                "city": "Berlin",
                "postal_code": "10245",
                "country": "DE",
            },
            "type": "office",
        },
        "buildings": [
            {
                "name": "Haus 1",
                "primary_use_type": "office",
                "gfa_m2": 10_400,
                "year_built": 2004,
                "floors": 8,
                "meters": [("electricity", "kWh", 125_000), ("natural_gas", "kWh", 70_000)],
            },
        ],
    },
]

_HEATING = {"natural_gas", "fuel_oil", "district_heating", "steam"}


def monthly_bills(
    meter_type: str, base: float, months: int, today: dt.date
) -> list[dict[str, Any]]:
    """Calendar-month readings ending with the last full month, with a seasonal shape."""
    first = dt.date(today.year, today.month, 1)
    bills = []
    for back in range(months, 0, -1):
        year, month = divmod(first.year * 12 + first.month - 1 - back, 12)
        start = dt.date(year, month + 1, 1)
        end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        season = math.cos((start.month - 1) / 12 * 2 * math.pi)  # 1 in January, -1 in July
        swing = 0.45 if meter_type in _HEATING else 0.12
        # A small deterministic wobble so the history is not perfectly smooth.
        wobble = 1 + 0.03 * math.sin(back * 1.7)
        value = base * (1 + swing * season) * wobble
        bills.append(
            {
                "start_date": start.isoformat(),
                "end_date": end.isoformat(),
                "consumption": round(value, 1),
            }
        )
    return bills


async def seed(app: FastAPI, key: str, *, months: int = 24, today: dt.date | None = None) -> dict:
    today = today or dt.date.today()
    counts = {"properties": 0, "buildings": 0, "meters": 0, "readings": 0}
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://demo", headers=headers) as c:
        for entry in PORTFOLIO:
            prop = (await c.post("/v1/properties", json=entry["property"])).raise_for_status()
            property_id = prop.json()["data"]["id"]
            counts["properties"] += 1
            for spec in entry["buildings"]:
                body = {k: v for k, v in spec.items() if k != "meters"}
                b = await c.post(f"/v1/properties/{property_id}/buildings", json=body)
                building_id = b.raise_for_status().json()["data"]["id"]
                counts["buildings"] += 1
                for meter_type, unit, base in spec["meters"]:
                    m = await c.post(
                        f"/v1/buildings/{building_id}/meters",
                        json={"type": meter_type, "unit": unit, "name": f"{meter_type} main"},
                    )
                    meter_id = m.raise_for_status().json()["data"]["id"]
                    counts["meters"] += 1
                    bills = monthly_bills(meter_type, base, months, today)
                    r = await c.post(
                        f"/v1/buildings/{building_id}/meters/{meter_id}/readings/batch",
                        json={"readings": bills},
                    )
                    counts["readings"] += r.raise_for_status().json()["data"]["accepted"]
    return counts
