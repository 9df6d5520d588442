"""Batch submission cost against the size of a meter's stored history.

For each history size (0, 1k, 10k, 100k, 1M readings already stored for one meter) this seeds a
temporary SQLite file with daily readings by direct SQL (fast), then times real 500-reading
`POST .../readings/batch` requests through the ASGI app (every rule, event and the benchmark
recalculation included), and prints a table: milliseconds per batch and readings per second, with
the full app and with the benchmark recalculation switched off (the reading core alone). It ends
with SQLite's EXPLAIN QUERY PLAN for the overlap/anomaly queries on the largest history.

    .venv/bin/python bench/bench_batch.py            # all sizes, about two minutes
    .venv/bin/python bench/bench_batch.py --sizes 0 1000 10000 --batches 3
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from bpservice import admin
from bpservice.app import create_app
from bpservice.db.readings import readings_near
from bpservice.recalc import NoRecalculation
from bpservice.settings import RateLimits, Settings

BATCH_SIZE = 500
# Seeded history is one reading a day ending here (a million non-overlapping readings span 2,738
# years, so the history starts in year 63); timed batches follow it, day after day.
HISTORY_END = dt.date(2800, 12, 31)
# The service's clock: late enough that every timed batch lies in the past.
NOW = dt.datetime(2900, 1, 1, tzinfo=dt.UTC)
UNLIMITED = RateLimits(per_key=10**9, per_user=10**9, bulk=10**9, reports=10**9)


def seed_history(app: Any, meter: dict[str, Any], count: int) -> float:
    """Insert `count` one-day readings ending on HISTORY_END; returns the seconds it took."""
    if count == 0:
        return 0.0
    first = HISTORY_END - dt.timedelta(days=count - 1)
    started = time.perf_counter()
    raw = app.state.db.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("BEGIN")
        rows = (
            (
                f"rdg_seed{i:020d}",
                meter["id"],
                meter["building_id"],
                (first + dt.timedelta(days=i)).isoformat(),
                100.0 + (i % 7),
            )
            for i in range(count)
        )
        cursor.executemany(
            "INSERT INTO readings (id, meter_id, building_id, org_id, environment, start_date, "
            "end_date, consumption, unit, source, anomaly_flags, created_at) "
            "SELECT ?1, ?2, ?3, 'org_seed', 'test', ?4, ?4, ?5, 'kWh', 'api', '[]', "
            "'2020-01-01 00:00:00.000000'",
            rows,
        )
        cursor.execute(
            "UPDATE meters SET latest_reading_date = ? WHERE id = ?",
            (HISTORY_END.isoformat(), meter["id"]),
        )
        cursor.execute("COMMIT")
        cursor.execute("ANALYZE")
    finally:
        raw.close()
    return time.perf_counter() - started


def batch_body(index: int) -> dict[str, Any]:
    first = HISTORY_END + dt.timedelta(days=1 + index * BATCH_SIZE)
    days = [first + dt.timedelta(days=i) for i in range(BATCH_SIZE)]
    return {
        "readings": [
            {"start_date": d.isoformat(), "end_date": d.isoformat(), "consumption": 100.0 + i % 5}
            for i, d in enumerate(days)
        ]
    }


async def run_case(db_path: Path, history: int, batches: int, recalc: bool) -> dict[str, float]:
    settings = Settings(
        database_url=f"sqlite:///{db_path}",
        rate_limits=UNLIMITED,
        clock=lambda: NOW,
        run_workers=False,
    )
    app = create_app(settings, recalculator=None if recalc else NoRecalculation())
    with app.state.db.write() as session:
        keys = admin.bootstrap(session, now=NOW)
    headers = {"Authorization": f"Bearer {keys['test_key']}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", headers=headers
    ) as c:
        prop = await c.post(
            "/v1/properties",
            json={
                "name": "Bench",
                "address": {"street": "1 Bench St", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        )
        pid = prop.json()["data"]["id"]
        building = await c.post(
            f"/v1/properties/{pid}/buildings",
            json={
                "name": "B",
                "primary_use_type": "office",
                "gfa_m2": 5000,
                "year_built": 2000,
                "floors": 5,
            },
        )
        bid = building.json()["data"]["id"]
        meter = (
            await c.post(f"/v1/buildings/{bid}/meters", json={"type": "electricity", "unit": "kWh"})
        ).json()["data"]
        seeded = seed_history(app, meter, history)
        url = f"/v1/buildings/{bid}/meters/{meter['id']}/readings/batch"
        timings = []
        for i in range(batches):
            body = batch_body(i)
            started = time.perf_counter()
            r = await c.post(url, json=body)
            timings.append(time.perf_counter() - started)
            data = r.json()["data"]
            assert r.status_code == 201 and data["accepted"] == BATCH_SIZE, r.text[:300]
    app.state.db.dispose()
    median = statistics.median(timings)
    return {
        "seed_s": seeded,
        "median_ms": median * 1000,
        "p99_ms": percentile(timings, 99) * 1000,
        "rate": BATCH_SIZE / median,
    }


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (p99 of fewer than 100 samples is their maximum)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


async def measure(
    sizes: list[int], batches: int, recalc_modes: tuple[bool, ...] = (True, False)
) -> list[dict[str, float]]:
    """One row per history size: for each mode (`full`: the whole app with the benchmark
    recalculation; `core`: without it) the seeding time, median and p99 ms per 500-reading batch
    and readings/s, as `{mode}_{figure}`."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            row: dict[str, float] = {"history": size}
            for recalc in recalc_modes:
                path = Path(tmp) / f"h{size}_{int(recalc)}.db"
                case = await run_case(path, size, batches, recalc)
                prefix = "full" if recalc else "core"
                row.update({f"{prefix}_{k}": v for k, v in case.items()})
            results.append(row)
    return results


