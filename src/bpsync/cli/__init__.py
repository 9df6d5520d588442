"""`bpsync`: the command line of the tool.

- `app`: the root command (global options, the terminal app when no command is given);
- `output`: what every command shares (exit codes, tables and JSON, `fail`, `run`);
- `account`, `portfolio`, `org`, `results`: the command groups, one module per area;
- `main`: assembles them (with `bpsync.commands`) and is the entry point.

Human tables by default, `--json` for scripts, and exit codes scripts can rely on (docs/client.md)."""

from bpsync.cli.main import app, main
from bpsync.cli.output import EXIT

__all__ = ["EXIT", "app", "main"]
