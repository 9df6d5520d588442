"""Fixtures for the proof harness: the real service with fault injection switched on, and a
service behind the TCP proxy. Everything runs over loopback HTTP."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from bpservice.app import create_app
from bpservice.faults import FAULT_KINDS, FaultSettings
from bpservice.settings import RateLimits, Settings
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap

# CI runs bounded versions of every trial; BPSYNC_PROOF_FULL=1 runs the full-size ones.
FULL = os.environ.get("BPSYNC_PROOF_FULL") == "1"

GENEROUS = RateLimits(per_key=100_000, per_user=100_000, bulk=100_000, reports=100_000)


def make_faulty_service(
    stack: ExitStack,
    db_path: Path,
    clock: FakeClock,
    *,
    rate: float,
    kinds: tuple[str, ...] = FAULT_KINDS,
    seed: int = 42,
    hang_seconds: float = 0.5,
) -> Service:
    settings = Settings(
        database_url=f"sqlite:///{db_path}",
        rate_limits=GENEROUS,
        clock=clock,
        run_workers=False,
        faults=FaultSettings(rate=rate, seed=seed, kinds=kinds, hang_seconds=hang_seconds),
    )
    app = create_app(settings)
    server = stack.enter_context(LiveServer(app))
    return _bootstrap(app, clock, server.url)


FaultyFactory = Callable[..., Service]


@pytest.fixture
def faulty_service(tmp_path: Path, clock: FakeClock) -> Iterator[FaultyFactory]:
    """`faulty_service(rate=0.1, kinds=..., seed=..., hang_seconds=...)` → a live Service."""
    with ExitStack() as stack:
        made = 0

        def factory(**options: object) -> Service:
            nonlocal made
            made += 1
            return make_faulty_service(stack, tmp_path / f"faulty{made}.db", clock, **options)  # type: ignore[arg-type]

        yield factory


def http(service: Service, *, timeout: float = 30, key: str | None = None) -> httpx.Client:
    """A plain httpx client of the service with a chosen timeout (`Service.client` fixes 30 s)."""
    headers = {"Authorization": f"Bearer {key or service.test_key}"}
    return httpx.Client(base_url=service.base_url, headers=headers, timeout=timeout)


def count_rows(service: Service, model: type) -> int:
    """Read the database directly (bypassing the faulty HTTP edge)."""
    with service.app.state.db.read() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0
