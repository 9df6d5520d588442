"""`login`, `logout`, `status`, `profiles`: credentials and profiles (the login steps themselves
live in `bpsync.session`, shared with the terminal app)."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
import time
import webbrowser
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from bpsync.cli.output import (
    ALL_SCOPES,
    EXIT,
    JsonOpt,
    ProfileOpt,
    State,
    _logging,
    _state,
    cell_text,
    exit_code,
    fail,
    print_json,
    stderr,
    stdout,
    table,
)
from bpsync.cli.root import app
from bpsync.client import errors as E
from bpsync.config import (
    ConfigError,
    Profile,
    load_config,
    remove_profile,
    save_config,
)
from bpsync.paths import config_file

if TYPE_CHECKING:  # the client (httpx, pydantic's models) loads when a command runs, not at start
    from bpsync.client.auth import OAuthApp
    from bpsync.client.ratelimit import Bucket
    from bpsync.client.service import AsyncServiceClient

# --- login, logout, status, profiles -------------------------------------------------------------


def _prompt_key() -> str:
    """The key typed at the terminal without echo. Standard input that is not a terminal (a pipe,
    a here-string) is read as a line: getpass would warn that it cannot hide what is not shown."""
    if not sys.stdin.isatty():
        typer.echo("API key: ", err=True, nl=False)
        return sys.stdin.readline().strip()
    return typer.prompt("API key", hide_input=True, err=True).strip()


def _key_from_stdin(state: Any) -> str:
    """`--with-token`: the whole of standard input is the key (one line; blanks around it are
    dropped), as `gh auth login --with-token` reads its token."""
    lines = [line.strip() for line in sys.stdin.read().splitlines() if line.strip()]
    if len(lines) != 1:
        what = "nothing" if not lines else f"{len(lines)} lines"
        fail(
            f"--with-token reads one API key from standard input; it held {what}",
            EXIT.INVALID,
            None,
            state.json,
        )
    return lines[0]


@app.command()
def login(
    ctx: typer.Context,
    api_key: Annotated[bool, typer.Option("--api-key", help="Store an API key (prompted)")] = False,
    oauth: Annotated[bool, typer.Option("--oauth", help="Log in as a user (OAuth + PKCE)")] = False,
    profile: ProfileOpt = None,
    base_url: Annotated[str | None, typer.Option(help="Service base URL")] = None,
    auth_url: Annotated[str | None, typer.Option(help="Authorization server URL")] = None,
    client_id: Annotated[str | None, typer.Option(help="OAuth client id")] = None,
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="OAuth scope to ask for (repeatable)")
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL and paste the redirect (SSH)")
    ] = False,
    secret_store: Annotated[
        str | None,
        typer.Option(help="keyring (default) or file (insecure opt-in for machines without one)"),
    ] = None,
    make_default: Annotated[bool, typer.Option("--default", help="Make it the default")] = False,
    with_token: Annotated[
        bool,
        typer.Option(
            "--with-token",
            help="Read the API key from standard input (e.g. `bpsync login --api-key "
            "--with-token < key.txt`); implies --api-key",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Store credentials for a profile: an API key (prompted without echo, or read from standard
    input with --with-token) or an OAuth login."""
    from bpsync import session  # the client loads when a command runs
    from bpsync.client.auth import key_environment

    state = _state(ctx, profile, as_json)
    _logging(state.verbose)
    if with_token and oauth:
        fail(
            "--with-token reads an API key: it does not go with --oauth",
            EXIT.USAGE,
            None,
            state.json,
        )
    api_key = api_key or with_token
    if api_key == oauth:
        fail("choose one of --api-key or --oauth", EXIT.USAGE, None, state.json)
    try:
        current = state.profile(allow_new=True)
        changes: dict[str, Any] = {"auth_method": "oauth" if oauth else "api_key"}
        for field, value in (
            ("base_url", base_url),
            ("auth_url", auth_url),
            ("client_id", client_id),
        ):
            if value is not None:
                changes[field] = value
        # The insecure file store only when this login asks for it (flag or environment), never
        # because an earlier login of the profile (or the demo) chose it.
        asked = secret_store or ("secret_store" in current.overridden and current.secret_store)
        changes["secret_store"] = asked or "keyring"
        new_profile = replace(current, **changes)
        session.require_store(new_profile)
        if api_key:
            key = _key_from_stdin(state) if with_token else _prompt_key()
            if key_environment(key) is None:
                fail(
                    "that is not an API key (expected svc_live_… or svc_test_…)",
                    EXIT.INVALID,
                    None,
                    state.json,
                )
            env = asyncio.run(session.check_key(new_profile, key))
            masked = session.store_key(new_profile, key, make_default=make_default)
            _login_done(state, new_profile, {"environment": env, "key": masked})
            return
        if not new_profile.client_id:
            fail("--client-id is needed for an OAuth login", EXIT.USAGE, None, state.json)
        secret = os.environ.get("BPSYNC_CLIENT_SECRET") or None
        if not secret:
            try:
                stored = session.oauth_app(new_profile, None)
                secret = stored.client_secret.reveal() if stored.client_secret else None
            except E.BPSyncError:
                secret = None
        if not secret:
            secret = typer.prompt("OAuth client secret", hide_input=True, err=True).strip()
        oauth_app = session.oauth_app(new_profile, secret)
        tokens = asyncio.run(_oauth_login(oauth_app, list(scope or ALL_SCOPES), no_browser))
        new_profile = session.store_oauth(new_profile, oauth_app, tokens, make_default=make_default)
        expires = dt.datetime.fromtimestamp(tokens.expires_at, dt.UTC)
        _login_done(state, new_profile, {"scopes": tokens.scope, "expires_at": expires})
    except typer.Exit:
        raise
    except (E.BPSyncError, ConfigError, ValueError) as exc:
        fail(str(exc), exit_code(exc), exc, state.json)


