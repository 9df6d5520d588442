"""Client tests: an in-memory keyring, private config/state dirs, and clients of the real service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest

from bpsync.client import AsyncServiceClient
from tests.conftest import Service


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


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    """Never touch the real home or keyring: dirs under tmp_path, no BPSYNC_* from outside."""
    import os

    for name in list(os.environ):
        if name.startswith("BPSYNC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BPSYNC_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("BPSYNC_STATE_DIR", str(tmp_path / "state"))
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


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
