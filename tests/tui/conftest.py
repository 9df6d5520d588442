"""Terminal-app tests: the real service over loopback HTTP with the demo portfolio, a profile in a
private config dir whose key sits in an in-memory keyring, and helpers to wait for the app."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import keyring
import keyring.backend
import pytest
from textual.message import Message

from bpservice.demo import seed
from bpsync.client.service import api_key_name
from bpsync.config import Profile, save_profile

# The same isolation as the client tests (autouse): private dirs, no BPSYNC_* from outside, and
# an in-memory keyring.
from tests.client.conftest import MemoryKeyring, isolated  # noqa: F401
from tests.conftest import Service

TODAY = dt.date(2026, 11, 20)  # the FakeClock's day


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Seeded:
    service: Service
    counts: dict[str, int]


@pytest.fixture
def seeded(service: Service) -> Seeded:
    counts = asyncio.run(seed(service.app, service.test_key, months=24, today=TODAY))
    return Seeded(service, counts)


def login(service: Service, key: str | None = None, name: str = "default") -> Profile:
    """A saved profile pointing at the service, its key in the (memory) keyring."""
    profile = Profile(name=name, base_url=service.base_url)
    save_profile(profile, make_default=True)
    keyring.set_password("bpsync", api_key_name(name), key or service.test_key)
    return profile


class Messages:
    """Everything the app's message pumps received, for assertions (`message_hook`)."""

    def __init__(self) -> None:
        self.seen: list[Message] = []

    def __call__(self, message: Message) -> None:
        self.seen.append(message)

    def of(self, kind: type) -> list:
        return [m for m in self.seen if isinstance(m, kind)]


async def until(pilot, condition: Callable[[], object], timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `condition()` holds (workers talk to a real server)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


def shown(app, selector: str) -> str:  # type: ignore[no-untyped-def]
    """What a Static of the current screen shows, as plain text ("" while it is not there)."""
    from rich.console import Console

    found = app.screen.query(selector)
    if not found:
        return ""
    console = Console(width=200, color_system=None)
    with console.capture() as captured:
        console.print(found.first().content)
    return captured.get()
