"""What the screens need from the app, as an interface below both (issue 26): the screens reach
the running app only through `AppContext`, so they never import `bpsync.tui.app` and the app is
free to import them. `BPSyncApp` provides every member; tests may run a screen in any app that
does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.message import Message

from bpsync.tui.connection import Connection
from bpsync.units import Units

if TYPE_CHECKING:
    from bpsync.compliance import ComplianceOutlook

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
    units: Units  # "si" or "us": how areas, intensities and energy are shown
    # Compliance outlooks by building id, fetched once per session (bpsync.compliance).
    outlooks: dict[str, ComplianceOutlook]

    def set_connection(self, connection: Connection) -> None:
        """Use `connection` from now on (closing the one it replaces)."""
        ...

    def set_units(self, units: Units) -> None:
        """Show `units` from now on: every open screen gets a `UnitsChanged` to re-render."""
        ...

    def follow_portfolio_units(self, countries: Iterable[str | None]) -> None:
        """The default: US units for a mostly-US portfolio, unless the profile sets `units` or
        the user has toggled them this session."""
        ...

    def after_sign_in(self) -> None:
        """Open fresh sections for the new connection, then the portfolio."""
        ...


@dataclass
class UnitsChanged(Message, bubble=False):
    """Sent to every open screen when the units change (the `u` key, a profile's setting, the
    portfolio's default): screens that show areas, intensities or energy re-render."""

    units: Units
