"""Benchmark recalculation time after a 500-reading batch, with 1k vs 100k readings already stored.

    .venv/bin/python bench/bench_recalc.py [--repeat 5]

For each size a fresh SQLite file gets one building whose energy meters already hold the given
number of daily readings (inserted in bulk, with their monthly aggregates built once), plus four
peer buildings. Then a 500-reading batch of daily readings is POSTed to one meter through the real
app (FastAPI TestClient), repeated on further meters, and two times are reported: the
recalculation alone (the `Recalculator` seam, inside the write transaction) and the whole request.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import insert

from bpservice import admin
from bpservice.app import create_app
from bpservice.benchmarking import aggregates
from bpservice.benchmarking.recalculator import BenchmarkRecalculator
from bpservice.db.models import Building, Meter, Reading
from bpservice.ids import new_id
from bpservice.recalc import ReadingChange
from bpservice.settings import RateLimits, Settings

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
BATCH = 500
ROOM = 3000  # days between the stored history and now: room for six batches per meter


class TimedRecalculator(BenchmarkRecalculator):
    def __init__(self) -> None:
        self.seconds: list[float] = []

    def readings_changed(
        self, session: Any, changes: list[ReadingChange], now: dt.datetime
    ) -> None:
        t0 = time.perf_counter()
        super().readings_changed(session, changes, now)
        self.seconds.append(time.perf_counter() - t0)


def _seed(app: Any, client: TestClient, stored: int, meters: int) -> tuple[str, list[str]]:
    def post(path: str, body: dict) -> dict:
        r = client.post(path, json=body)
        r.raise_for_status()
        return r.json()["data"]

    ids = []
    for i in range(5):  # the building and four peers (same use type and country)
        prop = post(
            "/v1/properties",
            {
                "name": f"P{i}",
                "address": {"street": "1 A St", "city": "London", "country": "GB"},
                "type": "office",
            },
        )
        building = post(
            f"/v1/properties/{prop['id']}/buildings",
            {
                "name": f"B{i}",
                "primary_use_type": "office",
                "gfa_m2": 5000,
                "year_built": 2000,
                "floors": 5,
            },
        )
        ids.append(building["id"])
    target = ids[0]
    meter_ids = [
        post(f"/v1/buildings/{target}/meters", {"type": "electricity", "unit": "kWh"})["id"]
        for _ in range(meters)
    ]
    per_meter = stored // meters
    # History ends ROOM days before "now", leaving room for the benchmark batches after it.
    last = NOW.date() - dt.timedelta(days=ROOM)
    first = last - dt.timedelta(days=per_meter - 1)
    with app.state.db.write() as session:
        for meter_id in meter_ids:
            rows = [
                {
                    "id": new_id("reading"),
                    "meter_id": meter_id,
                    "building_id": target,
                    "org_id": session.get(Meter, meter_id).org_id,
                    "environment": "test",
                    "start_date": first + dt.timedelta(days=d),
                    "end_date": first + dt.timedelta(days=d),
                    "consumption": 100.0 + d % 7,
                    "unit": "kWh",
                    "source": "api",
                    "anomaly_flags": [],
                    "created_at": NOW,
                }
                for d in range(per_meter)
            ]
            session.execute(insert(Reading), rows)
            meter = session.get(Meter, meter_id)
            meter.latest_reading_date = last
            aggregates.refresh_months(session, meter, first, last)
        BenchmarkRecalculator().recalculate(session, session.get(Building, target), NOW)
    for peer in ids[1:]:
        meter = post(f"/v1/buildings/{peer}/meters", {"type": "electricity", "unit": "kWh"})["id"]
        bills = [
            {
                "start_date": (last - dt.timedelta(days=29 + 30 * k)).isoformat(),
                "end_date": (last - dt.timedelta(days=30 * k)).isoformat(),
                "consumption": 3000.0 + 100 * k,
            }
            for k in range(12)
        ]
        post(f"/v1/buildings/{peer}/meters/{meter}/readings/batch", {"readings": bills})
    return target, meter_ids


def run(stored: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        recalc = TimedRecalculator()
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            rate_limits=RateLimits(per_key=10**9, per_user=10**9, bulk=10**9, reports=10**9),
            clock=lambda: NOW,
            run_workers=False,
        )
        app = create_app(settings, recalculator=recalc)
        with app.state.db.write() as session:
            key = admin.bootstrap(session, now=NOW)["test_key"]
        meters = 10  # the same meters for both sizes: only the stored history differs
        with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
            target, meter_ids = _seed(app, client, stored, meters)
            recalc.seconds.clear()
            start = NOW.date() - dt.timedelta(days=ROOM - 1)
            requests = []
            for i in range(repeat):
                meter_id = meter_ids[i % len(meter_ids)]
                offset = (i // len(meter_ids)) * BATCH
                days = [start + dt.timedelta(days=offset + d) for d in range(BATCH)]
                body = {
                    "readings": [
                        {
                            "start_date": d.isoformat(),
                            "end_date": d.isoformat(),
                            "consumption": 120.0,
                        }
                        for d in days
                    ]
                }
                t0 = time.perf_counter()
                r = client.post(
                    f"/v1/buildings/{target}/meters/{meter_id}/readings/batch", json=body
                )
                requests.append(time.perf_counter() - t0)
                assert r.status_code == 201 and r.json()["data"]["accepted"] == BATCH, r.text
            result = client.get(f"/v1/buildings/{target}/benchmarks").json()["data"]
            assert result["eui_kwh_m2"] is not None
    return {
        "recalc_ms": statistics.median(recalc.seconds) * 1000,
        "request_ms": statistics.median(requests) * 1000,
    }


def measure(sizes: tuple[int, ...] = (1_000, 100_000), repeat: int = 5) -> list[dict[str, float]]:
    """Per stored-history size: the median recalculation and whole-request milliseconds of a
    500-reading batch (`repeat` batches, at most 6)."""
    repeat = max(1, min(repeat, ROOM // BATCH))
    return [{"stored": stored, **run(stored, repeat)} for stored in sizes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="batches per size (at most 6)")
    args = parser.parse_args()
    print(f"{'stored readings':>16} {'recalc (median)':>16} {'batch request (median)':>24}")
    for t in measure((1_000, 100_000), args.repeat):
        print(f"{t['stored']:>16,} {t['recalc_ms']:>13.1f} ms {t['request_ms']:>21.1f} ms")


if __name__ == "__main__":
    main()
