"""The bpsync terminal app.

Sections are Textual modes, each with its own screen stack: sign in, portfolio (→ property →
building → benchmarks), portfolio benchmarks, reports, sync status and the import wizard. Network
and file work runs in workers that post `messages.py` messages back; nothing blocks the UI.
Every binding has an id, so the config file's `[keymap]` table can remap it (keymap.py)."""

from __future__ import annotations

import datetime as dt
import time
import webbrowser
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen

from bpsync.config import ConfigError, Profile
from bpsync.tui.connection import Connection
from bpsync.tui.context import Clock, UnitsChanged
from bpsync.tui.format import environment_badge
from bpsync.tui.keymap import load_keymap
from bpsync.units import Units, default_units, other

if TYPE_CHECKING:
    from bpsync.compliance import ComplianceOutlook

SECTIONS: dict[str, str] = {
    "portfolio": "Portfolio",
    "buildings": "Buildings",
    "benchmarks": "Portfolio benchmarks",
    "reports": "Reports",
    "sync": "Sync status",
    "import": "Import wizard",
}


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _section_screen(name: str) -> Screen[Any]:
    # Imported here so the first screen paints before the heavier screens are imported.
    if name == "portfolio":
        from bpsync.tui.screens.portfolio import PortfolioScreen

        return PortfolioScreen()
    if name == "buildings":
        from bpsync.tui.screens.portfolio import BuildingsScreen

        return BuildingsScreen()
    if name == "benchmarks":
        from bpsync.tui.screens.benchmarks import PortfolioBenchmarksScreen

        return PortfolioBenchmarksScreen()
    if name == "reports":
        from bpsync.tui.screens.reports import ReportsScreen

        return ReportsScreen()
    if name == "sync":
        from bpsync.tui.screens.sync import SyncStatusScreen

        return SyncStatusScreen()
    from bpsync.tui.screens.wizard import ImportWizardScreen

    return ImportWizardScreen()


PROFILES_MODE = "profiles"


