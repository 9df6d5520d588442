"""The service's fixed cost per request (issue 32 item 2), against an anchor.

    .venv/bin/python bench/bench_request_cost.py [--requests 150] [--rounds 3]

Both servers run at once on one seeded SQLite file, each in its own process, served the same
way (uvicorn on loopback, `log_level="info"` as `bpservice serve` runs it):
- the anchor: a minimal FastAPI app whose endpoints look the key up by its SHA-256 in the
  service's `api_keys` table (refusing a revoked key), then run one one-row query (a sync
  endpoint, one SQLAlchemy connection from a pool, JSON from a dict);
- the service: `bpservice serve --no-workers` with the spec's limits, every middleware on.

Targets: an authenticated single-meter GET (`/v1/buildings/{b}/meters/{m}`), a one-page
property list (`/v1/properties?per_page=1`, three properties, so the page is full and the list's
total must be counted) and a one-row readings page of a meter (`.../readings?per_page=1`, twelve
readings). The anchor answers the first with its meter query and both lists with a one-row list
query. Issue 32's target: each service target within 2x of its anchor.

Each round warms every target up, then times `--requests` sequential requests to each on its
own keep-alive httpx client, each from send to body read, the targets taking turns request by
request (the machine is shared: a busy moment then falls on anchor and service alike). Printed: median and p90 over all
rounds, and the ratios service/anchor (of medians). The spec's 1,000 requests per key per
minute hold: every target has its own key. About 20-30 s in all."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_infra import free_port, wait_until_up  # noqa: E402

WARMUP = 30


def anchor_app(db_url: str) -> Any:
    """The minimal app: the same key lookup and a one-row query, nothing else."""
    import hashlib

    from fastapi import FastAPI, Header, HTTPException
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url, connect_args={"check_same_thread": False})
    app = FastAPI()

    def caller(connection: Any, authorization: str | None) -> Any:
        token = (authorization or "").removeprefix("Bearer ").strip()
        digest = hashlib.sha256(token.encode()).hexdigest()
        key = connection.execute(
            text(
                "SELECT id, org_id, environment, scopes, revoked_at FROM api_keys "
                "WHERE secret_hash = :h"
            ),
            {"h": digest},
        ).first()
        if key is None or key.revoked_at is not None:
            raise HTTPException(401, "unauthorized")
        return key

    @app.get("/healthz")
    def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/buildings/{building_id}/meters/{meter_id}")
    def meter(building_id: str, meter_id: str, authorization: str | None = Header(None)) -> dict:
        with engine.connect() as connection:
            key = caller(connection, authorization)
            row = connection.execute(
                text(
                    "SELECT m.id, m.building_id, m.type, m.name, m.unit, m.source, m.provider, "
                    "m.status, m.latest_reading_date, m.created_at FROM meters m "
                    "JOIN buildings b ON b.id = m.building_id WHERE m.id = :m AND b.id = :b "
                    "AND b.org_id = :o AND b.environment = :e"
                ),
                {"m": meter_id, "b": building_id, "o": key.org_id, "e": key.environment},
            ).first()
        if row is None:
            raise HTTPException(404, "not found")
        return {"data": dict(row._mapping)}

    @app.get("/v1/properties")
    def properties(per_page: int = 1, authorization: str | None = Header(None)) -> dict:
        with engine.connect() as connection:
            key = caller(connection, authorization)
            rows = connection.execute(
                text(
                    "SELECT id, name, city, country, type, status, created_at FROM properties "
                    "WHERE org_id = :o AND environment = :e ORDER BY created_at, id LIMIT :n"
                ),
                {"o": key.org_id, "e": key.environment, "n": per_page},
            ).all()
        return {"data": [dict(r._mapping) for r in rows], "meta": {"per_page": per_page}}

    return app


def serve_anchor(db_path: str, port: int) -> None:
    import uvicorn

    uvicorn.run(anchor_app(f"sqlite:///{db_path}"), host="127.0.0.1", port=port, log_level="info")


@contextmanager
def process(command: list[str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [*command, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, proc, 60)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def seed(db_path: Path, url: str) -> dict[str, Any]:
    """An organisation with keys, three properties, a building, a meter and twelve readings
    (through the API, as a client would make them)."""
    from bpservice import admin
    from bpservice.db.session import Database

    db = Database(f"sqlite:///{db_path}")
    with db.write() as session:
        info = admin.bootstrap(session, owner_email="bench@example.com")
        keys = [
            admin.create_api_key(
                session,
                info["org_id"],
                environment="test",
                name=f"bench {i}",
                user_id=info["owner_user_id"],
            ).key
            for i in range(6)
        ]
    db.dispose()
    headers = {"Authorization": f"Bearer {info['test_key']}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as api:
        props = [
            api.post(
                "/v1/properties",
                json={
                    "name": f"Bench {i}",
                    "address": {"street": "1 St", "city": "Leeds", "country": "GB"},
                    "type": "office",
                },
            ).json()["data"]["id"]
            for i in range(3)
        ]
        building = api.post(
            f"/v1/properties/{props[0]}/buildings",
            json={
                "name": "B",
                "primary_use_type": "office",
                "gfa_m2": 5000,
                "year_built": 2000,
                "floors": 3,
            },
        ).json()["data"]["id"]
        meter = api.post(
            f"/v1/buildings/{building}/meters",
            json={"type": "electricity", "name": "Main", "unit": "kWh"},
        ).json()["data"]["id"]
        for month in range(1, 13):
            start = dt.date(2024, month, 1)
            end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
            r = api.post(
                f"/v1/buildings/{building}/meters/{meter}/readings",
                json={
                    "start_date": start.isoformat(),
                    "end_date": end.isoformat(),
                    "consumption": 1000 + month,
                },
            )
            r.raise_for_status()
    return {"building": building, "meter": meter, "keys": keys}


def timed(targets: list[tuple[str, str, str]], n: int) -> list[list[float]]:
    """Milliseconds of `n` sequential requests to each (url, path, key) after a warm-up, one
    keep-alive client each; the targets take turns request by request, so a busy moment on the
    shared machine falls on all of them alike."""
    clients = [
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        for url, _, key in targets
    ]
    try:
        for client, (_, path, _) in zip(clients, targets, strict=True):
            for _ in range(WARMUP):
                client.get(path).raise_for_status()
        out: list[list[float]] = [[] for _ in targets]
        for _ in range(n):
            for client, (_, path, _), times in zip(clients, targets, out, strict=True):
                t0 = time.perf_counter()
                response = client.get(path)
                response.read()
                times.append((time.perf_counter() - t0) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"{path}: {response.status_code} {response.text[:200]}")
    finally:
        for client in clients:
            client.close()
    return out


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def measure(requests: int = 150, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "svc.db"
        from bpservice import admin  # noqa: F401  (import cost outside the servers' timing)

        service_cmd = [str(Path(sys.executable).parent / "bpservice"), "serve"]
        service_cmd += ["--db", str(db_path), "--no-workers", "--port"]
        with process(service_cmd) as service:
            data = seed(db_path, service)
            anchor_cmd = [sys.executable, __file__, "--anchor", str(db_path)]
            with process(anchor_cmd) as anchor:
                meter = f"/v1/buildings/{data['building']}/meters/{data['meter']}"
                targets = {
                    "anchor: meter GET": (anchor, meter),
                    "anchor: one-row list": (anchor, "/v1/properties?per_page=1"),
                    "service: meter GET": (service, meter),
                    "service: property list, per_page=1": (service, "/v1/properties?per_page=1"),
                    "service: readings page, per_page=1": (service, meter + "/readings?per_page=1"),
                }
                samples: dict[str, list[float]] = {name: [] for name in targets}
                keys = dict(zip(targets, data["keys"], strict=False))
                turns = [(url, path, keys[name]) for name, (url, path) in targets.items()]
                for _ in range(rounds):
                    for name, times in zip(targets, timed(turns, requests), strict=True):
                        samples[name] += times
    result = {
        name: {"median_ms": statistics.median(v), "p90_ms": p90(v), "n": len(v)}
        for name, v in samples.items()
    }
    anchors = {"GET": result["anchor: meter GET"], "list": result["anchor: one-row list"]}
    for name, r in result.items():
        if name.startswith("service"):
            base = anchors["GET"] if "GET" in name else anchors["list"]
            r["ratio_median"] = r["median_ms"] / base["median_ms"]
            r["ratio_p90"] = r["p90_ms"] / base["p90_ms"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150, help="timed requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--anchor", nargs=2, metavar=("DB", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.anchor:
        serve_anchor(args.anchor[0], int(args.anchor[1]))
        return
    t0 = time.perf_counter()
    result = measure(args.requests, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, r in result.items():
        ratio = (
            f"  {r['ratio_median']:.2f}x (p90 {r['ratio_p90']:.2f}x)" if "ratio_median" in r else ""
        )
        print(f"{name:38} median {r['median_ms']:6.2f} ms  p90 {r['p90_ms']:6.2f} ms{ratio}")
    print(
        f"({args.rounds} rounds x {args.requests} requests each; {time.perf_counter() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()
