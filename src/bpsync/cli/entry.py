"""Assembles `bpsync`: the root command and every command group. Group modules register on `bpsync.cli.root.app` and take their helpers from
`bpsync.cli.output`; nothing imports this module but the package and the entry point, so there is
no import cycle."""

from __future__ import annotations

from bpsync.cli import account, export, org, portfolio, results  # noqa: F401  (they register commands)
from bpsync.cli.root import app
from bpsync.commands import imports, watch

imports.attach(app, portfolio.meters_app)
watch.attach(app)


def main() -> None:
    app(prog_name="bpsync")
