"""What the screens need from the app, as an interface below both (issue 26): the screens reach
the running app only through `AppContext`, so they never import `bpsync.tui.app` and the app is
free to import them. `BPSyncApp` provides every member; tests may run a screen in any app that
does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from bpsync.tui.connection import Connection

Clock = Callable[[], dt.datetime]


@runtime_checkable
class AppContext(Protocol):
    """The signed-in connection, the settings the screens read, and the two calls they make after
    a sign-in."""

    connection: Connection | None  # None until a profile is signed in
    clock: Clock  # "now", injectable so tests drive time
    open_browser: Callable[[str], Any]  # for the OAuth sign-in
    page_size: int  # properties per page of the portfolio
    poll_interval: float  # seconds before a processing report is first read again
    oauth_timeout: float  # seconds the browser sign-in may take
    download_dir: Path  # where reports are saved unless the form says otherwise
    import_dir: Path  # where the import wizard's file tree starts

    def set_connection(self, connection: Connection) -> None:
        """Use `connection` from now on (closing the one it replaces)."""
        ...

    def after_sign_in(self) -> None:
        """Open fresh sections for the new connection, then the portfolio."""
        ...
