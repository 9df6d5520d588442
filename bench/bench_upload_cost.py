"""What a call costs on a served bpservice, by kind: a CSV upload of N readings over M meters, a
batch of N readings of one meter, and a single reading; fitted as fixed + per-reading (+ per-meter
for the upload) seconds. The planner's constants (`plan_calls.Limits`) come from this bench.

    .venv/bin/python bench/bench_upload_cost.py [--repeat 3]

The service runs as its own uvicorn process (`bench_infra.serve`: the real app, limits raised so
the rate limiter never waits) on a temporary SQLite file; the organisation, its buildings (10
meters each, as a portfolio's register would have) and fresh meters are seeded before anything is
timed. Every timed call writes to meters holding no readings yet, through bpsync's client (so the
client's own work, building the JSON or the CSV, is counted, as an import pays it). Single calls
are also timed four at a time (the importer's default concurrency): on SQLite writes take turns,
so what four singles in flight cost per call is what the planner's estimate must use.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_infra import bootstrap, start_instances  # noqa: E402

from bpsync.client import AsyncServiceClient  # noqa: E402

METERS_PER_BUILDING = 10
BATCH_SIZES = (12, 100, 500)
# (readings, meters): one meter's year, a building's year, and portfolios of 50 to 417 meters.
UPLOAD_SHAPES = ((12, 1), (120, 10), (600, 50), (2400, 200), (5000, 417), (5000, 10))


def monthly(n: int, year: int = 2023) -> list[dict[str, Any]]:
    """`n` consecutive monthly readings from January of `year`."""
    out, start = [], dt.date(year, 1, 1)
    for k in range(n):
        end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        out.append(
            {"start_date": start.isoformat(), "end_date": end.isoformat(), "consumption": 900 + k}
        )
        start = end + dt.timedelta(days=1)
    return out


class Meters:
    """Fresh meters (one building per `METERS_PER_BUILDING`), created through the API up front."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self.client = client
        self.free: list[tuple[str, str]] = []

    async def make(self, n: int) -> None:
        prop = await self.client.properties.create(
            name="Bench",
            address={"street": "1 St", "city": "Leeds", "country": "GB"},
            type="office",
        )
        for b in range(-(-n // METERS_PER_BUILDING)):
            building = await self.client.buildings.create(
                prop.id,
                name=f"B{b}",
                primary_use_type="office",
                gfa_m2=5000,
                year_built=2000,
                floors=3,
            )
            for _ in range(METERS_PER_BUILDING):
                meter = await self.client.meters.create(building.id, type="electricity", unit="kWh")
                self.free.append((building.id, meter.id))

    def take(self, n: int) -> list[tuple[str, str]]:
        """`n` meters holding no readings, whole buildings first (an upload of a portfolio)."""
        taken, self.free = self.free[:n], self.free[n:]
        if len(taken) < n:
            raise RuntimeError("the bench ran out of fresh meters")
        return taken


async def time_single(c: AsyncServiceClient, meter: tuple[str, str]) -> float:
    t0 = time.perf_counter()
    await c.readings.create(meter[0], meter[1], monthly(1)[0])
    return time.perf_counter() - t0


async def time_batch(c: AsyncServiceClient, meter: tuple[str, str], n: int) -> float:
    t0 = time.perf_counter()
    result = await c.readings.create_batch(meter[0], meter[1], monthly(n, 2024 - n // 12))
    took = time.perf_counter() - t0
    assert result.accepted == n, result
    return took


async def time_upload(c: AsyncServiceClient, meters: list[tuple[str, str]], n: int) -> float:
    per = -(-n // len(meters))
    rows = []
    for _, mid in meters:
        rows.extend((mid, r) for r in monthly(min(per, n - len(rows)), 2024 - per // 12))
    t0 = time.perf_counter()
    result = await c.readings.upload(rows)
    took = time.perf_counter() - t0
    assert result.accepted == n, result
    return took


async def concurrent_singles(c: AsyncServiceClient, meters: list[tuple[str, str]], k: int) -> float:
    """Seconds per call of len(meters) single calls, `k` in flight at a time."""
    queue = list(meters)

    async def worker() -> None:
        while queue:
            m = queue.pop()
            await c.readings.create(m[0], m[1], monthly(1)[0])

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(k)))
    return (time.perf_counter() - t0) / len(meters)


def fit(xs: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares of ys on [1, *x] (non-negative terms only are meaningful; printed as is)."""
    a = np.array([[1.0, *x] for x in xs])
    coef, *_ = np.linalg.lstsq(a, np.array(ys), rcond=None)
    return [float(v) for v in coef]


async def measure_async(url: str, key: str, repeat: int) -> dict[str, Any]:
    async with AsyncServiceClient(url, key, profile="bench", timeout=120) as c:
        need = 40 + 80 + repeat * (len(BATCH_SIZES) + sum(m for _, m in UPLOAD_SHAPES)) + 20
        meters = Meters(c)
        await meters.make(need)
        # Warm-up: the first calls of a fresh process pay imports and caches.
        for m in meters.take(10):
            await time_single(c, m)
        await time_batch(c, meters.take(1)[0], 12)
        await time_upload(c, meters.take(5), 60)
        singles = [await time_single(c, m) for m in meters.take(40)]
        concurrent = await concurrent_singles(c, meters.take(80), 4)
        batches: dict[int, list[float]] = {n: [] for n in BATCH_SIZES}
        uploads: dict[tuple[int, int], list[float]] = {s: [] for s in UPLOAD_SHAPES}
        for _ in range(repeat):  # kinds take turns, so a slow moment touches them all
            for n in BATCH_SIZES:
                batches[n].append(await time_batch(c, meters.take(1)[0], n))
            for n, m in UPLOAD_SHAPES:
                uploads[(n, m)].append(await time_upload(c, meters.take(m), n))
    batch_med = {n: statistics.median(v) for n, v in batches.items()}
    upload_med = {s: statistics.median(v) for s, v in uploads.items()}
    b0, b1 = fit([[n] for n in batch_med], list(batch_med.values()))
    u0, u1, u2 = fit([[n, m] for n, m in upload_med], list(upload_med.values()))
    return {
        "single_s": statistics.median(singles),
        "single_p90_s": sorted(singles)[int(len(singles) * 0.9)],
        "single_4_in_flight_s_per_call": concurrent,
        "batch_s": {str(n): v for n, v in batch_med.items()},
        "upload_s": {f"{n}/{m}": v for (n, m), v in upload_med.items()},
        "batch_fit": {"fixed": b0, "per_reading": b1},
        "upload_fit": {"fixed": u0, "per_reading": u1, "per_meter": u2},
        "repeat": repeat,
    }


def measure(repeat: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'svc.db'}"
        os.environ["BPSYNC_STATE_DIR"] = str(Path(tmp) / "state")
        os.environ["BPSYNC_CONFIG_DIR"] = str(Path(tmp) / "config")
        key = bootstrap(db_url)
        procs, urls = start_instances(db_url, 1, None)
        try:
            return asyncio.run(measure_async(urls[0], key, repeat))
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="timings of each shape; medians fitted")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = measure(args.repeat)
    if args.json:
        print(json.dumps(r, indent=1))
        return
    ms = 1000
    print(f"medians of {r['repeat']} (singles: of 40), served bpservice on SQLite, loopback")
    print(
        f"single   {r['single_s'] * ms:6.1f} ms (p90 {r['single_p90_s'] * ms:.1f} ms); "
        f"4 in flight: {r['single_4_in_flight_s_per_call'] * ms:.1f} ms a call"
    )
    for n, s in r["batch_s"].items():
        print(f"batch    {n:>5} readings, 1 meter: {s * ms:7.1f} ms")
    for shape, s in r["upload_s"].items():
        n, m = shape.split("/")
        print(f"upload   {n:>5} readings, {m:>3} meters: {s * ms:7.1f} ms")
    b, u = r["batch_fit"], r["upload_fit"]
    print(
        f"fit batch : {b['fixed'] * ms:.1f} ms + {b['per_reading'] * ms:.3f} ms/reading\n"
        f"fit upload: {u['fixed'] * ms:.1f} ms + {u['per_reading'] * ms:.3f} ms/reading "
        f"+ {u['per_meter'] * ms:.3f} ms/meter\n"
        f"fit single: {r['single_s'] * ms:.1f} ms alone, "
        f"{r['single_4_in_flight_s_per_call'] * ms:.1f} ms a call with 4 in flight"
    )


if __name__ == "__main__":
    main()
