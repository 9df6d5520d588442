"""`bpsync`: the command line of the tool."""

from __future__ import annotations

import typer

from bpsync import __version__

app = typer.Typer(
    help="Sync utility data with a building-performance service.", no_args_is_help=True
)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(f"bpsync {__version__}")


def main() -> None:
    app(prog_name="bpsync")
