"""Standard-infrastructure figures (issue 13): SQLite with 1 vs 4 concurrent writers, and
throughput of 1 vs 3 instances over PostgreSQL + Redis.

    .venv/bin/python bench/bench_infra.py [--seconds 10] [--pg URL --redis URL]

Each instance is a separate `uvicorn` process (the real service with limits raised so the
benchmark measures storage, not the rate limiter). Clients are threads, each posting single
readings to its own meter, so writers never conflict on one meter."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx


def serve(db_url: str, port: int, redis_url: str | None) -> None:
    import uvicorn

    from bpservice.app import create_app
    from bpservice.settings import RateLimits, Settings

    limits = RateLimits(per_key=10**9, per_user=10**9, bulk=10**9, reports=10**9)
    settings = Settings(
        database_url=db_url, rate_limits=limits, redis_url=redis_url, run_workers=False
    )
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 30) -> None:
    """Until `url`/healthz answers 200; RuntimeError when `process` ends or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError(f"the service at {url} did not start")
        time.sleep(0.1)


def start_instances(db_url: str, n: int, redis_url: str | None) -> tuple[list, list[str]]:
    procs, urls = [], []
    for _ in range(n):
        port = free_port()
        args = [sys.executable, __file__, "--serve", db_url, str(port)]
        if redis_url:
            args += ["--redis", redis_url]
        procs.append(subprocess.Popen(args))
        urls.append(f"http://127.0.0.1:{port}")
    for url, process in zip(urls, procs, strict=True):
        wait_until_up(url, process)
    return procs, urls


def bootstrap(db_url: str) -> str:
    from bpservice import admin
    from bpservice.db import migrate
    from bpservice.db.session import Database

    db = Database(db_url)
    migrate.upgrade(db.engine)
    with db.write() as session:
        info = admin.bootstrap(session, org_name=f"bench {uuid.uuid4().hex[:6]}")
    db.dispose()
    return info["test_key"]


def make_meters(url: str, key: str, n: int) -> list[str]:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url + "/v1", headers=headers, timeout=30) as api:
        prop = api.post(
            "/properties",
            json={"name": "Bench", "address": {"street": "1 A", "city": "B", "country": "GB"},
                  "type": "office"},
        ).json()["data"]  # fmt: skip
        paths = []
        for _ in range(n):  # one building per writer: writers of one building take turns
            building = api.post(
                f"/properties/{prop['id']}/buildings",
                json={"name": "B", "primary_use_type": "office", "gfa_m2": 1000,
                      "year_built": 2000, "floors": 2},
            ).json()["data"]  # fmt: skip
            meter = api.post(
                f"/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kWh"}
            ).json()["data"]["id"]
            paths.append(f"/buildings/{building['id']}/meters/{meter}/readings")
        return paths


def drive(urls: list[str], key: str, paths: list[str], seconds: float) -> dict:
    """Each client posts daily readings to its own meter for `seconds`; returns the figures."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        nonlocal errors
        day = dt.date(2000, 1, 1)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=urls[i % len(urls)] + "/v1", headers=headers, timeout=60) as api:
            while time.monotonic() < stop:
                body = {
                    "start_date": day.isoformat(),
                    "end_date": day.isoformat(),
                    "consumption": 5,
                }
                started = time.perf_counter()
                r = api.post(paths[i], json=body)
                took = time.perf_counter() - started
                with lock:
                    if r.status_code == 201:
                        latencies.append(took)
                    else:
                        errors += 1
                day += dt.timedelta(days=1)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    return {
        "per_second": round(len(latencies) / seconds, 1),
        "p50_ms": round(statistics.median(latencies) * 1000) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000) if latencies else None,
        "errors": errors,
    }


def run_case(db_url: str, instances: int, writers: int, seconds: float, redis: str | None) -> dict:
    key = bootstrap(db_url)
    procs, urls = start_instances(db_url, instances, redis)
    try:
        paths = make_meters(urls[0], key, writers)
        return drive(urls, key, paths, seconds)
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


def fresh_pg(url: str) -> str:
    from sqlalchemy import create_engine, make_url, text

    base = make_url(url)
    name = "bp_bench_" + uuid.uuid4().hex[:8]
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--pg", default=os.environ.get("BPSERVICE_TEST_DB_URL"))
    parser.add_argument("--redis", default=os.environ.get("BPSERVICE_TEST_REDIS_URL"))
    parser.add_argument("--serve", nargs=2, metavar=("DB_URL", "PORT"))
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.redis)
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for writers in (1, 4):
            db = f"sqlite:///{Path(tmp) / f'w{writers}.db'}"
            figures = run_case(db, 1, writers, args.seconds, None)
            results.append({"case": f"SQLite, 1 instance, {writers} writer(s)", **figures})
    if args.pg and args.redis:
        for instances in (1, 3):
            figures = run_case(fresh_pg(args.pg), instances, 6, args.seconds, args.redis)
            results.append(
                {"case": f"PostgreSQL + Redis, {instances} instance(s), 6 writers", **figures}
            )
    for row in results:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
