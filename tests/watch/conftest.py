"""The watcher's tests: private config/state dirs and keyring, a fresh organisation on the real
service, a settable monotonic clock, and a harness that runs a real `Watcher` (real watchdog
observer, real import engine, real HTTP) in a thread."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI

from bpservice.settings import KEEP_ALIVE_SECONDS
from bpsync.client import AsyncServiceClient
from bpsync.client.base import RetryPolicy
from bpsync.config import Profile
from bpsync.ingest.run.import_file import ImportOptions
from bpsync.watch.core import RunResult, WatchConfig, Watcher
from bpsync.watch.log import WatchLog
from bpsync.watch.service import ServiceImporter
from tests.conftest import Org, Service, isolate_bpsync, make_org

PROFILE = "default"
HEADER = "Meter ID,Start Date,End Date,Consumption,Unit\n"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Never touch the real home or keyring."""
    with isolate_bpsync(tmp_path, monkeypatch):
        yield tmp_path


@pytest.fixture
def org(service: Service, monkeypatch: pytest.MonkeyPatch) -> Org:
    """A fresh organisation; the default profile points at it through the environment."""
    made = make_org(service)
    monkeypatch.setenv("BPSYNC_API_KEY", made.key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    return made


def stored(service: Service, org: Org) -> list[tuple[str, str, str, float]]:
    """Every reading the service holds for the organisation: (meter, start, end, consumption)."""
    out = []
    with service.client(org.key) as api:
        for m in org.meters:
            page = 1
            while True:
                body = api.get(
                    f"/v1/buildings/{org.building}/meters/{m}/readings",
                    params={"per_page": 200, "page": page},
                ).json()
                out += [(m, r["start_date"], r["end_date"], r["consumption"]) for r in body["data"]]
                if page >= body["meta"]["total_pages"]:
                    break
                page += 1
    return sorted(out)


def month(year: int, m: int) -> tuple[dt.date, dt.date]:
    start = dt.date(year, m, 1)
    end = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    return start, end


def bills_text(rows: list[tuple[str, dt.date, dt.date, float]]) -> str:
    return HEADER + "".join(f"{m},{s},{e},{c},kWh\n" for m, s, e, c in rows)


def expected(rows: list[tuple[str, dt.date, dt.date, float]]) -> list[tuple]:
    return sorted((m, s.isoformat(), e.isoformat(), float(c)) for m, s, e, c in rows)


def drop(folder: Path, name: str, text: str) -> Path:
    """Put a file into the folder as exporters do: written under a dotfile name (ignored), then
    renamed into place (a moved-in event), so a test with stable_seconds=0 never races a write."""
    tmp = folder / f".{name}.incoming"
    tmp.write_text(text, encoding="utf-8")
    target = folder / name
    os.replace(tmp, target)
    return target


class Tick:
    """A settable monotonic clock for stability and rescan decisions."""

    def __init__(self) -> None:
        self.t = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.t

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.t += seconds


def fast_client(profile: Profile) -> AsyncServiceClient:
    """The profile's client, with a short retry policy so an unreachable service is noticed
    in milliseconds (the watcher's own backoff is what is under test)."""
    return AsyncServiceClient.from_profile(
        profile, retry=RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02), timeout=5
    )


class Harness:
    """A `Watcher` on `folder`, run in a thread, logging JSON lines into memory."""

    def __init__(
        self,
        folder: Path,
        *,
        clock: Callable[[], float] | None = None,
        template: str = "auto",
        **config: object,
    ) -> None:
        defaults: dict[str, object] = {
            "stable_seconds": 0.0,
            "rescan_seconds": 3600.0,
            "tick_seconds": 0.02,
            "backoff_base": 0.05,
            "backoff_cap": 0.2,
            "stop_grace": 20.0,
            "poll_interval": 0.05,
        }
        defaults.update(config)
        self.folder = folder
        self.config = WatchConfig(folder=folder, profile=PROFILE, **defaults)  # type: ignore[arg-type]
        self.stream = io.StringIO()
        self.log = WatchLog(self.stream, json_lines=True, verbose=True)
        self.importer = ServiceImporter(
            PROFILE, ImportOptions(template=template), client_factory=fast_client
        )
        self.watcher = Watcher(
            self.config, self.importer, log=self.log, clock=clock or time.monotonic
        )
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.result = self.watcher.run()
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def __enter__(self) -> Harness:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> RunResult:
        self.watcher.stop()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the watcher did not stop"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def events(self, name: str | None = None) -> list[dict]:
        lines = [json.loads(x) for x in self.stream.getvalue().splitlines() if x.strip()]
        return [e for e in lines if name is None or e["event"] == name]


def wait_for(predicate: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    """Poll a background worker (a few ms at a time) until `predicate()` is true."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.005)


def history(state: Path) -> list[tuple[str, str, str, str | None]]:
    """The ledger's `files` table: (file name, sha256, fate, stored as), oldest first."""
    path = state / "watch" / f"{PROFILE}.ledger.sqlite"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute(
                "SELECT file_name, sha256, fate, stored_as FROM files ORDER BY id"
            ).fetchall()
    except sqlite3.OperationalError:  # created a moment ago: no tables yet
        return []


def journal_imports(state: Path) -> int:
    path = state / "imports.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM imports").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerOnPort:
    """uvicorn serving `app` on a given loopback port (to bring a service "back")."""

    def __init__(self, app: FastAPI, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_SECONDS
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> ServerOnPort:
        self.thread.start()
        wait_for(lambda: self.server.started, 15, "the server to start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
