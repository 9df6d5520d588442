"""The root `bpsync` command: global options, the terminal app when no command is given, `tui`,
`version`. Command groups attach to `app` from their own modules (see `bpsync.cli.entry`)."""

from __future__ import annotations

from typing import Annotated

import typer

from bpsync import __version__
from bpsync.cli.history import history
from bpsync.cli.output import (
    JsonOpt,
    ProfileOpt,
    _state,
)

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


app.command("history")(history)  # the trail of replaced readings (issue 30, cli/history.py)