class BPSyncApp(App[int]):
    """The app. Its screens see it only through `context.AppContext`, never as this class."""

    CSS_PATH = "app.tcss"
    TITLE = "bpsync"
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("f2", "section('portfolio')", "Portfolio", id="app.portfolio"),
        Binding("f8", "section('buildings')", "Buildings", id="app.buildings", show=False),
        Binding("f3", "section('benchmarks')", "Benchmarks", id="app.benchmarks", show=False),
        Binding("f4", "section('reports')", "Reports", id="app.reports", show=False),
        Binding("f5", "section('sync')", "Sync", id="app.sync", show=False),
        Binding("f6", "section('import')", "Import", id="app.import", show=False),
        Binding("ctrl+o", "profiles", "Profiles", id="app.profiles", show=False),
        Binding("u", "toggle_units", "Units", id="app.units", show=False),
        Binding("f7", "pm_export", "PM export", id="app.pm_export", show=False),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]
    badge: reactive[tuple[str, str]] = reactive(("NOT SIGNED IN", "-none"))
    where: reactive[str] = reactive("")

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Notifications name properties, files and service messages, so they are always plain
        text ("[fixed]" in a name is shown, not eaten as markup). Widgets' own `notify` passes
        markup=True by default, which is why the argument is ignored here."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def __init__(
        self,
        profile: str | None = None,
        *,
        auto_connect: bool = True,
        clock: Clock = utc_now,
        keymap: dict[str, str] | None = None,
        open_browser: Callable[[str], Any] = webbrowser.open,
        page_size: int = 100,
        poll_interval: float = 1.0,
        oauth_timeout: float = 300.0,
        download_dir: Path | None = None,
        import_dir: Path | None = None,
        pinned: Profile | None = None,
    ) -> None:
        super().__init__()
        # A profile that lives only for this run (the demo's, whose service ends with it): it is
        # offered on the sign-in screen but never saved to the config file.
        self.pinned = pinned
        self.started = time.perf_counter()
        self.first_paint_seconds: float | None = None
        self.profile_name = profile
        self.auto_connect = auto_connect
        self.clock = clock
        self.open_browser = open_browser
        self.page_size = page_size
        self.poll_interval = poll_interval
        self.oauth_timeout = oauth_timeout
        self.download_dir = download_dir or Path.cwd()
        self.import_dir = import_dir or Path.cwd()
        self.connection: Connection | None = None
        self._keymap_override = keymap
        self.units: Units = "si"
        self.units_chosen = False  # by the profile or the `u` key: the portfolio's default waits
        self.outlooks: dict[str, ComplianceOutlook] = {}
        self._sections: set[str] = set()

    # --- start and sign in -----------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        from bpsync.tui.screens.signin import SignInScreen

        return SignInScreen(self.profile_name, auto_connect=self.auto_connect, pinned=self.pinned)

    def on_mount(self) -> None:
        self._apply_keymap()
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        if self.first_paint_seconds is None:
            self.first_paint_seconds = time.perf_counter() - self.started

    def _apply_keymap(self) -> None:
        try:
            keymap = self._keymap_override if self._keymap_override is not None else load_keymap()
        except ConfigError as exc:
            self.notify(str(exc), title="Keymap ignored", severity="warning", timeout=10)
            return
        if keymap:
            self.set_keymap(keymap)

    def set_connection(self, connection: Connection) -> None:
        old, self.connection = self.connection, connection
        if old is not None and old is not connection:
            self.run_worker(old.client.aclose(), group="close", exit_on_error=False)
        self.badge = environment_badge(connection.environment)
        self.where = f"profile {connection.name}"
        if old is not connection:
            self.outlooks = {}
            units = connection.profile.units
            self.units_chosen = units in ("si", "us")
            if self.units_chosen:
                self.set_units(units)  # type: ignore[arg-type]

    # --- units -----------------------------------------------------------------------------------

    def set_units(self, units: Units) -> None:
        changed = units != self.units
        self.units = units
        if changed:
            # Every screen of every section, so one shown later is already up to date.
            stacks = getattr(self, "_screen_stacks", {}) or {"": self.screen_stack}
            for stack in list(stacks.values()):
                for screen in stack:
                    screen.post_message(UnitsChanged(units))

    def follow_portfolio_units(self, countries: Iterable[str | None]) -> None:
        if not self.units_chosen:
            self.set_units(default_units(countries))

    def action_toggle_units(self) -> None:
        """u: SI ↔ US units for this session (a profile's `units` sets the start)."""
        self.units_chosen = True
        self.set_units(other(self.units))
        label = "US units (ft², kBtu, kBtu/ft², therms)" if self.units == "us" else "SI units"
        self.notify(f"Showing {label}.")

    def after_sign_in(self) -> None:
        """Fresh sections for the new connection, then the portfolio."""
        self.run_worker(
            self._reset_sections(), group="sections", exclusive=True, exit_on_error=False
        )

    async def _reset_sections(self) -> None:
        # Leave the sections before replacing them (the current mode cannot be removed). The
        # first sign-in runs in Textual's default mode, a later one in "profiles".
        if self.current_mode in SECTIONS:
            await self._open_profiles()
        for name in SECTIONS:
            if name in self._sections:
                await self.remove_mode(name)
            self.add_mode(name, lambda name=name: _section_screen(name))
            self._sections.add(name)
        await self.switch_mode("portfolio")

    # --- navigation ------------------------------------------------------------------------------

    def action_section(self, name: str) -> None:
        if self.connection is None:
            self.notify("Sign in first.", severity="warning")
            return
        if name in self._sections:
            self.switch_mode(name)

    def action_profiles(self) -> None:
        """Ctrl+O: the sign-in screen, to switch or add a profile. Textual's default mode cannot
        be switched back to, so this is a mode of its own, made fresh each time."""
        if self.current_mode in (self.DEFAULT_MODE, PROFILES_MODE):
            return  # already on a sign-in screen
        self.run_worker(self._open_profiles(), group="sections", exit_on_error=False)

    async def _open_profiles(self) -> None:
        from bpsync.tui.screens.signin import SignInScreen

        if self.current_mode == PROFILES_MODE:
            return
        if PROFILES_MODE in self._sections:
            await self.remove_mode(PROFILES_MODE)
        name = self.connection.name if self.connection else self.profile_name
        self.add_mode(
            PROFILES_MODE, lambda: SignInScreen(name, auto_connect=False, pinned=self.pinned)
        )
        self._sections.add(PROFILES_MODE)
        await self.switch_mode(PROFILES_MODE)

    def action_pm_export(self) -> None:
        """F7: Portfolio Manager's upload workbooks from stored readings (docs/pm-round-trip.md)."""
        if self.connection is None:
            self.notify("Sign in first.", severity="warning")
            return
        from bpsync.tui.screens.pm_export import PmExportScreen

        if not isinstance(self.screen, PmExportScreen):
            self.push_screen(
                PmExportScreen(
                    self.connection.client,
                    self.connection.name,
                    folder=self.download_dir,
                    today=self.clock().date(),
                )
            )

    def action_help(self) -> None:
        from bpsync.tui.screens.help import HelpScreen

        if type(self.screen).__name__ != "HelpScreen":
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette lists the sections and every key binding of the current screen."""
        if self.connection is not None:
            for name, title in SECTIONS.items():
                yield SystemCommand(
                    f"Go to {title}", f"Open the {title.lower()} section", self._go(name)
                )
            yield SystemCommand(
                "Portfolio Manager export", "Write PM's upload workbooks", self.action_pm_export
            )
        yield SystemCommand("Switch profile", "Sign in with another profile", self.action_profiles)
        yield SystemCommand("Help", "Keys of this screen and how to remap them", self.action_help)
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.description or binding.action in seen or not active.enabled:
                continue
            if binding.id and binding.id.startswith("app."):
                continue
            seen.add(binding.action)
            key = self.get_key_display(binding)
            yield SystemCommand(
                binding.description,
                f"{key} · {binding.id or binding.action}",
                self._run(active.node, binding.action),
            )
        yield from super().get_system_commands(screen)

    def _go(self, name: str) -> Callable[[], None]:
        return lambda: self.action_section(name)

    def _run(self, node: Any, action: str) -> Callable[[], Any]:
        async def run() -> None:
            await self.run_action(action, node)

        return run

    async def on_unmount(self) -> None:
        if self.connection is not None:
            await self.connection.client.aclose()
