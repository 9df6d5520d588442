"""`bpsync`: the command line of the tool.

Human tables by default, `--json` for scripts, and exit codes scripts can rely on (EXIT below;
docs/client.md). Every command that talks to the service first says which environment it is
talking to (production or sandbox) on stderr, so the answer on stdout stays clean."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import datetime as dt
import json
import logging
import os
import sys
import time
import webbrowser
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel
from pydantic import ValidationError as ModelValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
from rich.table import Table

from bpsync import __version__
from bpsync.client import errors as E
from bpsync.client.auth import (
    UNAVAILABLE_HINT,
    ApiKeyAuth,
    OAuthApp,
    OAuthAuth,
    Secret,
    TokenStore,
    key_environment,
    keyring_problem,
    login_with_browser,
    mask_key,
)
from bpsync.client.pagination import AsyncPaginator, Page
from bpsync.client.ratelimit import Bucket
from bpsync.client.reports import ReportFailedError
from bpsync.client.service import (
    AsyncServiceClient,
    api_key_name,
    client_secret_name,
    credentials_for,
    secret_store_for,
)
from bpsync.config import (
    ConfigError,
    Profile,
    load_config,
    remove_profile,
    resolve_profile,
    save_config,
    save_profile,
)
from bpsync.paths import config_file, state_dir

T = TypeVar("T")

ALL_SCOPES = (
    "properties:read",
    "properties:write",
    "meters:read",
    "meters:write",
    "benchmarks:read",
    "reports:read",
    "reports:write",
    "users:read",
    "users:write",
    "webhooks:manage",
)


class EXIT(IntEnum):
    """Exit codes (stable; documented in docs/client.md)."""

    OK = 0
    ERROR = 1  # unexpected failure
    USAGE = 2  # bad command line (click's own code)
    AUTH = 3  # not logged in, key or token refused
    PERMISSION = 4  # missing scope or role, locked building
    NOT_FOUND = 5
    INVALID = 6  # the service (or the client) refused the input
    CONFLICT = 7  # state conflict, overlapping reading, duplicate
    RATE_LIMITED = 8
    SERVER = 9  # 5xx
    CONNECTION = 10  # no answer: refused, DNS, timeout
    AMBIGUOUS = 11  # a write whose outcome is unknown: check before retrying
    CONFIG = 12  # configuration or secret store problem (no keyring)
    PARTIAL = 13  # a batch was only partly accepted
    REPORT_FAILED = 14  # report generation failed or did not finish in time
    BUSY = 15  # another import or watcher of this service and credential is running: try later


def exit_code(exc: BaseException) -> EXIT:
    table: list[tuple[type[BaseException], EXIT]] = [
        (E.AmbiguousWriteError, EXIT.AMBIGUOUS),
        (E.AuthenticationError, EXIT.AUTH),
        (E.LoginRequiredError, EXIT.AUTH),
        (E.OAuthError, EXIT.AUTH),
        (E.PermissionDeniedError, EXIT.PERMISSION),
        (E.LockedError, EXIT.PERMISSION),
        (E.NotFoundError, EXIT.NOT_FOUND),
        (E.ValidationError, EXIT.INVALID),
        (E.BadRequestError, EXIT.INVALID),
        (E.PayloadTooLargeError, EXIT.INVALID),
        (ModelValidationError, EXIT.INVALID),
        (ValueError, EXIT.INVALID),
        (E.ConflictError, EXIT.CONFLICT),
        (E.RateLimitError, EXIT.RATE_LIMITED),
        (E.ServerError, EXIT.SERVER),
        (E.APIConnectionError, EXIT.CONNECTION),
        (E.CredentialsError, EXIT.CONFIG),
        (ConfigError, EXIT.CONFIG),
        (ReportFailedError, EXIT.REPORT_FAILED),
        (TimeoutError, EXIT.REPORT_FAILED),
    ]
    for cls, code in table:
        if isinstance(exc, cls):
            return code
    return EXIT.ERROR


# --- context and output --------------------------------------------------------------------------


@dataclass
class State:
    profile_name: str | None = None
    json: bool = False
    verbose: bool = False

    def profile(self, allow_new: bool = False) -> Profile:
        return resolve_profile(self.profile_name, allow_new=allow_new)


ProfileOpt = Annotated[
    str | None, typer.Option("--profile", "-p", help="Profile to use (env: BPSYNC_PROFILE)")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts")]
PageOpt = Annotated[int, typer.Option("--page", min=1, help="Page number")]
PerPageOpt = Annotated[int, typer.Option("--per-page", min=1, max=200, help="Items per page")]
AllOpt = Annotated[bool, typer.Option("--all", help="Fetch every page")]


def _state(ctx: typer.Context, profile: str | None = None, as_json: bool = False) -> State:
    state: State = ctx.ensure_object(State)
    if profile:
        state.profile_name = profile
    if as_json:
        state.json = True
    return state


# Width for output that goes to a pipe or file, where there is no terminal to fit: long enough that
# tables keep one line per row (rich would otherwise assume 80 columns).
PIPE_WIDTH = 200


def stdout() -> Console:
    console = Console(soft_wrap=True, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(soft_wrap=True, highlight=False, width=PIPE_WIDTH)
    return console


def stderr() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
        # A service-generated webhook secret is the one secret the service returns; it is never
        # printed (docs/client.md explains how to set your own).
        if "secret" in data:
            data["secret"] = "********" if data["secret"] else None
        return data
    if isinstance(value, Page):
        return {"data": to_jsonable(value.items), "meta": value.meta.model_dump()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Secret):
        return "********"
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dict):
        if "id" in value:  # a reference: {id, name} or {id, type, status}
            label = value.get("name") or value.get("type")
            return f"{label} ({value['id']})" if label else str(value["id"])
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    if hasattr(value, "value"):
        return str(value.value)
    return str(value)


def _dig(item: Any, path: str) -> Any:
    for part in path.split("."):
        item = getattr(item, part, None) if not isinstance(item, dict) else item.get(part)
    return item


def table(
    rows: Iterable[Any], columns: Sequence[tuple[str, str]], title: str | None = None
) -> None:
    t = Table(title=title, show_lines=False, header_style="bold")
    for header, path in columns:
        # Ids are copied into the next command: keep them whole; everything else may wrap.
        if path == "id" or path.endswith("_id"):
            t.add_column(header, no_wrap=True, min_width=28)
        else:
            t.add_column(header, overflow="fold")
    for row in rows:
        t.add_row(*(_cell(_dig(row, path)) for _, path in columns))
    stdout().print(t)


def details(item: Any, fields: Sequence[str] | None = None, title: str | None = None) -> None:
    data = to_jsonable(item)
    t = Table(show_header=False, title=title, box=None)
    t.add_column("field", style="bold")
    t.add_column("value", overflow="fold")
    for key in fields or list(data):
        t.add_row(key, _cell(data.get(key)))
    stdout().print(t)


def fail(
    message: str, code: EXIT, exc: BaseException | None = None, as_json: bool = False
) -> NoReturn:
    if as_json:
        body: dict[str, Any] = {
            "code": code.name.lower(),
            "message": message,
            "exit_code": int(code),
        }
        if isinstance(exc, E.APIStatusError):
            body.update({"status": exc.status, "service_code": exc.code, **to_jsonable(exc.extra)})
        sys.stderr.write(json.dumps({"error": body}) + "\n")
    else:
        # The message quotes files, templates and the service: escape it ("[fixed]" must show).
        stderr().print(f"[red]error:[/red] {escape(message)}", markup=True)
        if isinstance(exc, E.ValidationError):
            for d in exc.details:
                stderr().print(f"  - {d.get('field')}: {d.get('message')}", markup=False)
    raise typer.Exit(int(code))


def banner(client: AsyncServiceClient, profile: Profile) -> None:
    env = client.environment
    if env == "production":
        label = "[bold red]PRODUCTION[/bold red]"
    elif env == "sandbox":
        label = "[green]sandbox[/green]"
    else:
        label = "[yellow]environment set by the OAuth app[/yellow]"
    stderr().print(
        f"{label} · {escape(str(client.base.base_url))} · profile {escape(profile.name)}",
        markup=True,
    )


def run(ctx: typer.Context, action: Callable[[AsyncServiceClient], Awaitable[T]]) -> T:
    """Build the profile's client, say where it points, run `action`, map errors to exit codes."""
    state: State = ctx.ensure_object(State)
    _logging(state.verbose)
    try:
        profile = state.profile()
        client = AsyncServiceClient.from_profile(profile)
    except (E.BPSyncError, ConfigError) as exc:
        fail(str(exc), exit_code(exc), exc, state.json)
    banner(client, profile)

    async def main() -> T:
        async with client:
            return await action(client)

    try:
        return asyncio.run(main())
    except typer.Exit:
        raise
    except (E.BPSyncError, ConfigError, ModelValidationError, ValueError, TimeoutError) as exc:
        if isinstance(exc, E.RateLimitError) and exc.retry_after:
            fail(f"{exc} (retry after {exc.retry_after:.0f} s)", EXIT.RATE_LIMITED, exc, state.json)
        fail(for_people(exc, profile, client), exit_code(exc), exc, state.json)
    except KeyboardInterrupt:
        fail("interrupted", EXIT.ERROR, None, state.json)


