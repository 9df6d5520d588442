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
    .venv/bin/python bench/bench_import.py --shape 200x12 [--before COMMIT] [--rounds 2]

`--shape MxN` (issue 32 item 1): a real import of M meters x N monthly bills under the spec's
limits (1,000 calls and 10 bulk calls a minute per key, 10 % headroom, four calls in flight), with
the planner of `--before` (loaded from git: the planner before measured costs) and the current
one taking turns on fresh organisations of one service; calls by kind and wall time of each.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import RateLimits, Settings
from bpsync.client import AsyncServiceClient
from bpsync.commands.demo import EmbeddedServer
from bpsync.ingest.run import import_file as import_module
from bpsync.ingest.run.import_file import ImportOptions, import_file

ROOT = Path(__file__).resolve().parents[1]
# The planner before its costs were measured (issue 32 item 1): 768 of a 200 x 12 file's
# readings as single calls beside one upload.
BEFORE_MEASURED_COSTS = "bd8ba47"


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


def planner_at(commit: str) -> types.ModuleType:
    """`plan_calls` as it was at `commit` (git show), as a module of its own."""
    path = "src/bpsync/ingest/send/plan_calls.py"
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(f"plan_calls_{commit}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


async def shape_run(base_url: str, key: str, path: Path, state: Path) -> dict:
    os.environ["BPSYNC_STATE_DIR"] = str(state)
    os.environ["BPSYNC_CONFIG_DIR"] = str(state / "config")
    transport = Counting()
    async with AsyncServiceClient(base_url, key, profile="bench", transport=transport) as c:
        # Teaches the client the bulk bucket, as a user's earlier imports would have.
        await import_file(c, "bench", path.with_name("warmup.csv"), ImportOptions(uploads=False))
        transport.requests = transport.too_many = 0
        t0 = time.perf_counter()
        summary = await import_file(c, "bench", path, ImportOptions())
        wall = time.perf_counter() - t0
    plan = summary.plan or {}
    return {
        "upload_calls": plan.get("upload_calls"),
        "batch_calls": plan.get("batch_calls"),
        "single_calls": plan.get("single_calls"),
        "estimate_s": plan.get("estimated_seconds"),
        "send_s": round(summary.send_seconds, 2),
        "wall_s": round(wall, 2),
        "requests": transport.requests,
        "429s": transport.too_many,
        "accepted": summary.accepted,
    }


def measure_shape(
    meters: int = 200, months: int = 12, before: str = BEFORE_MEASURED_COSTS, rounds: int = 2
) -> dict[str, list[dict]]:
    """The import of `meters` x `months` monthly bills under the spec's limits, with the planner
    at `before` and the current one taking turns (`rounds` each), each on a fresh organisation
    (fresh key, fresh buckets) of one service. `wall_s` is the whole import (lookups, checks,
    journal, sending); `send_s` the sending alone."""
    assert months == 12, "the file writer writes a year of monthly bills"
    old = planner_at(before)
    current = (import_module.make_plan, import_module.limits_from_state)
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        app = create_app(Settings(database_url=f"sqlite:///{tmpd / 'svc.db'}", run_workers=False))
        with EmbeddedServer(app) as server:
            for r in range(rounds):
                for mode in ("before", "after"):
                    api_key, ids, setup_key = setup_org(app, server.url, meters, 0)
                    path = tmpd / f"bills-{mode}-{r}.csv"
                    rows = write_file(path, ids, meters, 0)
                    if mode == "before":
                        import_module.make_plan = old.make_plan
                        import_module.limits_from_state = old.limits_from_state
                    try:
                        result = asyncio.run(
                            shape_run(server.url, api_key, path, tmpd / f"s-{mode}-{r}")
                        )
                    finally:
                        import_module.make_plan, import_module.limits_from_state = current
                    held = stored(server.url, setup_key, ids[:-1])
                    result.update(rows=rows, stored=held, lost=rows - held)
                    results[mode].append(result)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", help="MxN: M meters x N monthly bills, spec limits (issue 32)")
    ap.add_argument("--before", default=BEFORE_MEASURED_COSTS, help="the planner to compare")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--meters", type=int, default=40)
    ap.add_argument("--big", type=int, default=3, help="meters with daily readings")
    ap.add_argument("--daily", type=int, default=200)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--key", type=int, default=40)
    ap.add_argument("--bulk", type=int, default=2)
    args = ap.parse_args()
    if args.shape:
        m, n = (int(x) for x in args.shape.lower().split("x"))
        results = measure_shape(m, n, args.before, args.rounds)
        for mode, runs in results.items():
            for run in runs:
                print(mode, run)
        walls = {
            mode: statistics.median(r["wall_s"] for r in runs) for mode, runs in results.items()
        }
        calls = {mode: runs[0]["requests"] for mode, runs in results.items()}
        print(
            f"{m} meters x {n} months: before ({args.before}) {calls['before']} requests, "
            f"{walls['before']:.2f} s; after {calls['after']} requests, {walls['after']:.2f} s "
            f"(medians of {args.rounds}); wall time after/before {walls['after'] / walls['before']:.2f}"
        )
        return
    print(
        f"limits: {args.key} calls and {args.bulk} batch calls per {args.window} s window per key"
    )
    for result in measure(args.meters, args.big, args.daily, args.window, args.key, args.bulk):
        print(result)


if __name__ == "__main__":
    main()
