"""Command groups that plug into `bpsync.cli.app`: each module exposes an `attach(...)`.

They use helpers defined in `bpsync.cli`, and `bpsync.cli` attaches them as its last step, so
`bpsync.cli` is always imported first: importing a command module on its own (as tests do) then
runs cli's definitions, cli's last lines import the command modules, and they find every helper
already in place."""

import bpsync.cli  # noqa: F401