def for_people(exc: BaseException, profile: Profile, client: AsyncServiceClient) -> str:
    """The error as a sentence that says what to do: a refused key names the login command, a
    model mismatch never shows pydantic's dump."""
    if isinstance(exc, E.AuthenticationError):
        from_env = "BPSYNC_API_KEY" in os.environ
        again = (
            "check BPSYNC_API_KEY (it is set in the environment and wins over the profile)"
            if from_env
            else f"log in again with `bpsync login --api-key -p {profile.name}` (or --oauth)"
        )
        what = "API key" if profile.auth_method == "api_key" or from_env else "sign-in"
        return f"the {what} was refused by {client.base.base_url} ({exc.message}); {again}"
    if isinstance(exc, ModelValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        field = ".".join(str(x) for x in first.get("loc", ())) or "?"
        return (
            f"the service's answer did not have the expected shape ({exc.title}, field {field}: "
            f"{first.get('msg', 'invalid')}); is {client.base.base_url} a bpservice-compatible "
            "service of a supported version?"
        )
    return str(exc)


def _logging(verbose: bool) -> None:
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("httpcore").setLevel(logging.INFO)


async def show_list(
    state: State,
    paginator: AsyncPaginator[Any],
    fetch_all: bool,
    columns: Sequence[tuple[str, str]],
    title: str,
) -> None:
    if fetch_all:
        items = await paginator.to_list()
        if state.json:
            print_json({"data": items, "meta": None})
        else:
            table(items, columns, f"{title} ({len(items)})")
        return
    page = await paginator
    if state.json:
        print_json(page)
        return
    table(
        page.items,
        columns,
        f"{title}: page {page.meta.page} of {max(page.meta.total_pages, 1)}"
        f" ({page.meta.total} in all)",
    )


def show(state: State, item: Any, fields: Sequence[str] | None = None) -> None:
    if state.json:
        print_json(item)
    else:
        details(item, fields)


def _parse_date(value: str, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{name} must be a date YYYY-MM-DD, not {value!r}") from None


# --- the app -------------------------------------------------------------------------------------

app = typer.Typer(
    help="Sync utility data with a building-performance service. With no command, opens the "
    "terminal app.",
    invoke_without_command=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _main(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log requests to stderr")
    ] = False,
) -> None:
    """bpsync: properties, meters, readings, benchmarks and reports from the command line.

    Credentials: `bpsync login --api-key` (kept in the OS keyring) or BPSYNC_API_KEY.
    """
    state = _state(ctx, profile, as_json)
    state.verbose = verbose
    if ctx.invoked_subcommand is None:
        _open_tui(state.profile_name)


def _open_tui(profile: str | None) -> None:
    from bpsync.tui.command import run_tui  # Textual loads only when the app is wanted

    raise typer.Exit(run_tui(profile))


@app.command()
def tui(ctx: typer.Context, profile: ProfileOpt = None) -> None:
    """Open the terminal app: portfolio, benchmarks, reports, import wizard, sync status."""
    _open_tui(profile or _state(ctx).profile_name)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(f"bpsync {__version__}")


# --- login, logout, status, profiles -------------------------------------------------------------


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
    as_json: JsonOpt = False,
) -> None:
    """Store credentials for a profile: an API key (prompted without echo) or an OAuth login."""
    state = _state(ctx, profile, as_json)
    _logging(state.verbose)
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
        store = secret_store_for(new_profile)
        if new_profile.secret_store == "keyring":
            problem = keyring_problem()
            if problem:
                raise E.KeyringUnavailableError(
                    f"No usable OS keyring: {problem}. {UNAVAILABLE_HINT}"
                )
        if api_key:
            key = typer.prompt("API key", hide_input=True, err=True).strip()
            if key_environment(key) is None:
                fail(
                    "that is not an API key (expected svc_live_… or svc_test_…)",
                    EXIT.INVALID,
                    None,
                    state.json,
                )
            asyncio.run(_check_key(new_profile, key))
            store.set(api_key_name(new_profile.name), key)
            save_profile(new_profile, make_default=make_default)
            env = key_environment(key)
            _login_done(state, new_profile, {"environment": env, "key": mask_key(key)})
            return
        if not new_profile.client_id:
            fail("--client-id is needed for an OAuth login", EXIT.USAGE, None, state.json)
        secret = store.get(client_secret_name(new_profile.name))
        secret = os.environ.get("BPSYNC_CLIENT_SECRET") or secret
        if not secret:
            secret = typer.prompt("OAuth client secret", hide_input=True, err=True).strip()
        oauth_app = OAuthApp(new_profile.effective_auth_url, new_profile.client_id, Secret(secret))
        tokens = asyncio.run(_oauth_login(oauth_app, list(scope or ALL_SCOPES), no_browser))
        store.set(client_secret_name(new_profile.name), secret)
        TokenStore(store, new_profile.name, _oauth_lock(new_profile.name)).save(tokens)
        save_profile(new_profile, make_default=make_default)
        expires = dt.datetime.fromtimestamp(tokens.expires_at, dt.UTC)
        _login_done(state, new_profile, {"scopes": tokens.scope, "expires_at": expires})
    except typer.Exit:
        raise
    except (E.BPSyncError, ConfigError, ValueError) as exc:
        fail(str(exc), exit_code(exc), exc, state.json)


def _oauth_lock(profile: str) -> Path:
    return state_dir() / "locks" / f"{profile}.oauth.lock"


async def _check_key(profile: Profile, key: str) -> None:
    """Refuse a key the service does not know (a 403 still proves the key is valid)."""
    async with AsyncServiceClient(profile.base_url, ApiKeyAuth(key), profile=profile.name) as c:
        with contextlib.suppress(E.PermissionDeniedError):
            await c.properties.list(per_page=1)


async def _oauth_login(app_: OAuthApp, scopes: list[str], no_browser: bool) -> Any:
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
            t.add_row(key, _cell(value))
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


# --- properties ----------------------------------------------------------------------------------

properties_app = typer.Typer(
    help="Properties: list, get, create, update, archive.", no_args_is_help=True
)
app.add_typer(properties_app, name="properties")
PROPERTY_COLUMNS = [
    ("id", "id"),
    ("name", "name"),
    ("type", "type"),
    ("country", "address.country"),
    ("status", "status"),
    ("buildings", "building_count"),
    ("GFA m²", "total_gfa_m2"),
]


@properties_app.command("list")
def properties_list(
    ctx: typer.Context,
    type_: Annotated[str | None, typer.Option("--type", help="Property type")] = None,
    country: Annotated[str | None, typer.Option(help="ISO 3166-1 alpha-2")] = None,
    status_: Annotated[str | None, typer.Option("--status", help="active or archived")] = None,
    sort: Annotated[str | None, typer.Option(help="name, created_at, updated_at; - = desc")] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List properties."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.properties.list(
                type=type_, country=country, status=status_, sort=sort, page=page, per_page=per_page
            ),
            fetch_all,
            PROPERTY_COLUMNS,
            "Properties",
        ),
    )


