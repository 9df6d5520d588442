"""The seam between the screens and the client: which profile, which client, how to sign in.

Everything that touches the secret store or the config file is blocking (keyring backends, file
locks) and is called from thread workers; everything that talks to the service is async."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bpsync.client import errors as E
from bpsync.client.auth import (
    UNAVAILABLE_HINT,
    ApiKeyAuth,
    OAuthApp,
    OAuthTokens,
    Secret,
    TokenStore,
    key_environment,
    keyring_problem,
    login_with_browser,
    mask_key,
)
from bpsync.client.service import (
    AsyncServiceClient,
    api_key_name,
    client_secret_name,
    secret_store_for,
)
from bpsync.config import (
    Config,
    Profile,
    load_config,
    resolve_profile,
    save_profile,
)
from bpsync.paths import state_dir

# Scopes the app asks for on an OAuth sign-in: everything it can show or do.
OAUTH_SCOPES = [
    "properties:read",
    "properties:write",
    "meters:read",
    "meters:write",
    "benchmarks:read",
    "reports:read",
    "reports:write",
]


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


def _check_store(profile: Profile) -> None:
    if profile.secret_store == "keyring":
        problem = keyring_problem()
        if problem:
            raise E.KeyringUnavailableError(f"No usable OS keyring: {problem}. {UNAVAILABLE_HINT}")


async def check_key(profile: Profile, key: str) -> str:
    """Refuse a key the service does not know before storing it; returns its environment."""
    environment = key_environment(key)
    if environment is None:
        raise ValueError("That is not an API key (expected svc_live_… or svc_test_…).")
    async with AsyncServiceClient(profile.base_url, ApiKeyAuth(key), profile=profile.name) as c:
        with contextlib.suppress(E.PermissionDeniedError):
            await c.properties.list(per_page=1)
    return environment


def _save(profile: Profile, *, make_default: bool = False) -> None:
    """save_profile (which keeps the user's other tables, such as [keymap])."""
    save_profile(profile, make_default=make_default)


def store_key(profile: Profile, key: str, *, make_default: bool = False) -> str:
    """Keep the key in the profile's secret store and save the profile (blocking). Returns the
    masked key for display."""
    profile = replace(profile, auth_method="api_key")
    _check_store(profile)
    secret_store_for(profile).set(api_key_name(profile.name), key)
    _save(profile, make_default=make_default)
    return mask_key(key)


def oauth_app(profile: Profile, client_secret: str | None) -> OAuthApp:
    """The OAuth client of the profile; the secret typed now wins over a stored one (blocking)."""
    if not profile.client_id:
        raise ValueError("An OAuth sign-in needs the app's client id.")
    secret = client_secret
    if not secret:
        _check_store(profile)
        secret = secret_store_for(profile).get(client_secret_name(profile.name))
    return OAuthApp(
        profile.effective_auth_url, profile.client_id, Secret(secret) if secret else None
    )


async def oauth_sign_in(
    app: OAuthApp, open_url: Callable[[str], Any], *, timeout: float = 300.0
) -> OAuthTokens:
    """Authorization Code + PKCE through the browser (the client's flow, unchanged). Cancelling
    the worker that awaits this closes the loopback listener."""
    return await login_with_browser(app, OAUTH_SCOPES, open_url=open_url, timeout=timeout)


def store_oauth(profile: Profile, app: OAuthApp, tokens: OAuthTokens) -> str:
    """Save the tokens, the client secret and the profile (blocking); returns the profile name."""
    profile = replace(profile, auth_method="oauth", client_id=app.client_id)
    _check_store(profile)
    store = secret_store_for(profile)
    if app.client_secret:
        store.set(client_secret_name(profile.name), app.client_secret.reveal())
    lock = state_dir() / "locks" / f"{profile.name}.oauth.lock"
    TokenStore(store, profile.name, lock).save(tokens)
    _save(profile)
    return profile.name
