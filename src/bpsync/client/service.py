"""The client of the service: `AsyncServiceClient` (the core) and `ServiceClient` (a thin sync
facade that runs the same coroutines on a private event loop, so no logic is copied)."""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from bpsync.client.auth import (
    ApiKeyAuth,
    Credentials,
    Environment,
    FileSecretStore,
    KeyringStore,
    OAuthApp,
    OAuthAuth,
    Secret,
    SecretStore,
    TokenStore,
)
from bpsync.client.base import BaseClient, RetryPolicy, Sleep
from bpsync.client.benchmarks import Benchmarks
from bpsync.client.buildings import Buildings
from bpsync.client.errors import LoginRequiredError
from bpsync.client.etag import ETagCache
from bpsync.client.meters import Meters
from bpsync.client.pagination import AsyncPaginator, Page
from bpsync.client.properties import Properties
from bpsync.client.ratelimit import FileStore, RateLimiter
from bpsync.client.readings import Readings
from bpsync.client.reports import Reports
from bpsync.client.users import Users
from bpsync.client.webhooks import Webhooks
from bpsync.config import Profile
from bpsync.paths import state_dir


def oauth_lock_path(profile: str) -> Path:
    """The file lock that serialises OAuth token refreshes of a profile across processes."""
    return state_dir() / "locks" / f"{profile}.oauth.lock"


def secret_store_for(profile: Profile) -> SecretStore:
    if profile.secret_store == "file":
        return FileSecretStore(state_dir() / "secrets.json")
    return KeyringStore()


def api_key_name(profile: str) -> str:
    return f"{profile}:api_key"


def client_secret_name(profile: str) -> str:
    return f"{profile}:client_secret"


def credentials_for(
    profile: Profile,
    *,
    store: SecretStore | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.time,
) -> Credentials:
    """The profile's credentials: `BPSYNC_API_KEY`, else the secret store."""
    env = os.environ if env is None else env
    if profile.auth_method == "api_key":
        key = env.get("BPSYNC_API_KEY")
        if not key:
            key = (store or secret_store_for(profile)).get(api_key_name(profile.name))
        if not key:
            raise LoginRequiredError(
                f"No API key for profile {profile.name!r}: run `bpsync login --api-key` or set "
                "BPSYNC_API_KEY."
            )
        return ApiKeyAuth(key)
    if not profile.client_id:
        raise LoginRequiredError(
            f"Profile {profile.name!r} uses OAuth but has no client_id: run `bpsync login --oauth "
            "--client-id ...`."
        )
    store = store or secret_store_for(profile)
    client_secret = env.get("BPSYNC_CLIENT_SECRET") or store.get(client_secret_name(profile.name))
    app = OAuthApp(
        profile.effective_auth_url,
        profile.client_id,
        Secret(client_secret) if client_secret else None,
    )
    tokens = TokenStore(store, profile.name, oauth_lock_path(profile.name))
    return OAuthAuth(app, tokens, identity=f"user-{profile.name}", clock=clock)


class AsyncServiceClient:
    """Every endpoint of the service, async. Use as `async with AsyncServiceClient(...) as c:`."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials | str,
        *,
        profile: str = "default",
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        limiter: RateLimiter | bool | None = True,
        etags: ETagCache | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        creds = ApiKeyAuth(credentials) if isinstance(credentials, str) else credentials
        if limiter is True:
            # Shared with other processes of this profile and credential.
            path = state_dir() / "ratelimit" / f"{profile}-{creds.identity}.json"
            limiter = RateLimiter(FileStore(path), clock=clock, rand=rand)
        elif limiter is False:
            limiter = None
        self.profile = profile
        self.base = BaseClient(
            base_url,
            creds,
            timeout=timeout,
            retry=retry,
            limiter=limiter,
            etags=etags,
            transport=transport,
            clock=clock,
            sleep=sleep,
            rand=rand,
        )
        self.properties = Properties(self.base)
        self.buildings = Buildings(self.base)
        self.meters = Meters(self.base)
        self.readings = Readings(self.base)
        self.users = Users(self.base)
        self.benchmarks = Benchmarks(self.base)
        self.reports = Reports(self.base)
        self.webhooks = Webhooks(self.base)

    @classmethod
    def from_profile(
        cls, profile: Profile, *, store: SecretStore | None = None, **kwargs: Any
    ) -> AsyncServiceClient:
        creds = credentials_for(profile, store=store, clock=kwargs.get("clock", time.time))
        return cls(profile.base_url, creds, profile=profile.name, **kwargs)

    @property
    def credentials(self) -> Credentials:
        return self.base.credentials

    @property
    def environment(self) -> Environment | None:
        """production or sandbox (from the key prefix); None when the credential does not say."""
        return self.base.credentials.environment

    @property
    def limiter(self) -> RateLimiter | None:
        return self.base.limiter

    async def aclose(self) -> None:
        await self.base.aclose()

    async def __aenter__(self) -> AsyncServiceClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncServiceClient({self.base.base_url!r}, {self.base.credentials!r})"


class _SyncPaginator:
    """A paginator driven from synchronous code: iterate items, or `.first()` for one page."""

    def __init__(self, portal: BlockingPortal, paginator: AsyncPaginator[Any]) -> None:
        self._portal = portal
        self._paginator = paginator

    def first(self) -> Page[Any]:
        async def one() -> Page[Any]:
            return await self._paginator

        return self._portal.call(one)

    def pages(self) -> Iterator[Page[Any]]:
        agen = self._paginator.pages()
        while True:
            try:
                yield self._portal.call(agen.__anext__)
            except StopAsyncIteration:
                return

    def __iter__(self) -> Iterator[Any]:
        for page in self.pages():
            yield from page.items


class _SyncResource:
    def __init__(self, portal: BlockingPortal, resource: Any) -> None:
        self._portal = portal
        self._resource = resource

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._resource, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if inspect.iscoroutinefunction(attr):
                return self._portal.call(lambda: attr(*args, **kwargs))
            result = attr(*args, **kwargs)
            if isinstance(result, AsyncPaginator):
                return _SyncPaginator(self._portal, result)
            return result

        call.__doc__ = attr.__doc__
        return call


class ServiceClient:
    """Synchronous facade for scripts: `with ServiceClient(url, key) as c: c.properties.get(id)`.
    Lists return iterables of items (`.first()` gives one page)."""

    def __init__(self, base_url: str, credentials: Credentials | str, **kwargs: Any) -> None:
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._async = self._portal.call(lambda: _make(base_url, credentials, kwargs))
        for name in (
            "properties",
            "buildings",
            "meters",
            "readings",
            "users",
            "benchmarks",
            "reports",
            "webhooks",
        ):
            setattr(self, name, _SyncResource(self._portal, getattr(self._async, name)))

    @classmethod
    def from_profile(cls, profile: Profile, **kwargs: Any) -> ServiceClient:
        creds = credentials_for(profile, clock=kwargs.get("clock", time.time))
        return cls(profile.base_url, creds, profile=profile.name, **kwargs)

    @property
    def environment(self) -> Environment | None:
        return self._async.environment

    def close(self) -> None:
        if self._portal_cm is not None:
            self._portal.call(self._async.aclose)
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = None

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _make(base_url: str, credentials: Any, kwargs: dict[str, Any]) -> AsyncServiceClient:
    return AsyncServiceClient(base_url, credentials, **kwargs)
