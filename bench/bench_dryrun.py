"""`bpsync import --dry-run` against a served bpservice, against the library path doing the same
local work.

    .venv/bin/python bench/bench_dryrun.py [--rows 100000] [--meters 4000] [--buildings 40]

An organisation of `meters` electricity meters over `buildings` buildings (meters inserted
straight into the service's database: only the import is measured), a CSV of `rows` monthly
bills naming every meter by id, and half the meters already holding last year's readings (those
are the readings that can overlap, fetched once each). Times, taking turns for three rounds in this process (medians compared):
- the dry run: `import_file(..., dry_run=True)` through a client over loopback HTTP: the lookups
  (only the meters the file names, decisions C2), the stored readings that can overlap, reading,
  mapping and checking, the plan; requests counted at the transport;
- the library path: `prepare` + `check` with the same catalog and stored readings already in
  memory (no network), as a script using bpsync.ingest would.
Prints both times, the ratio, the requests, and the requests beyond the readings fetched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_infra import free_port, wait_until_up

from bpservice import admin
from bpservice.app import create_app
from bpservice.db.models import Meter, Reading
from bpservice.ids import new_id
from bpservice.settings import RateLimits, Settings
from bpsync.client import AsyncServiceClient
from bpsync.commands.demo import EmbeddedServer
from bpsync.ingest import MeterCatalog, MeterInfo, StoredReading, check, prepare
from bpsync.ingest.run.import_file import ImportOptions, import_file


class Counting(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0
        self.reading_lists = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if request.method == "GET" and request.url.path.endswith("/readings"):
            self.reading_lists += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def setup(app: Any, base_url: str, meters: int, buildings: int) -> tuple[str, list[tuple]]:
    """The organisation: buildings through the API, meters and last year's readings inserted."""
    with app.state.db.write() as session:
        info = admin.bootstrap(session, owner_email=f"d{time.time_ns()}@example.com")
    headers = {"Authorization": f"Bearer {info['test_key']}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as api:
        prop = api.post(
            "/v1/properties",
            json={
                "name": "Bench",
                "address": {"street": "1 St", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        ).json()["data"]
        building_ids = [
            api.post(
                f"/v1/properties/{prop['id']}/buildings",
                json={
                    "name": f"B{b}",
                    "primary_use_type": "office",
                    "gfa_m2": 5000,
                    "year_built": 2000,
                    "floors": 3,
                },
            ).json()["data"]["id"]
            for b in range(buildings)
        ]
    now = dt.datetime.now(dt.UTC)
    catalog: list[tuple] = []
    meter_rows, reading_rows = [], []
    for i in range(meters):
        mid, bid = new_id("meter"), building_ids[i % buildings]
        stored = i % 2 == 0
        meter_rows.append(
            {
                "id": mid,
                "org_id": info["org_id"],
                "environment": "test",
                "building_id": bid,
                "type": "electricity",
                "name": f"M{i}",
                "unit": "kWh",
                "source": "manual",
                "status": "active",
                "latest_reading_date": dt.date(2023, 12, 31) if stored else None,
                "created_at": now,
            }
        )
        catalog.append((mid, bid, stored))
        if stored:
            for month in range(1, 13):
                start = dt.date(2023, month, 1)
                end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
                reading_rows.append(
                    {
                        "id": new_id("reading"),
                        "meter_id": mid,
                        "building_id": bid,
                        "org_id": info["org_id"],
                        "environment": "test",
                        "start_date": start,
                        "end_date": end,
                        "consumption": 1000.0 + month,
                        "unit": "kWh",
                        "source": "api",
                        "anomaly_flags": [],
                        "created_at": now,
                    }
                )
    with app.state.db.write() as session:
        session.execute(insert(Meter), meter_rows)
        for start in range(0, len(reading_rows), 5000):
            session.execute(insert(Reading), reading_rows[start : start + 5000])
    return info["test_key"], catalog


def write_file(path: Path, catalog: list[tuple], rows: int) -> None:
    per_meter = max(1, rows // len(catalog))
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
    for mid, _, _ in catalog:
        start = dt.date(2024, 1, 1)
        for k in range(per_meter):
            end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
            lines.append(f"{mid},{start},{end},{1000 + k % 12 * 3},kWh")
            start = end + dt.timedelta(days=1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def library_path(path: Path, catalog: list[tuple]) -> float:
    meters = MeterCatalog.build(
        MeterInfo(mid, "electricity", "kWh", bid) for mid, bid, _ in catalog
    )
    existing = {
        mid: [
            StoredReading(
                dt.date(2023, m, 1),
                (dt.date(2023, m, 1) + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1),
                1000.0 + m,
            )
            for m in range(1, 13)
        ]
        for mid, _, stored in catalog
        if stored
    }
    t0 = time.perf_counter()
    prepared = prepare(path, "long_csv", catalog=meters)
    result = check(prepared, existing=existing, today=dt.date(2026, 11, 26))
    assert not result.errors, result.errors[:3]
    return time.perf_counter() - t0


async def dry_run(base_url: str, key: str, path: Path) -> tuple[float, Counting, Any]:
    transport = Counting()
    async with AsyncServiceClient(base_url, key, profile="bench", transport=transport) as c:
        t0 = time.perf_counter()
        summary = await import_file(
            c, "bench", path, ImportOptions(dry_run=True, today=dt.date(2026, 11, 26))
        )
        return time.perf_counter() - t0, transport, summary


@contextlib.contextmanager
def served(db: Path) -> Iterator[str]:
    """`bpservice serve` in its own process (the spec's rate limits), as a service is run."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "bpservice"), "serve", "--db", str(db)]
    command += ["--port", str(port), "--no-workers"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server, 60)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def measure(
    rows: int = 100_000,
    meters: int = 4000,
    buildings: int = 40,
    *,
    embedded: bool = False,
    rounds: int = 3,
) -> dict[str, Any]:
    """The dry run against `bpservice serve` in its own process, or with `embedded` against the
    service in this process (the demo's embedded server: client and service share one
    interpreter, so their Python work cannot overlap). The library path and the dry run take
    turns for `rounds` rounds and the medians are compared: on a shared machine one run of
    either varies by a third."""
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        os.environ["BPSYNC_STATE_DIR"] = str(tmpd / "state")
        os.environ["BPSYNC_CONFIG_DIR"] = str(tmpd / "config")
        app = create_app(
            Settings(
                database_url=f"sqlite:///{tmpd / 'svc.db'}",
                rate_limits=RateLimits(per_key=100_000, bulk=1000, per_user=100_000),
                run_workers=False,
            )
        )
        path = tmpd / "bills.csv"

        def take_turns(url: str) -> tuple[list[float], list[float], Counting, Any]:
            libraries, dry_runs = [], []
            for _ in range(rounds):
                libraries.append(library_path(path, catalog))
                seconds, transport, summary = asyncio.run(dry_run(url, key, path))
                dry_runs.append(seconds)
            return libraries, dry_runs, transport, summary

        with EmbeddedServer(app) as server:
            key, catalog = setup(app, server.url, meters, buildings)
            write_file(path, catalog, rows)
            if embedded:
                libraries, dry_runs, transport, summary = take_turns(server.url)
        if not embedded:
            app.state.db.engine.dispose()
            with served(tmpd / "svc.db") as url:
                libraries, dry_runs, transport, summary = take_turns(url)
    assert summary.status == "dry-run" and summary.rejected == 0, summary.message
    seconds, library = statistics.median(dry_runs), statistics.median(libraries)
    return {
        "embedded": embedded,
        "rows": rows,
        "meters": meters,
        "buildings": buildings,
        "rounds": rounds,
        "dry_run_s": seconds,
        "dry_runs": dry_runs,
        "library_s": library,
        "libraries": libraries,
        "ratio": seconds / library,
        "requests": transport.requests,
        "reading_lists": transport.reading_lists,
        "beyond_readings": transport.requests - transport.reading_lists,
        "meters_with_stored": sum(1 for _, _, s in catalog if s),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--meters", type=int, default=4000)
    ap.add_argument("--buildings", type=int, default=40)
    ap.add_argument("--embedded", action="store_true", help="the service in this process")
    ap.add_argument("--rounds", type=int, default=3, help="turns of each; medians compared")
    args = ap.parse_args()
    r = measure(args.rows, args.meters, args.buildings, embedded=args.embedded, rounds=args.rounds)
    where = "the embedded bpservice (this process)" if r["embedded"] else "`bpservice serve`"
    print(
        f"dry run of {r['rows']:,} rows / {r['meters']:,} meters ({r['buildings']} buildings): "
        f"{r['dry_run_s']:.2f} s against {where}, library path {r['library_s']:.2f} s "
        f"(ratio {r['ratio']:.2f}, medians of {r['rounds']}: dry runs "
        f"{', '.join(f'{x:.2f}' for x in r['dry_runs'])}; library "
        f"{', '.join(f'{x:.2f}' for x in r['libraries'])}); {r['requests']} requests = {r['reading_lists']} readings "
        f"lists (meters holding readings that can overlap: {r['meters_with_stored']}) + "
        f"{r['beyond_readings']} others"
    )


if __name__ == "__main__":
    main()
