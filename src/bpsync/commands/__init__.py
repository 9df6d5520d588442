"""Command groups that plug into `bpsync.cli.app`: each module exposes an `attach(...)`."""
