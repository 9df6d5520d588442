"""Fixtures that run the real service: a uvicorn server on a free loopback port over a temporary
SQLite file, or httpx's ASGI transport where speed matters. Time comes from a FakeClock."""

from __future__ import annotations

import datetime as dt
import email.utils
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import keyring
import keyring.backend
import pytest
import uvicorn
from fastapi import FastAPI

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import KEEP_ALIVE_SECONDS, RateLimits, Settings

# --- parallel runs (pytest-xdist, `-n 2 --dist loadgroup` in pyproject.toml) -----------------------
#
# Every test makes its own service, port, database and directories, so tests run on any worker in
# any order. Two kinds stay together on one worker (an `xdist_group`):
# - a module whose tests share a module-scoped fixture (one cluster, one fuzzed service, one
#   seeded portfolio): split across workers, each would build it again;
# - the tests below, which time real processes or assert wall-clock bounds: on one worker they
#   never compete with each other for the two cores (the other worker still runs).
TIMED = (  # node id prefixes
    "tests/proof/test_kill",  # test_kill.py, test_kill_update.py, any kill proof to come
    "tests/proof/test_faults.py",
    "tests/proof/test_client_faults.py",
    "tests/proof/test_import_faults.py",
    "tests/client/test_ratelimit.py::test_paced_client_hits_almost_no_429",
    "tests/service/test_concurrent_writes.py",
    "tests/service/test_infrastructure.py",
    "tests/ingest/test_bounded_input.py",
    "tests/watch/test_watch.py",
    "tests/packaging/test_bench_smoke.py",
)


# A worker starts with COLUMNS=80 in its environment (the controller has none when its output is
# not a terminal), and the CLI then draws its tables 80 columns wide instead of its pipe width: a
# worker gets the controller's COLUMNS back, or none.
_COLUMNS = os.environ.get("COLUMNS")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["bp_columns"] = _COLUMNS


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "bp_columns" in workerinput:
        if workerinput["bp_columns"] is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = workerinput["bp_columns"]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if item.nodeid.startswith(TIMED):
            item.add_marker(pytest.mark.xdist_group("timed"))
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        # Only the project's own fixtures (a plugin's, such as anyio's module-scoped
        # `anyio_backend`, costs nothing to set up again).
        if any(d.scope == "module" and d.baseid for fixturedefs in defs for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(f"module-{item.module.__name__}"))  # type: ignore[attr-defined]


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


class DateFromClock:
    """ASGI wrapper: every response's Date header read from `clock`. A real server stamps Date from
    the clock its X-RateLimit-Reset comes from; uvicorn's own Date is real time, which disagrees
    with a service on a FakeClock."""

    def __init__(self, app: Any, clock: Callable[[], dt.datetime]) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def stamped(message: Any) -> None:
            if message["type"] == "http.response.start":
                date = email.utils.format_datetime(self.clock().astimezone(dt.UTC), usegmt=True)
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                message = {**message, "headers": [*headers, (b"date", date.encode())]}
            await send(message)

        await self.app(scope, receive, stamped)


class LiveServer:
    """uvicorn in a thread, bound to a free port on 127.0.0.1. With `clock` (the service's), the
    Date header comes from that clock (`DateFromClock`); without it, uvicorn's real time."""

    def __init__(self, app: FastAPI, clock: Callable[[], dt.datetime] | None = None) -> None:
        # IPPROTO_TCP explicitly: asyncio only turns Nagle off for sockets that name it, and
        # without TCP_NODELAY every loopback request waits ~40 ms for a delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        served: Any = app if clock is None else DateFromClock(app, clock)
        config = uvicorn.Config(
            served,
            log_level="warning",
            lifespan="on",
            date_header=clock is None,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,  # as `bpservice serve` runs
        )
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


