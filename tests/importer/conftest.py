"""The importer's tests: private config/state dirs and keyring, a client of the real service, and
the sample portfolio registered through the real engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest import read_register
from bpsync.ingest.register.apply import import_register
from bpsync.paths import package_dir
from tests.conftest import Service, isolate_bpsync
from tests.service.conftest import scaled_service  # noqa: F401 (a live service with given limits)

SAMPLES = package_dir("sample_data")
PROFILE = "test"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Never touch the real home or keyring."""
    with isolate_bpsync(tmp_path, monkeypatch):
        yield tmp_path


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