@properties_app.command("get")
def properties_get(ctx: typer.Context, property_id: str, as_json: JsonOpt = False) -> None:
    """Show one property with its buildings."""
    state = _state(ctx, None, as_json)
    item = run(ctx, lambda c: c.properties.get(property_id))
    show(state, item)


@properties_app.command("create")
def properties_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Property name")],
    street: Annotated[str, typer.Option()],
    city: Annotated[str, typer.Option()],
    country: Annotated[str, typer.Option(help="ISO 3166-1 alpha-2")],
    type_: Annotated[str, typer.Option("--type", help="office, retail, ...")],
    state_: Annotated[str | None, typer.Option("--state")] = None,
    postal_code: Annotated[str | None, typer.Option()] = None,
    internal_ref: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a property."""
    state = _state(ctx, None, as_json)
    address = {
        "street": street,
        "city": city,
        "country": country,
        "state": state_,
        "postal_code": postal_code,
    }
    item = run(
        ctx,
        lambda c: c.properties.create(
            name=name,
            address={k: v for k, v in address.items() if v is not None},
            type=type_,
            internal_ref=internal_ref,
        ),
    )
    show(state, item)


@properties_app.command("update")
def properties_update(
    ctx: typer.Context,
    property_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    type_: Annotated[str | None, typer.Option("--type")] = None,
    internal_ref: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a property's name, type or internal reference."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v
        for k, v in {"name": name, "type": type_, "internal_ref": internal_ref}.items()
        if v is not None
    }
    if not fields:
        fail("nothing to change: give --name, --type or --internal-ref", EXIT.USAGE)
    item = run(ctx, lambda c: c.properties.update(property_id, **fields))
    show(state, item)


@properties_app.command("archive")
def properties_archive(ctx: typer.Context, property_id: str, as_json: JsonOpt = False) -> None:
    """Archive a property (its data is kept)."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.properties.archive(property_id)))


