"""Starting the terminal app from the command line, without typer (cli.py wires it up)."""

from __future__ import annotations

import os

from bpsync.config import Profile


def run_tui(profile: str | None, *, pinned: Profile | None = None) -> int:
    """Run the app for `profile` (None: BPSYNC_PROFILE, else the default profile) until the user
    quits; returns the process exit code. Textual is imported here so other commands never pay for
    it. `pinned` is a profile for this run only (the demo's), never saved. Set BPSYNC_TUI_TIMING=1 to print the time to the first screen on exit."""
    from bpsync.tui.app import BPSyncApp

    app = BPSyncApp(profile, pinned=pinned)
    app.run()
    if os.environ.get("BPSYNC_TUI_TIMING") and app.first_paint_seconds is not None:
        print(f"first screen after {app.first_paint_seconds * 1000:.0f} ms")
    return int(app.return_code or 0)
