"""`bpsync`: the command line of the tool.

- `root`: the root command `app` (global options, the terminal app when no command is given);
- `output`: what every command shares (exit codes, tables and JSON, `fail`, `run`);
- `account`, `portfolio`, `org`, `results`: the command groups, one module per area;
- `entry`: assembles them (with `bpsync.commands`) and is the entry point (`main`).

Human tables by default, `--json` for scripts, and exit codes scripts can rely on (docs/client.md).
`app` and `main` are looked up lazily, so a command module (which imports `bpsync.cli.output`)
can be imported first without pulling in the assembly that imports it."""

from __future__ import annotations

from typing import Any

from bpsync.cli.output import EXIT

__all__ = ["EXIT", "app", "main"]


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from bpsync.cli import entry

        return getattr(entry, name)
    raise AttributeError(f"module 'bpsync.cli' has no attribute {name!r}")