# --- buildings -----------------------------------------------------------------------------------

buildings_app = typer.Typer(
    help="Buildings of a property, and reading locks.", no_args_is_help=True
)
app.add_typer(buildings_app, name="buildings")
BUILDING_COLUMNS = [
    ("id", "id"),
    ("name", "name"),
    ("use", "primary_use_type"),
    ("GFA m²", "gfa_m2"),
    ("built", "year_built"),
    ("floors", "floors"),
    ("grade", "data_quality_grade"),
]


@buildings_app.command("list")
def buildings_list(
    ctx: typer.Context,
    property_id: str,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the buildings of a property."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.buildings.list(property_id, page=page, per_page=per_page),
            fetch_all,
            BUILDING_COLUMNS,
            "Buildings",
        ),
    )


@buildings_app.command("get")
def buildings_get(
    ctx: typer.Context, property_id: str, building_id: str, as_json: JsonOpt = False
) -> None:
    """Show one building with its use types and meters."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.buildings.get(property_id, building_id)))


@buildings_app.command("create")
def buildings_create(
    ctx: typer.Context,
    property_id: str,
    name: Annotated[str, typer.Option()],
    use: Annotated[str, typer.Option(help="Primary use type")],
    gfa: Annotated[float, typer.Option(help="Gross floor area, m²")],
    year_built: Annotated[int, typer.Option()],
    floors: Annotated[int, typer.Option()],
    occupancy: Annotated[float | None, typer.Option(help="Occupancy %")] = None,
    hours: Annotated[float | None, typer.Option(help="Operating hours per week")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a building to a property."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(
            ctx,
            lambda c: c.buildings.create(
                property_id,
                name=name,
                primary_use_type=use,
                gfa_m2=gfa,
                year_built=year_built,
                floors=floors,
                occupancy_pct=occupancy,
                operating_hours_week=hours,
            ),
        ),
    )


@buildings_app.command("update")
def buildings_update(
    ctx: typer.Context,
    property_id: str,
    building_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    gfa: Annotated[float | None, typer.Option(help="Gross floor area, m²")] = None,
    occupancy: Annotated[float | None, typer.Option(help="Occupancy %")] = None,
    hours: Annotated[float | None, typer.Option(help="Operating hours per week")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a building's details."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v
        for k, v in {
            "name": name,
            "gfa_m2": gfa,
            "occupancy_pct": occupancy,
            "operating_hours_week": hours,
        }.items()
        if v is not None
    }
    if not fields:
        fail("nothing to change", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.buildings.update(property_id, building_id, **fields)))


@buildings_app.command("lock")
def buildings_lock(
    ctx: typer.Context,
    building_id: str,
    through: Annotated[str | None, typer.Option(help="Lock readings ending on or before")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the building's reading lock, or move it forward with --through DATE."""
    state = _state(ctx, None, as_json)
    if through is None:
        show(state, run(ctx, lambda c: c.buildings.get_lock(building_id)))
    else:
        day = _parse_date(through, "--through")
        show(state, run(ctx, lambda c: c.buildings.lock(building_id, day)))


