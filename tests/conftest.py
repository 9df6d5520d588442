"""Fixtures that run the real service: a uvicorn server on a free loopback port over a temporary
SQLite file, or httpx's ASGI transport where speed matters. Time comes from a FakeClock."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import RateLimits, Settings


class FakeClock:
    """A settable clock: tests move time instead of sleeping."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self.now = start or dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
        self._lock = threading.Lock()

    def __call__(self) -> dt.datetime:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += dt.timedelta(seconds=seconds)


@dataclass
class Service:
    """A running service and the credentials of one bootstrapped organisation."""

    app: FastAPI
    base_url: str
    clock: FakeClock
    org_id: str
    owner_user_id: str
    test_key: str
    live_key: str

    def client(self, key: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key or self.test_key}"} if key != "" else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30, **kwargs)

    def bootstrap(self, **kwargs: str) -> dict[str, str]:
        """Another organisation in the same service."""
        with self.app.state.db.write() as session:
            return admin.bootstrap(session, now=self.clock(), **kwargs)

    def new_key(
        self,
        scopes: list[str] | None,
        environment: str = "test",
        org_id: str | None = None,
        user_id: str | None = None,
    ) -> str:
        with self.app.state.db.write() as session:
            return admin.create_api_key(
                session,
                org_id or self.org_id,
                environment=environment,
                scopes=scopes,
                user_id=user_id,
                now=self.clock(),
            ).key


class LiveServer:
    """uvicorn in a thread, bound to a free port on 127.0.0.1."""

    def __init__(self, app: FastAPI) -> None:
        # IPPROTO_TCP explicitly: asyncio only turns Nagle off for sockets that name it, and
        # without TCP_NODELAY every loopback request waits ~40 ms for a delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def make_service_app(db_path: Path, clock: FakeClock, **limits: int) -> FastAPI:
    settings = Settings(
        database_url=f"sqlite:///{db_path}",
        rate_limits=RateLimits(**limits) if limits else RateLimits(),
        clock=clock,
        run_workers=False,
    )
    return create_app(settings)


def _bootstrap(app: FastAPI, clock: FakeClock, base_url: str) -> Service:
    with app.state.db.write() as session:
        info = admin.bootstrap(session, now=clock())
    return Service(
        app,
        base_url,
        clock,
        info["org_id"],
        info["owner_user_id"],
        info["test_key"],
        info["live_key"],
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    """The real service over loopback HTTP, with generous limits so tests are not throttled."""
    app = make_service_app(
        tmp_path / "svc.db", clock, per_key=100_000, bulk=100_000, reports=100_000, per_user=100_000
    )
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


@pytest.fixture
def limited_service(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    """The real service with the spec's limits, over loopback HTTP."""
    app = make_service_app(tmp_path / "svc.db", clock)
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


@pytest.fixture
def api(service: Service) -> Iterator[httpx.Client]:
    """A client of the live service with the sandbox key (every scope)."""
    with service.client() as client:
        yield client
