"""A large portfolio for the buildings table's scale test and bench/bench_tui.py: `buildings`
buildings, four to a property, a quarter in New York, a quarter in Boston, the rest in Europe,
each with an electricity meter and a gas meter holding monthly bills for two years. Submitted
through the API (in process, a few requests at once) so every rule applies."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx

from bpservice.demo import monthly_bills

PER_PROPERTY = 4
PLACES: tuple[dict[str, Any], ...] = (
    {"street": "1 Broadway", "city": "New York", "state": "NY", "country": "US"},
    {"street": "1 Boylston St", "city": "Boston", "state": "MA", "country": "US"},
    {"street": "1 Rue de Rivoli", "city": "Paris", "country": "FR"},
    {"street": "1 Strand", "city": "London", "country": "GB"},
)
USES = ("office", "retail", "residential", "office")
CONCURRENCY = 8


async def seed_scale(
    app: Any, key: str, *, buildings: int = 200, today: dt.date, months: int = 24
) -> int:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {key}"}
    gate = asyncio.Semaphore(CONCURRENCY)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://scale", headers=headers, timeout=60
    ) as c:

        async def building(property_id: str, n: int, use: str) -> None:
            async with gate:
                body = {
                    "name": f"Block {n:03d} {use.title()}",
                    "primary_use_type": use,
                    "gfa_m2": 2_000 + 37 * n,
                    "year_built": 1950 + n % 70,
                    "floors": 2 + n % 30,
                }
                b = await c.post(f"/v1/properties/{property_id}/buildings", json=body)
                building_id = b.raise_for_status().json()["data"]["id"]
                for meter_type, unit, base in (
                    ("electricity", "kWh", 20_000 + 900 * (n % 50)),
                    ("natural_gas", "kWh", 9_000 + 400 * (n % 30)),
                ):
                    m = await c.post(
                        f"/v1/buildings/{building_id}/meters",
                        json={"type": meter_type, "unit": unit},
                    )
                    meter_id = m.raise_for_status().json()["data"]["id"]
                    bills = monthly_bills(meter_type, base, months, today)
                    r = await c.post(
                        f"/v1/buildings/{building_id}/meters/{meter_id}/readings/batch",
                        json={"readings": bills},
                    )
                    r.raise_for_status()

        jobs = []
        for p in range((buildings + PER_PROPERTY - 1) // PER_PROPERTY):
            place = PLACES[p % len(PLACES)]
            prop = await c.post(
                "/v1/properties",
                json={"name": f"Estate {p:03d}", "address": place, "type": USES[p % len(USES)]},
            )
            property_id = prop.raise_for_status().json()["data"]["id"]
            for i in range(PER_PROPERTY):
                n = p * PER_PROPERTY + i
                if n < buildings:
                    jobs.append(building(property_id, n, USES[(p + i) % len(USES)]))
        await asyncio.gather(*jobs)
    return buildings
