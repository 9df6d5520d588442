"""The `bpservice` command's entry point: says how to get the server's dependencies when this
installation has only the tool (`pip install bpsync` without the `service` extra)."""

from __future__ import annotations

import sys

INSTALL_HINT = "pip install 'bpsync[service]'"


def main() -> None:
    try:
        from bpservice.cli import main as run
    except ImportError as exc:
        missing = exc.name or str(exc)
        sys.stderr.write(
            f"bpservice needs the server's dependencies ({missing} is not installed): "
            f"{INSTALL_HINT}\n"
        )
        raise SystemExit(2) from None
    run()