def query_plans(db_path: Path) -> list[str]:
    """EXPLAIN QUERY PLAN of the statements readings_near runs, on a seeded file."""
    app = create_app(Settings(database_url=f"sqlite:///{db_path}", run_workers=False))
    captured: list[tuple[str, tuple[Any, ...]]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "FROM readings" in statement:
            captured.append((statement, tuple(params)))

    with app.state.db.read() as session:
        meter_id = session.connection().exec_driver_sql("SELECT id FROM meters").scalar()
        event.listen(app.state.db.engine, "before_cursor_execute", capture)
        readings_near(session, meter_id, HISTORY_END - dt.timedelta(days=30), HISTORY_END)
        event.remove(app.state.db.engine, "before_cursor_execute", capture)
        lines = []
        for statement, params in captured:
            plan = session.connection().exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params)
            where = statement.split("WHERE", 1)[1].split("ORDER", 1)[0].strip()
            lines.append(f"  WHERE {where}\n    -> " + "; ".join(str(r[-1]) for r in plan))
    app.state.db.dispose()
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[0, 1_000, 10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--batches", type=int, default=5, help="timed batches per size")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            row: dict[str, float] = {"history": size}
            for recalc in (True, False):
                path = Path(tmp) / f"h{size}_{int(recalc)}.db"
                case = await run_case(path, size, args.batches, recalc)
                prefix = "full" if recalc else "core"
                row.update({f"{prefix}_{k}": v for k, v in case.items()})
            results.append(row)
            print(
                f"history {size:>9,}: seeded in {row['core_seed_s']:.1f} s; "
                f"batch {row['full_median_ms']:.0f} ms (full), {row['core_median_ms']:.0f} ms (core)",
                flush=True,
            )
        largest = Path(tmp) / f"h{max(args.sizes)}_0.db"
        plans = query_plans(largest)
    base = results[0]
    print()
    print(f"500-reading batches, median of {args.batches} per size (ASGI, SQLite file)")
    print(
        f"{'stored readings':>15} | {'full ms':>8} | {'full rdg/s':>10} | {'core ms':>8} | "
        f"{'core rdg/s':>10} | {'core x base':>11}"
    )
    print("-" * 78)
    for row in results:
        print(
            f"{int(row['history']):>15,} | {row['full_median_ms']:>8.1f} | {row['full_rate']:>10,.0f} | "
            f"{row['core_median_ms']:>8.1f} | {row['core_rate']:>10,.0f} | "
            f"{row['core_median_ms'] / base['core_median_ms']:>11.2f}"
        )
    print()
    print(f"EXPLAIN QUERY PLAN for the overlap/anomaly queries ({max(args.sizes):,} readings):")
    print("\n".join(plans))


if __name__ == "__main__":
    asyncio.run(main())
