"""What every command shares: exit codes, the JSON and table output, `fail`, the per-run state
(profile, --json, --verbose), and `run`, which builds the profile's client, says which environment
it talks to (production or sandbox, on stderr, so stdout stays clean) and maps errors to exit codes
(docs/client.md)."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bpsync import logs
from bpsync.client import errors as E
from bpsync.config import (
    ConfigError,
    Profile,
    resolve_profile,
)
from bpsync.vocab import SCOPES

if TYPE_CHECKING:  # the client (httpx, pydantic's models) loads when a command runs, not at start
    from bpsync.client.pagination import AsyncPaginator
    from bpsync.client.service import AsyncServiceClient

T = TypeVar("T")

ALL_SCOPES = SCOPES  # a `login --oauth` asks for every scope unless told otherwise


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
    NOT_APPLIED = 16  # corrections or rebills of stored readings found; --update applies them


def exit_code(exc: BaseException) -> EXIT:
    from pydantic import ValidationError as ModelValidationError

    from bpsync.client.reports import ReportFailedError

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
NoUploadOpt = Annotated[
    bool,
    typer.Option(
        "--no-upload",
        help="Send batches and single calls only, never the CSV upload (bulk) endpoint",
    ),
]
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
    from pydantic import BaseModel

    from bpsync.client.auth import Secret
    from bpsync.client.pagination import Page

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
    text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A file name that is not UTF-8 holds lone surrogates (os.fsdecode): JSON's \udcXX escape
        # writes them, and reads back as the same name.
        text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=True)
    sys.stdout.write(text + "\n")


def cell_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dict):
        if "id" in value:  # a reference: {id, name} or {id, type, status}
            label = value.get("name") or value.get("type")
            return f"{label} ({value['id']})" if label else str(value["id"])
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(cell_text(v) for v in value) or "-"
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
        t.add_row(*(cell_text(_dig(row, path)) for _, path in columns))
    stdout().print(t)


def details(item: Any, fields: Sequence[str] | None = None, title: str | None = None) -> None:
    data = to_jsonable(item)
    t = Table(show_header=False, title=title, box=None)
    t.add_column("field", style="bold")
    t.add_column("value", overflow="fold")
    for key in fields or list(data):
        t.add_row(key, cell_text(data.get(key)))
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
    from pydantic import ValidationError as ModelValidationError

    from bpsync.client.service import AsyncServiceClient

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
    from pydantic import ValidationError as ModelValidationError

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
    logs.setup(verbose)


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


def listing(
    ctx: typer.Context,
    as_json: bool,
    fetch_all: bool,
    columns: Sequence[tuple[str, str]],
    title: str,
    page_of: Callable[[AsyncServiceClient], AsyncPaginator[Any]],
) -> None:
    """The body of every list command: one page (or every page with --all) as a table or JSON."""
    state = _state(ctx, None, as_json)
    run(ctx, lambda c: show_list(state, page_of(c), fetch_all, columns, title))


def item_command(
    group: typer.Typer,
    name: str,
    ids: Sequence[str],
    call: Callable[..., Awaitable[Any]],
    help: str,
) -> None:
    """Register `bpsync GROUP NAME ID... [--json]`: call `call(client, *ids)` and show the item
    (a table, or JSON). The shape of every get/archive/pause-like command, written once; the ids
    are positional arguments named as in the service's paths (`property_id` → PROPERTY_ID)."""

    def command(ctx: typer.Context, **values: Any) -> None:
        as_json = bool(values.pop("as_json", False))
        state = _state(ctx, None, as_json)
        args = [values[i] for i in ids]
        show(state, run(ctx, lambda c: call(c, *args)))

    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    params += [
        inspect.Parameter(
            i,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=Annotated[str, typer.Argument(metavar=i.upper(), show_default=False)],
        )
        for i in ids
    ]
    params.append(
        inspect.Parameter(
            "as_json", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=JsonOpt, default=False
        )
    )
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {}
    command.__doc__ = help
    command.__name__ = f"{name.replace('-', '_')}_command"
    group.command(name)(command)
