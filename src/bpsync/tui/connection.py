"""The seam between the screens and the client: which profile, which client, how to sign in.

Everything that touches the secret store or the config file is blocking (keyring backends, file
locks) and is called from thread workers; everything that talks to the service is async."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bpsync import session
from bpsync.client import errors as E
from bpsync.client.auth import (
    OAuthApp,
    OAuthTokens,
    login_with_browser,
)
from bpsync.client.service import (
    AsyncServiceClient,
)
from bpsync.config import (
    Config,
    Profile,
    load_config,
    resolve_profile,
)
from bpsync.vocab import SCOPES

# Scopes the app asks for on an OAuth sign-in: everything it can show or do.
OAUTH_SCOPES = [s for s in SCOPES if not s.startswith(("users:", "webhooks:"))]


@dataclass
class Connection:
    """A signed-in profile and its client (closed when the app leaves the profile)."""

    profile: Profile
    client: AsyncServiceClient

    @property
    def environment(self) -> str | None:
        return self.client.environment

    @property
    def name(self) -> str:
        return self.profile.name


def profiles() -> tuple[Config, list[str]]:
    config = load_config()
    return config, config.names


def choose(name: str | None, *, allow_new: bool = True, pinned: Profile | None = None) -> Profile:
    """The named profile from the config file, or `pinned` (a run-only profile) by its name."""
    if pinned is not None and name in (None, pinned.name):
        return pinned
    return resolve_profile(name, allow_new=allow_new)


def connect(profile: Profile, **client_kwargs: Any) -> Connection:
    """Build the profile's client from its stored credentials (blocking: reads the secret store).
    Raises LoginRequiredError when nothing is stored."""
    return Connection(profile, AsyncServiceClient.from_profile(profile, **client_kwargs))


async def verify(connection: Connection) -> bool:
    """One cheap request proves the credentials; a 403 still proves them (missing scope)."""
    with contextlib.suppress(E.PermissionDeniedError):
        await connection.client.properties.list(per_page=1)
    return True


# Signing in is shared with the command line (bpsync.session); the screens call these names.
check_key = session.check_key
store_key = session.store_key
oauth_app = session.oauth_app


async def oauth_sign_in(
    app: OAuthApp, open_url: Callable[[str], Any], *, timeout: float = 300.0
) -> OAuthTokens:
    """Authorization Code + PKCE through the browser (the client's flow, unchanged). Cancelling
    the worker that awaits this closes the loopback listener."""
    return await login_with_browser(app, OAUTH_SCOPES, open_url=open_url, timeout=timeout)


def store_oauth(profile: Profile, app: OAuthApp, tokens: OAuthTokens) -> str:
    """Save the tokens, the client secret and the profile (blocking); returns the profile name."""
    return session.store_oauth(profile, app, tokens).name
