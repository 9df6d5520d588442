"""The importer's tests: private config/state dirs and keyring, a client of the real service, and
the sample portfolio registered through the real engine."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import keyring
import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest import read_register
from bpsync.ingest.register_submit import import_register
from tests.client.conftest import MemoryKeyring
from tests.conftest import Service

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
PROFILE = "test"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Never touch the real home or keyring."""
    for name in list(os.environ):
        if name.startswith("BPSYNC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BPSYNC_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("BPSYNC_STATE_DIR", str(tmp_path / "state"))
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield tmp_path
    keyring.set_keyring(previous)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(service: Service) -> AsyncIterator[AsyncServiceClient]:
    async with AsyncServiceClient(service.base_url, service.test_key, profile=PROFILE) as c:
        yield c


@pytest.fixture
async def registered(client: AsyncServiceClient):
    """The sample register imported: 2 properties, 3 buildings, 7 meters, references linked."""
    outcome = await import_register(
        client, read_register(SAMPLES / "portfolio_register.xlsx"), PROFILE
    )
    assert outcome.ok, outcome
    return outcome


@pytest.fixture
def samples(tmp_path: Path):
    """A private copy of a sample file (reject reports are written next to the input)."""
    import shutil

    def copy(name: str) -> Path:
        target = tmp_path / "in" / name
        target.parent.mkdir(exist_ok=True)
        shutil.copy(SAMPLES / name, target)
        return target

    return copy