async def _oauth_login(app_: OAuthApp, scopes: list[str], no_browser: bool) -> Any:
    from bpsync.client.auth import login_with_browser

    err = stderr()
    if no_browser:

        def show_url(url: str) -> None:
            err.print("Open this URL in a browser, sign in, then paste the address you land on:")
            err.print(url, soft_wrap=True)

        return await login_with_browser(
            app_,
            scopes,
            open_url=show_url,
            read_pasted=lambda: typer.prompt("Redirect URL", err=True),
        )

    def open_url(url: str) -> None:
        err.print("Opening the browser to sign in; waiting for the redirect…")
        if not webbrowser.open(url):
            err.print(f"Could not open a browser; open this URL:\n{url}", soft_wrap=True)

    return await login_with_browser(app_, scopes, open_url=open_url)


def _login_done(state: State, profile: Profile, info: dict[str, Any]) -> None:
    summary = {
        "profile": profile.name,
        "base_url": profile.base_url,
        "auth_method": profile.auth_method,
        "secret_store": profile.secret_store,
        **info,
    }
    if state.json:
        print_json(summary)
        return
    where = info.get("environment") or "OAuth"
    stdout().print(
        f"Logged in: profile [bold]{profile.name}[/bold] ({where}) at {profile.base_url}"
    )
    if profile.secret_store == "file":
        stderr().print("[yellow]warning:[/yellow] secrets are in a plain file (insecure opt-in)")


@app.command()
def logout(ctx: typer.Context, profile: ProfileOpt = None, as_json: JsonOpt = False) -> None:
    """Forget the profile's stored secrets (API key, OAuth tokens, client secret)."""
    from bpsync.client.service import api_key_name, client_secret_name, secret_store_for

    state = _state(ctx, profile, as_json)
    try:
        prof = state.profile()
        store = secret_store_for(prof)
        removed = [
            name
            for name in (
                api_key_name(prof.name),
                f"{prof.name}:oauth",
                client_secret_name(prof.name),
            )
            if store.delete(name)
        ]
    except (E.BPSyncError, ConfigError) as exc:
        fail(str(exc), exit_code(exc), exc, state.json)
    if state.json:
        print_json({"profile": prof.name, "removed": len(removed)})
    else:
        stdout().print(f"Logged out of profile {prof.name} ({len(removed)} secret(s) removed).")


