"""Client tests: an in-memory keyring, private config/state dirs, and clients of the real service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bpsync.client import AsyncServiceClient
from tests.conftest import MemoryKeyring, Service, isolate_bpsync


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    """Never touch the real home or keyring."""
    with isolate_bpsync(tmp_path, monkeypatch) as backend:
        yield backend


@pytest.fixture
def memory_keyring(isolated: MemoryKeyring) -> MemoryKeyring:
    return isolated


@pytest.fixture
async def client(service: Service) -> AsyncIterator[AsyncServiceClient]:
    async with AsyncServiceClient(service.base_url, service.test_key) as c:
        yield c


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