# --- meters and readings -------------------------------------------------------------------------

meters_app = typer.Typer(help="Meters of a building.", no_args_is_help=True)
app.add_typer(meters_app, name="meters")
METER_COLUMNS = [
    ("id", "id"),
    ("type", "type"),
    ("name", "name"),
    ("unit", "unit"),
    ("source", "source"),
    ("latest reading", "latest_reading_date"),
]


@meters_app.command("list")
def meters_list(
    ctx: typer.Context,
    building_id: str,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List a building's meters."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.meters.list(building_id, page=page, per_page=per_page),
            fetch_all,
            METER_COLUMNS,
            "Meters",
        ),
    )


@meters_app.command("get")
def meters_get(
    ctx: typer.Context, building_id: str, meter_id: str, as_json: JsonOpt = False
) -> None:
    """Show one meter."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.meters.get(building_id, meter_id)))


@meters_app.command("create")
def meters_create(
    ctx: typer.Context,
    building_id: str,
    type_: Annotated[str, typer.Option("--type", help="electricity, natural_gas, water, ...")],
    unit: Annotated[str, typer.Option(help="kWh, therms, m3, litres, ...")],
    name: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a meter to a building."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.meters.create(building_id, type=type_, unit=unit, name=name)))


readings_app = typer.Typer(
    help="Readings of a meter: list, add, submit a file, delete.", no_args_is_help=True
)
app.add_typer(readings_app, name="readings")
READING_COLUMNS = [
    ("id", "id"),
    ("start", "start_date"),
    ("end", "end_date"),
    ("consumption", "consumption"),
    ("unit", "unit"),
    ("cost", "cost"),
    ("flags", "anomaly_flags"),
]


@readings_app.command("list")
def readings_list(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    from_: Annotated[str | None, typer.Option("--from", help="Starting on or after")] = None,
    to: Annotated[str | None, typer.Option("--to", help="Ending on or before")] = None,
    newest_first: Annotated[bool, typer.Option("--newest-first")] = False,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List a meter's readings."""
    state = _state(ctx, None, as_json)
    start = _parse_date(from_, "--from") if from_ else None
    end = _parse_date(to, "--to") if to else None
    run(
        ctx,
        lambda c: show_list(
            state,
            c.readings.list(
                building_id,
                meter_id,
                start_date=start,
                end_date=end,
                newest_first=newest_first,
                page=page,
                per_page=per_page,
            ),
            fetch_all,
            READING_COLUMNS,
            "Readings",
        ),
    )


