"""The planner's estimate against the actual time of an import on the real service, under a
scaled rate-limit window, and the share of the rate-limit ceiling achieved.

The service runs over loopback with the real clock and limits scaled down (default: 40 calls
per 2 s per key, 2 batch calls per 2 s; below what the SQLite service can write, ~30 single
writes/s, so the limits bind), so the planner's trade-off between batch and single calls
matters as it does at 1,000 / 10 per minute. The file: many meters with 12 monthly bills and a few
with hundreds of daily readings. Reported per run (headroom 10 % and 0 %): the plan, the estimate,
the actual sending time, estimate/actual (the share of the ceiling achieved: the estimate is when
the limits let the last call start), 429s seen, and whether the server holds exactly the file.

    .venv/bin/python bench/bench_import.py [--meters 60] [--window 2] [--key 100] [--bulk 2]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import RateLimits, Settings
from bpsync.client import AsyncServiceClient
from bpsync.commands.demo import EmbeddedServer
from bpsync.ingest.run.import_file import ImportOptions, import_file


class Counting(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0
        self.too_many = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.requests += 1
        self.too_many += response.status_code == 429
        if os.environ.get("BENCH_TRACE") and request.method == "POST":
            kind = "B" if request.url.path.endswith("/batch") else "s"
            print(f"{time.time():.2f} {kind} {response.status_code}", file=sys.stderr)
        return response


def setup_org(app, base_url: str, meters: int, big: int) -> tuple[str, list[str], str]:
    with app.state.db.write() as session:
        info = admin.bootstrap(session, owner_email=f"b{time.time_ns()}@example.com")
    with app.state.db.write() as session:  # a separate key for setup and checks
        setup_key = admin.create_api_key(session, info["org_id"], environment="test").key
    headers = {"Authorization": f"Bearer {setup_key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as api:

        def post(url, body):
            while True:
                r = api.post(url, json=body)
                if r.status_code != 429:
                    return r.json()["data"]
                time.sleep(float(r.headers.get("retry-after", "1")))

        prop = post(
            "/v1/properties",
            {
                "name": "Bench",
                "address": {"street": "1 St", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        )
        bld = post(
            f"/v1/properties/{prop['id']}/buildings",
            {
                "name": "B",
                "primary_use_type": "office",
                "gfa_m2": 5000,
                "year_built": 2000,
                "floors": 3,
            },
        )
        ids = [
            post(
                f"/v1/buildings/{bld['id']}/meters",
                {"type": "electricity", "unit": "kWh", "name": f"M{i}"},
            )["id"]
            for i in range(meters + big + 1)
        ]
    return info["test_key"], ids, setup_key


def write_file(path: Path, ids: list[str], meters: int, daily: int) -> int:
    warm = ids[-1]
    path.with_name("warmup.csv").write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        f"{warm},2020-01-01,2020-01-01,1,kWh\n{warm},2020-01-02,2020-01-02,1,kWh\n",
        encoding="utf-8",
    )
    ids = ids[:-1]
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
    for i, m in enumerate(ids):
        if i < meters:
            for month in range(1, 13):
                start = dt.date(2024, month, 1)
                end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
                lines.append(f"{m},{start},{end},{1000 + month},kWh")
        else:
            for d in range(daily):
                day = dt.date(2023, 1, 1) + dt.timedelta(days=d)
                lines.append(f"{m},{day},{day},{30 + d % 7},kWh")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1


async def one_run(
    base_url: str, key: str, path: Path, headroom: float, state: Path, uploads: bool = False
) -> dict:
    os.environ["BPSYNC_STATE_DIR"] = str(state)
    os.environ["BPSYNC_CONFIG_DIR"] = str(state / "config")
    transport = Counting()
    async with AsyncServiceClient(base_url, key, profile="bench", transport=transport) as c:
        # Warm-up: one small import teaches the client the bulk bucket (the service's headers
        # describe only the tightest bucket, so it is learned from a batch answer). Its state
        # persists in the state dir, as it would between a user's imports.
        await import_file(c, "bench", path.with_name("warmup.csv"), ImportOptions(uploads=False))
        await asyncio.sleep(float(os.environ.get("BENCH_WINDOW", "2")))
        transport.requests = transport.too_many = 0
        summary = await import_file(
            c, "bench", path, ImportOptions(headroom=headroom, concurrency=8, uploads=uploads)
        )
    plan = summary.plan or {}
    return {
        "headroom": headroom,
        "uploads": uploads,
        "upload_calls": plan.get("upload_calls"),
        "accepted": summary.accepted,
        "rejected": summary.rejected,
        "batch_calls": plan.get("batch_calls"),
        "single_calls": plan.get("single_calls"),
        "bound_by": plan.get("bound_by"),
        "estimate_s": plan.get("estimated_seconds"),
        "actual_s": round(summary.send_seconds, 2),
        "all_batches_s": plan.get("alternatives_seconds", {}).get("all_batches"),
        "all_singles_s": plan.get("alternatives_seconds", {}).get("all_singles"),
        "requests": transport.requests,
        "429s": transport.too_many,
    }


def stored(base_url: str, key: str, ids: list[str]) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    total = 0
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as api:
        bld = api.get("/v1/properties").json()["data"][0]
        building = api.get(f"/v1/properties/{bld['id']}/buildings").json()["data"][0]["id"]
        for m in ids:
            while True:
                r = api.get(f"/v1/buildings/{building}/meters/{m}/readings", params={"per_page": 1})
                if r.status_code != 429:
                    break
                time.sleep(float(r.headers.get("retry-after", "1")))
            total += r.json()["meta"]["total"]
    return total


def measure(
    meters: int = 40,
    big: int = 3,
    daily: int = 200,
    window: int = 2,
    key: int = 40,
    bulk: int = 2,
    headrooms: tuple[float, ...] = (0.1, 0.0),
    uploads: bool = True,
) -> list[dict]:
    """One sustained import per headroom, batches and single calls only, then (with `uploads`)
    one with the CSV upload at headroom 0, each on a fresh organisation of a live service whose
    limits are `key` calls and `bulk` bulk calls per `window` seconds. Each result: the plan, the
    estimate (when the limits let the last call start), the actual sending time, requests, 429s,
    rows in the file, rows stored, lost, and the share of the ceiling achieved."""
    os.environ["BENCH_WINDOW"] = str(window)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        app = create_app(
            Settings(
                database_url=f"sqlite:///{tmpd / 'svc.db'}",
                rate_limits=RateLimits(
                    per_key=key,
                    bulk=bulk,
                    per_user=key,
                    reports=20,
                    window_seconds=window,
                ),
                run_workers=False,
            )
        )
        with EmbeddedServer(app) as server:
            modes = [(h, False) for h in headrooms] + ([(0.0, True)] if uploads else [])
            for headroom, upload in modes:
                api_key, ids, setup_key = setup_org(app, server.url, meters, big)
                path = tmpd / f"bills-{headroom}-{upload}.csv"
                rows = write_file(path, ids, meters, daily)
                time.sleep(window)  # start in a fresh window for every run
                result = asyncio.run(
                    one_run(
                        server.url, api_key, path, headroom, tmpd / f"s{headroom}{upload}", upload
                    )
                )
                held = stored(server.url, setup_key, ids[:-1])
                result.update(
                    rows=rows,
                    stored=held,
                    lost=rows - held,
                    share_of_ceiling=round(result["estimate_s"] / result["actual_s"], 3),
                    limits=f"{key} calls and {bulk} batch calls per {window} s",
                )
                results.append(result)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--meters", type=int, default=40)
    ap.add_argument("--big", type=int, default=3, help="meters with daily readings")
    ap.add_argument("--daily", type=int, default=200)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--key", type=int, default=40)
    ap.add_argument("--bulk", type=int, default=2)
    args = ap.parse_args()
    print(
        f"limits: {args.key} calls and {args.bulk} batch calls per {args.window} s window per key"
    )
    for result in measure(args.meters, args.big, args.daily, args.window, args.key, args.bulk):
        print(result)


if __name__ == "__main__":
    main()
