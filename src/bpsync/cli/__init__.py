"""`bpsync`: the command line of the tool.

- `root`: the root command `app` (global options, the terminal app when no command is given);
- `output`: what every command shares (exit codes, tables and JSON, `fail`, `run`);
- `account`, `portfolio`, `org`, `results`: the command groups, one module per area;
- `entry`: assembles them (with `bpsync.commands`) and is the entry point (`main`).

Human tables by default, `--json` for scripts, and exit codes scripts can rely on (docs/client.md).
`bpsync.cli.entry` holds the assembled `app` and `main` (the console script's entry point); this
package module imports nothing, so a command module importing `bpsync.cli.output` never runs the
assembly that imports it (no import circle, even through a function)."""