@readings_app.command("add")
def readings_add(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    start: Annotated[str, typer.Option(help="First day (YYYY-MM-DD)")],
    end: Annotated[str, typer.Option(help="Last day, inclusive")],
    consumption: Annotated[float, typer.Option()],
    cost: Annotated[float | None, typer.Option()] = None,
    currency: Annotated[str | None, typer.Option(help="ISO 4217")] = None,
    demand_kw: Annotated[float | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit one reading."""
    state = _state(ctx, None, as_json)
    body = {
        "start_date": _parse_date(start, "--start"),
        "end_date": _parse_date(end, "--end"),
        "consumption": consumption,
        "cost": cost,
        "cost_currency": currency,
        "demand_kw": demand_kw,
    }
    show(state, run(ctx, lambda c: c.readings.create(building_id, meter_id, body)))


READING_COLUMNS = ("start_date", "end_date", "consumption", "cost", "cost_currency", "demand_kw")


def _load_readings(path: Path) -> list[dict[str, Any]]:
    """A JSON list of readings, or a CSV with start_date, end_date, consumption (and optional
    cost, cost_currency, demand_kw) columns; each row checked here, so a bad one is named by its
    row and column instead of reaching the user as a validation dump."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        data = data.get("readings", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of readings")
        return [_checked_reading(path, i + 1, "item", row) for i, row in enumerate(data)]
    reader = csv.DictReader(text.splitlines())
    unknown = [h for h in (reader.fieldnames or []) if h and h.strip() not in READING_COLUMNS]
    if unknown:
        hint = (
            " (readings are stored in the meter's own unit; `bpsync import` reads a unit "
            "column and converts)"
            if any(h.strip().lower() in ("unit", "units", "uom") for h in unknown)
            else ""
        )
        raise ValueError(
            f"{path}: column(s) {', '.join(map(repr, unknown))} not accepted{hint}; the "
            f"columns are {', '.join(READING_COLUMNS)}"
        )
    rows = []
    for number, row in enumerate(reader, start=2):  # row 1 is the header, as in a spreadsheet
        item = {k.strip(): v.strip() for k, v in row.items() if k and v not in (None, "")}
        rows.append(_checked_reading(path, number, "row", item))
    return rows


def _checked_reading(path: Path, number: int, kind: str, item: Any) -> dict[str, Any]:
    from pydantic import ValidationError as ModelError

    from bpsync.client.models import ReadingInput

    if not isinstance(item, dict):
        raise ValueError(f"{path}, {kind} {number}: expected an object with {READING_COLUMNS}")
    try:
        ReadingInput.model_validate(item)
    except ModelError as exc:
        first = exc.errors()[0]
        column = ".".join(str(x) for x in first.get("loc", ())) or "?"
        value = item.get(column) if isinstance(column, str) else None
        shown = f" ({value!r})" if value is not None else ""
        raise ValueError(
            f"{path}, {kind} {number}, column {column}{shown}: {first.get('msg', 'invalid')}"
        ) from None
    return {
        k: float(v) if k in ("consumption", "cost", "demand_kw") else v for k, v in item.items()
    }


@readings_app.command("submit")
def readings_submit(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="CSV or JSON")],
    as_json: JsonOpt = False,
) -> None:
    """Submit readings from a file in batches of 500; rejected rows are listed (exit 13).

    A CSV has the columns start_date, end_date, consumption (in the meter's unit) and optionally
    cost, cost_currency, demand_kw; a JSON file is a list of such objects. For utility exports in
    other layouts or units, use `bpsync import`."""
    state = _state(ctx, None, as_json)
    try:
        rows = _load_readings(file)
    except (ValueError, OSError) as exc:
        fail(str(exc), EXIT.INVALID, None, state.json)
    if not rows:
        fail(f"{file}: no readings", EXIT.INVALID, None, state.json)

    async def submit(c: AsyncServiceClient) -> dict[str, Any]:
        accepted, errors = 0, []
        for offset in range(0, len(rows), 500):
            result = await c.readings.create_batch(
                building_id, meter_id, rows[offset : offset + 500]
            )
            accepted += result.accepted
            for e in result.errors:
                errors.append(
                    {**e.model_dump(mode="json", exclude_none=True), "index": e.index + offset}
                )
        return {"accepted": accepted, "rejected": len(errors), "errors": errors}

    outcome = run(ctx, submit)
    if state.json:
        print_json(outcome)
    else:
        stdout().print(f"accepted {outcome['accepted']}, rejected {outcome['rejected']}")
        if outcome["errors"]:
            table(
                outcome["errors"],
                [("row", "index"), ("code", "code"), ("message", "message")],
                "Rejected",
            )
    if outcome["rejected"]:
        raise typer.Exit(int(EXIT.PARTIAL))


@readings_app.command("delete")
def readings_delete(ctx: typer.Context, building_id: str, meter_id: str, reading_id: str) -> None:
    """Delete a reading (refused when the building is locked through its end)."""
    run(ctx, lambda c: c.readings.delete(building_id, meter_id, reading_id))
    stderr().print(f"deleted {reading_id}")


# --- users ---------------------------------------------------------------------------------------

users_app = typer.Typer(help="Users of the organisation.", no_args_is_help=True)
app.add_typer(users_app, name="users")
USER_COLUMNS = [
    ("id", "id"),
    ("email", "email"),
    ("name", "name"),
    ("role", "role"),
    ("status", "status"),
    ("last login", "last_login_at"),
]


def _access(value: str | None) -> Any:
    if value is None:
        return None
    return "all" if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


@users_app.command("list")
def users_list(
    ctx: typer.Context,
    role: Annotated[str | None, typer.Option(help="owner, admin or viewer")] = None,
    status_: Annotated[
        str | None, typer.Option("--status", help="active, invited, deactivated")
    ] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List users."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.users.list(role=role, status=status_, page=page, per_page=per_page),
            fetch_all,
            USER_COLUMNS,
            "Users",
        ),
    )


@users_app.command("get")
def users_get(ctx: typer.Context, user_id: str, as_json: JsonOpt = False) -> None:
    """Show one user."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.users.get(user_id)))


@users_app.command("invite")
def users_invite(
    ctx: typer.Context,
    email: Annotated[str, typer.Option()],
    role: Annotated[str, typer.Option(help="owner, admin or viewer")],
    access: Annotated[str, typer.Option(help="all, or property ids separated by commas")] = "all",
    as_json: JsonOpt = False,
) -> None:
    """Invite a user."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(ctx, lambda c: c.users.invite(email=email, role=role, property_access=_access(access))),
    )


@users_app.command("update")
def users_update(
    ctx: typer.Context,
    user_id: str,
    role: Annotated[str | None, typer.Option()] = None,
    access: Annotated[str | None, typer.Option(help="all, or property ids")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a user's role or property access."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v for k, v in {"role": role, "property_access": _access(access)}.items() if v is not None
    }
    if not fields:
        fail("nothing to change: give --role or --access", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.users.update(user_id, **fields)))


