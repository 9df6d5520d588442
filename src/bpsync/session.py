"""Signing in, once for the command line and the terminal app: check an API key with the
service, keep it (or an OAuth login) in the profile's secret store, save the profile.

The secret store is the one this sign-in asked for (`profile.secret_store`): the OS keyring, or
the unencrypted file only when the user chose it for this sign-in; a missing keyring is an error
that says how to opt in, never a silent fallback. Store and config calls block (keyring backends,
file locks): the app runs them in thread workers. `check_key` talks to the service (async)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

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
    mask_key,
)
from bpsync.client.service import (
    AsyncServiceClient,
    api_key_name,
    client_secret_name,
    oauth_lock_path,
    secret_store_for,
)
from bpsync.config import Profile, save_profile


def require_store(profile: Profile) -> None:
    """Refuse a keyring sign-in on a machine without a keyring, saying how to opt in."""
    if profile.secret_store == "keyring":
        problem = keyring_problem()
        if problem:
            raise E.KeyringUnavailableError(f"No usable OS keyring: {problem}. {UNAVAILABLE_HINT}")


async def check_key(profile: Profile, key: str) -> str:
    """Refuse a key the service does not know before it is stored (a 403 still proves the key:
    it lacks a scope). Returns the key's environment, `test` or `live`."""
    environment = key_environment(key)
    if environment is None:
        raise ValueError("that is not an API key (expected svc_live_… or svc_test_…)")
    async with AsyncServiceClient(profile.base_url, ApiKeyAuth(key), profile=profile.name) as c:
        with contextlib.suppress(E.PermissionDeniedError):
            await c.properties.list(per_page=1)
    return environment


def store_key(profile: Profile, key: str, *, make_default: bool = False) -> str:
    """Keep the key in the profile's secret store and save the profile; returns the masked key."""
    profile = replace(profile, auth_method="api_key")
    require_store(profile)
    secret_store_for(profile).set(api_key_name(profile.name), key)
    save_profile(profile, make_default=make_default)
    return mask_key(key)


def oauth_app(profile: Profile, client_secret: str | None) -> OAuthApp:
    """The profile's OAuth client; a secret typed now wins over a stored one."""
    if not profile.client_id:
        raise ValueError("an OAuth sign-in needs the app's client id (--client-id)")
    secret = client_secret
    if not secret:
        require_store(profile)
        secret = secret_store_for(profile).get(client_secret_name(profile.name))
    return OAuthApp(
        profile.effective_auth_url, profile.client_id, Secret(secret) if secret else None
    )


def store_oauth(
    profile: Profile, app: OAuthApp, tokens: OAuthTokens, *, make_default: bool = False
) -> Profile:
    """Keep the tokens and the client secret, and save the profile (as an OAuth profile)."""
    profile = replace(profile, auth_method="oauth", client_id=app.client_id)
    require_store(profile)
    store = secret_store_for(profile)
    if app.client_secret:
        store.set(client_secret_name(profile.name), app.client_secret.reveal())
    TokenStore(store, profile.name, oauth_lock_path(profile.name)).save(tokens)
    save_profile(profile, make_default=make_default)
    return profile