@app.command()
def status(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    offline: Annotated[bool, typer.Option(help="Do not contact the service")] = False,
) -> None:
    """Profile, environment, auth method, token expiry and rate-limit state."""
    from bpsync.client.auth import ApiKeyAuth, OAuthAuth
    from bpsync.client.service import AsyncServiceClient, credentials_for

    state = _state(ctx, profile, as_json)
    _logging(state.verbose)
    try:
        prof = state.profile()
    except ConfigError as exc:
        fail(str(exc), EXIT.CONFIG, exc, state.json)
    info: dict[str, Any] = {
        "profile": prof.name,
        "config_file": str(config_file()),
        "base_url": prof.base_url,
        "auth_method": prof.auth_method,
        "overridden_by_env": list(prof.overridden),
        "secret_store": prof.secret_store,
        "secret_store_insecure": prof.secret_store == "file",
    }
    code = EXIT.OK
    try:
        creds = credentials_for(prof)
    except (E.BPSyncError, ConfigError) as exc:
        info["credentials"] = None
        info["problem"] = str(exc)
        code = exit_code(exc)
        creds = None
    if isinstance(creds, ApiKeyAuth):
        info["credentials"] = (
            "BPSYNC_API_KEY" if os.environ.get("BPSYNC_API_KEY") else prof.secret_store
        )
        info["key"] = creds.masked
        info["environment"] = creds.environment
    elif isinstance(creds, OAuthAuth):
        tokens = creds.status()
        info["auth_url"] = prof.effective_auth_url
        info["client_id"] = prof.client_id
        info["environment"] = "set by the OAuth app"
        if tokens is not None:
            info["token_expires_at"] = dt.datetime.fromtimestamp(tokens.expires_at, dt.UTC)
            info["token_expired"] = tokens.needs_refresh(time.time(), 0)
            info["scopes"] = tokens.scope.split()
    if creds is not None:
        client = AsyncServiceClient(prof.base_url, creds, profile=prof.name)
        if not offline:
            info["service"] = asyncio.run(_probe(client))
            if info["service"] != "reachable":
                code = EXIT.CONNECTION if "unreachable" in info["service"] else EXIT.AUTH
        assert client.limiter is not None
        info["rate_limits"] = {k: _bucket_view(b) for k, b in client.limiter.snapshot().items()}
    from bpsync.watch.summary import watch_status_lines  # the folder watcher, if one runs

    info.update(watch_status_lines(prof.name))
    if state.json:
        print_json(info)
    else:
        t = Table(show_header=False, box=None)
        t.add_column(style="bold")
        t.add_column(overflow="fold")
        for key, value in info.items():
            if key == "rate_limits":
                value = (
                    "; ".join(
                        f"{k}: {v['remaining']}/{v['limit']} per {v['window']:.0f} s"
                        for k, v in value.items()
                    )
                    or "not learned yet"
                )
            if key == "secret_store" and value == "file":
                value = "file (INSECURE: plain 0600 file, opt-in)"
            if key == "environment" and value == "production":
                value = "PRODUCTION"
            t.add_row(key, cell_text(value))
        stdout().print(t)
    raise typer.Exit(int(code))


def _bucket_view(bucket: Bucket) -> dict[str, Any]:
    return {
        "limit": bucket.limit,
        "remaining": bucket.remaining,
        "window": bucket.window,
        "resets_at": dt.datetime.fromtimestamp(bucket.reset, dt.UTC),
    }


async def _probe(client: AsyncServiceClient) -> str:
    async with client:
        try:
            await client.properties.list(per_page=1)
        except E.PermissionDeniedError:
            return "reachable"
        except (E.AuthenticationError, E.LoginRequiredError, E.OAuthError) as exc:
            return f"credentials refused ({type(exc).__name__})"
        except E.APIConnectionError:
            return "unreachable"
    return "reachable"


profiles_app = typer.Typer(help="List and manage profiles.", invoke_without_command=True)
app.add_typer(profiles_app, name="profiles")


@profiles_app.callback()
def profiles(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the profiles (the default is marked)."""
    if ctx.invoked_subcommand is not None:
        return
    state = _state(ctx, None, as_json)
    try:
        config = load_config()
    except ConfigError as exc:
        fail(str(exc), EXIT.CONFIG, exc, state.json)
    rows = [
        {"name": name, "default": name == config.default_profile, **p.to_toml_table()}
        for name, p in sorted((config.profiles or {}).items())
    ]
    if state.json:
        print_json(rows)
    elif not rows:
        stdout().print("No profiles yet: `bpsync login --api-key` creates one.")
    else:
        table(
            rows,
            [
                ("", "default"),
                ("name", "name"),
                ("base URL", "base_url"),
                ("auth", "auth_method"),
                ("secrets", "secret_store"),
            ],
            "Profiles",
        )


@profiles_app.command("use")
def profiles_use(name: str) -> None:
    """Make NAME the default profile."""
    config = load_config()
    if name not in (config.profiles or {}):
        fail(f"no profile named {name!r}", EXIT.NOT_FOUND)
    config.default_profile = name
    save_config(config)
    stdout().print(f"Default profile: {name}")


@profiles_app.command("remove")
def profiles_remove(name: str) -> None:
    """Remove profile NAME from the config file (run `bpsync logout -p NAME` first)."""
    if not remove_profile(name):
        fail(f"no profile named {name!r}", EXIT.NOT_FOUND)
    stdout().print(f"Removed profile {name}")