@users_app.command("deactivate")
def users_deactivate(ctx: typer.Context, user_id: str, as_json: JsonOpt = False) -> None:
    """Deactivate a user (access is revoked at once)."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.users.deactivate(user_id)))


@users_app.command("reactivate")
def users_reactivate(ctx: typer.Context, user_id: str, as_json: JsonOpt = False) -> None:
    """Reactivate a deactivated user."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.users.reactivate(user_id)))


# --- benchmarks ----------------------------------------------------------------------------------

benchmarks_app = typer.Typer(
    help="Benchmark scores: building, history, portfolio.", no_args_is_help=True
)
app.add_typer(benchmarks_app, name="benchmarks")


@benchmarks_app.command("building")
def benchmarks_building(ctx: typer.Context, building_id: str, as_json: JsonOpt = False) -> None:
    """A building's scores against every standard."""
    state = _state(ctx, None, as_json)
    result = run(ctx, lambda c: c.benchmarks.building(building_id))
    if state.json:
        print_json(result)
        return
    details(
        result,
        [
            "building_id",
            "reporting_period",
            "data_quality_grade",
            "eui_kwh_m2",
            "carbon_intensity_kgco2e_m2",
        ],
    )
    rows = []
    for s in result.scores:
        data = s.model_dump(exclude_none=True)
        standard = data.pop("standard")
        data.pop("calculated_at", None)
        rows.append(
            {"standard": standard, "result": ", ".join(f"{k}={_cell(v)}" for k, v in data.items())}
        )
    table(rows, [("standard", "standard"), ("result", "result")], "Scores")


