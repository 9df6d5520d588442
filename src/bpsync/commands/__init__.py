"""Command groups with a module of their own (the import engine's commands, the watcher): each
exposes an `attach(...)` that `bpsync.cli.entry` calls; their helpers come from
`bpsync.cli.output`."""