# The service tests run on SQLite by default; with BPSERVICE_TEST_DB_URL (a PostgreSQL URL) and
# BPSERVICE_TEST_REDIS_URL set (.ci/run does), every service made here uses a fresh PostgreSQL
# database cloned from one migrated template, and Redis for its rate limits and throttles.
TEST_DB_URL = os.environ.get("BPSERVICE_TEST_DB_URL") or None
TEST_REDIS_URL = os.environ.get("BPSERVICE_TEST_REDIS_URL") or None
# One template per pytest-xdist worker (gw0, gw1, ...): a worker drops and re-creates its template
# when it starts, and PostgreSQL refuses to clone a template another session is using.
_TEMPLATE = "bp_template_" + (os.environ.get("PYTEST_XDIST_WORKER") or "main")
_template_ready = False


def fresh_database_url(db_path: Path) -> str:
    """A new, migrated, empty database: a SQLite file at db_path, or a PostgreSQL clone."""
    global _template_ready
    if TEST_DB_URL is None or db_path.exists():
        # A test that made its own SQLite file (e.g. through `bpservice admin`) serves that file.
        return f"sqlite:///{db_path}"
    from sqlalchemy import create_engine, make_url, text

    from bpservice.db import migrate

    base = make_url(TEST_DB_URL)
    server = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as conn:
            if not _template_ready:
                conn.execute(text(f"DROP DATABASE IF EXISTS {_TEMPLATE}"))
                conn.execute(text(f"CREATE DATABASE {_TEMPLATE}"))
                template = create_engine(base.set(database=_TEMPLATE))
                migrate.upgrade(template)
                template.dispose()
                _template_ready = True
            name = "bp_" + uuid.uuid4().hex[:16]
            conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE}"))
    finally:
        server.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def service_settings(db_path: Path, clock: FakeClock, **overrides: Any) -> Settings:
    """Settings for a service under test, on the backends the run was asked for."""
    values: dict[str, Any] = {
        "database_url": fresh_database_url(db_path),
        "clock": clock,
        "run_workers": False,
        # receivers in tests listen on loopback; the SSRF tests turn this off again
        "allow_private_webhooks": True,
    }
    if TEST_REDIS_URL is not None:
        values["redis_url"] = TEST_REDIS_URL
        values["redis_prefix"] = "bptest-" + uuid.uuid4().hex[:12]
    values.update(overrides)
    return Settings(**values)


def make_service_app(db_path: Path, clock: FakeClock, **limits: int) -> FastAPI:
    settings = service_settings(
        db_path, clock, rate_limits=RateLimits(**limits) if limits else RateLimits()
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


# --- helpers for the bpsync tests ----------------------------------------------------------------


class MemoryKeyring(keyring.backend.KeyringBackend):
    """The OS keyring stand-in: a dict, per test."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        if self.items.pop((service, username), None) is None:
            raise PasswordDeleteError(username)


@contextmanager
def isolate_bpsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    """Never touch the real home or keyring: config and state dirs under tmp_path, no BPSYNC_*
    from outside, and an in-memory keyring for the duration."""
    for name in list(os.environ):
        if name.startswith("BPSYNC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BPSYNC_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("BPSYNC_STATE_DIR", str(tmp_path / "state"))
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


class Org(NamedTuple):
    key: str
    building: str
    meters: list[str]


def make_org(service: Service, meters: int = 3, name: str = "Test property") -> Org:
    """A fresh organisation (its own sandbox key) with one building and `meters` electricity
    meters in kWh."""
    key = service.bootstrap(owner_email=f"o{time.monotonic_ns()}@example.com")["test_key"]
    with service.client(key) as api:
        prop = api.post(
            "/v1/properties",
            json={
                "name": name,
                "address": {"street": "1 A St", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        ).json()["data"]
        bld = api.post(
            f"/v1/properties/{prop['id']}/buildings",
            json={
                "name": "B",
                "primary_use_type": "office",
                "gfa_m2": 1000,
                "year_built": 2000,
                "floors": 2,
            },
        ).json()["data"]
        ids = [
            api.post(
                f"/v1/buildings/{bld['id']}/meters",
                json={"type": "electricity", "unit": "kWh", "name": f"M{i}"},
            ).json()["data"]["id"]
            for i in range(meters)
        ]
    return Org(key, bld["id"], ids)