@benchmarks_app.command("history")
def benchmarks_history(
    ctx: typer.Context,
    building_id: str,
    periods: Annotated[int, typer.Option(min=1, max=20)] = 4,
    standard: Annotated[str | None, typer.Option(help="svc or energy_rating")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Scores per reporting period, newest first."""
    state = _state(ctx, None, as_json)
    result = run(
        ctx, lambda c: c.benchmarks.history(building_id, periods=periods, standard=standard)
    )
    if state.json:
        print_json(result)
        return
    table(
        result.history,
        [
            ("from", "period.start"),
            ("to", "period.end"),
            ("EUI kWh/m²", "eui_kwh_m2"),
            ("svc", "svc_score"),
            ("energy rating", "energy_rating_score"),
        ],
        f"History of {building_id}",
    )


@benchmarks_app.command("portfolio")
def benchmarks_portfolio(
    ctx: typer.Context,
    type_: Annotated[str | None, typer.Option("--type", help="Use type")] = None,
    country: Annotated[str | None, typer.Option()] = None,
    min_grade: Annotated[str | None, typer.Option(help="Minimum data quality grade")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The portfolio aggregate."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(
            ctx, lambda c: c.benchmarks.portfolio(type=type_, country=country, min_grade=min_grade)
        ),
    )


# --- reports -------------------------------------------------------------------------------------

reports_app = typer.Typer(
    help="Reports: types, create, status, list, download.", no_args_is_help=True
)
app.add_typer(reports_app, name="reports")
REPORT_COLUMNS = [
    ("id", "id"),
    ("type", "type"),
    ("format", "format"),
    ("status", "status"),
    ("created", "created_at"),
    ("size", "file_size_bytes"),
]


@reports_app.command("types")
def reports_types(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The report types and their formats."""
    state = _state(ctx, None, as_json)
    items = run(ctx, lambda c: c.reports.types())
    if state.json:
        print_json(items)
    else:
        table(
            items,
            [
                ("type", "type"),
                ("formats", "formats"),
                ("scope", "scope"),
                ("description", "description"),
            ],
            "Report types",
        )


@reports_app.command("create")
def reports_create(
    ctx: typer.Context,
    type_: Annotated[str, typer.Option("--type", help="See `bpsync reports types`")],
    format_: Annotated[str, typer.Option("--format", help="pdf, xlsx, csv or json")],
    start: Annotated[str, typer.Option(help="Reporting period start")],
    end: Annotated[str, typer.Option(help="Reporting period end")],
    building: Annotated[
        str | None, typer.Option(help="Building id (building-scoped types)")
    ] = None,
    filter_type: Annotated[str | None, typer.Option(help="Use type (organisation types)")] = None,
    filter_country: Annotated[str | None, typer.Option(help="Country (organisation types)")] = None,
    template: Annotated[str | None, typer.Option(help="Template id (custom)")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until it is complete")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask for a report; with --wait, poll until it is ready."""
    state = _state(ctx, None, as_json)
    filters = {k: v for k, v in {"type": filter_type, "country": filter_country}.items() if v}
    body = {
        "type": type_,
        "format": format_,
        "reporting_period": {
            "start": _parse_date(start, "--start"),
            "end": _parse_date(end, "--end"),
        },
        "building_id": building,
        "filters": filters or None,
        "template_id": template,
    }

    async def create(c: AsyncServiceClient) -> Any:
        report = await c.reports.create(body)
        return await c.reports.wait(report.id) if wait else report

    show(state, run(ctx, create))


@reports_app.command("status")
def reports_status(ctx: typer.Context, report_id: str, as_json: JsonOpt = False) -> None:
    """A report's status (and a fresh download URL when complete)."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.reports.get(report_id)))


@reports_app.command("list")
def reports_list(
    ctx: typer.Context,
    status_: Annotated[str | None, typer.Option("--status")] = None,
    type_: Annotated[str | None, typer.Option("--type")] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Reports, newest first."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.reports.list(status=status_, type=type_, page=page, per_page=per_page),
            fetch_all,
            REPORT_COLUMNS,
            "Reports",
        ),
    )


@reports_app.command("templates")
def reports_templates(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Saved templates for custom reports."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.reports.templates(),
            True,
            [("id", "id"), ("name", "name"), ("columns", "columns")],
            "Templates",
        ),
    )


@reports_app.command("download")
def reports_download(
    ctx: typer.Context,
    report_id: str,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="File, or folder (an existing one, or a path ending in / that is created)",
        ),
    ] = ".",
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the report first")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Download a report's file, with a progress bar."""
    state = _state(ctx, None, as_json)

    async def download(c: AsyncServiceClient) -> Path:
        if wait:
            await c.reports.wait(report_id)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=stderr(),
            transient=True,
            disable=state.json,
        ) as bar:
            task = bar.add_task(report_id, total=None)
            path = await c.reports.download(
                report_id,
                output,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )
        return path

    path = run(ctx, download)
    if state.json:
        print_json({"report_id": report_id, "path": str(path), "bytes": path.stat().st_size})
    else:
        stdout().print(f"saved {path} ({path.stat().st_size:,} bytes)")


# --- webhooks ------------------------------------------------------------------------------------

webhooks_app = typer.Typer(help="Webhook subscriptions.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")
WEBHOOK_COLUMNS = [
    ("id", "id"),
    ("url", "url"),
    ("events", "events"),
    ("status", "status"),
    ("last success", "last_success_at"),
]


@webhooks_app.command("list")
def webhooks_list(
    ctx: typer.Context,
    status_: Annotated[
        str | None, typer.Option("--status", help="enabled, paused, disabled")
    ] = None,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List subscriptions."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state, c.webhooks.list(status=status_), fetch_all, WEBHOOK_COLUMNS, "Webhooks"
        ),
    )


@webhooks_app.command("get")
def webhooks_get(ctx: typer.Context, webhook_id: str, as_json: JsonOpt = False) -> None:
    """Show one subscription."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.webhooks.get(webhook_id)))


@webhooks_app.command("create")
def webhooks_create(
    ctx: typer.Context,
    url: Annotated[str, typer.Option(help="Endpoint receiving deliveries")],
    event: Annotated[list[str], typer.Option("--event", help="Event type, or * (repeatable)")],
    secret_file: Annotated[
        Path | None,
        typer.Option(help="File holding the signing secret (else you are prompted; never echoed)"),
    ] = None,
    description: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Subscribe URL to events. The signing secret is read from a file or prompted without echo,
    so it never lands in shell history or output."""
    state = _state(ctx, None, as_json)
    if secret_file is not None:
        secret = secret_file.read_text(encoding="utf-8").strip()
    else:
        secret = typer.prompt("Signing secret", hide_input=True, err=True).strip()
    show(
        state,
        run(
            ctx,
            lambda c: c.webhooks.create(
                url=url, events=event, secret=secret, description=description
            ),
        ),
    )


@webhooks_app.command("update")
def webhooks_update(
    ctx: typer.Context,
    webhook_id: str,
    url: Annotated[str | None, typer.Option()] = None,
    event: Annotated[list[str] | None, typer.Option("--event")] = None,
    description: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a subscription's URL, events or description."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v for k, v in {"url": url, "events": event, "description": description}.items() if v
    }
    if not fields:
        fail("nothing to change", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.webhooks.update(webhook_id, **fields)))


@webhooks_app.command("pause")
def webhooks_pause(ctx: typer.Context, webhook_id: str, as_json: JsonOpt = False) -> None:
    """Pause deliveries."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.webhooks.pause(webhook_id)))


@webhooks_app.command("resume")
def webhooks_resume(ctx: typer.Context, webhook_id: str, as_json: JsonOpt = False) -> None:
    """Resume deliveries."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.webhooks.resume(webhook_id)))


@webhooks_app.command("delete")
def webhooks_delete(ctx: typer.Context, webhook_id: str) -> None:
    """Delete a subscription and its delivery history."""
    run(ctx, lambda c: c.webhooks.delete(webhook_id))
    stderr().print(f"deleted {webhook_id}")


@webhooks_app.command("deliveries")
def webhooks_deliveries(
    ctx: typer.Context,
    webhook_id: str,
    status_: Annotated[str | None, typer.Option("--status")] = None,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delivery history of a subscription."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.webhooks.deliveries(webhook_id, status=status_),
            fetch_all,
            [
                ("id", "id"),
                ("event", "event_type"),
                ("status", "status"),
                ("attempts", "attempt_count"),
                ("created", "created_at"),
            ],
            "Deliveries",
        ),
    )


# Command groups that live in their own modules (they import helpers from this one).
from bpsync.commands import imports as _imports  # noqa: E402

_imports.attach(app, meters_app)
from bpsync.commands.watch import attach as _attach_watch  # noqa: E402

_attach_watch(app)


def main() -> None:
    app(prog_name="bpsync")
