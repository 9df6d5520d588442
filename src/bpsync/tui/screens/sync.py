"""Sync status: what the folder watcher of this profile is doing (its status file), the files it
settled recently and their fate (the ledger), and the profile's rate-limit buckets as this machine
knows them (shared by every bpsync process of the profile)."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from bpsync.tui.format import DASH, elapsed, moment
from bpsync.tui.messages import SyncStatusLoaded
from bpsync.tui.screens.base import AppScreen
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.plain import PlainTable, fields_table
from bpsync.tui.widgets.topbar import TopBar
from bpsync.watch.status import StatusFileError, is_stale, read_status, status_path

REFRESH_SECONDS = 2.0
FATE_STYLE = {"processed": "green", "failed": "bold red", "skipped": "dim"}


class SyncStatusScreen(AppScreen):
    HELP_TITLE = "Sync status"
    HELP = (
        "The watcher (`bpsync watch`) writes its status file every few seconds; a heartbeat "
        "older than three intervals means it stopped without saying so. The table lists the "
        "files it settled most recently. Rate limits are the buckets this profile's processes "
        "share, as learned from the service's headers."
    )
    BINDINGS = [Binding("r", "reload", "Reload", id="sync.reload")]

    def compose(self) -> ComposeResult:
        yield TopBar("Sync status")
        with Horizontal(id="sync-top"):
            yield Static("Reading the status file…", id="watcher")
            yield Static("", id="limits")
        yield Static("Recent files", classes="section-title")
        yield PlainTable(id="ledger", cursor_type="row", zebra_stripes=True)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#ledger", DataTable).add_columns(
            "When", "File", "Fate", "Accepted", "Rejected", "Receipt"
        )
        self.load()
        self.set_interval(REFRESH_SECONDS, self.load)

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="sync", exit_on_error=False)
    def load(self) -> None:
        """Reads two small files (status, rate-limit state): a thread, since both block."""
        app = self.bpsync
        connection = app.connection
        if connection is None:
            return
        now = app.clock()
        problem = None
        status = None
        try:
            status = read_status(connection.name)
        except (StatusFileError, OSError) as exc:
            problem = str(exc)
        limiter = connection.client.limiter
        buckets = limiter.snapshot() if limiter is not None else {}
        limiter_now = limiter.clock() if limiter is not None else 0.0
        stale = status is not None and is_stale(status, now)
        self.post_message(SyncStatusLoaded(status, problem, stale, buckets, now, limiter_now))

    def on_sync_status_loaded(self, message: SyncStatusLoaded) -> None:
        watcher = self.query_one("#watcher", Static)
        status = message.status
        now = message.checked_at
        connection = self.bpsync.connection
        name = connection.name if connection else DASH
        if message.problem:
            watcher.update(Text(f"Watcher status unreadable: {message.problem}", style="red"))
        elif status is None:
            watcher.update(
                Text(
                    f"No watcher has run for profile {name}.\n"
                    f"Start one with `bpsync watch FOLDER`; it reports in\n{status_path(name)}"
                )
            )
        else:
            state = (
                Text("STOPPED (no heartbeat)", style="bold red")
                if message.stale
                else Text("PAUSED", style="bold yellow")
                if status.paused_reason
                else Text("RUNNING", style="bold green")
            )
            rows = [
                ("Watcher", state),
                ("Folder", status.folder),
                ("PID", str(status.pid)),
                ("Started", moment(status.started_at)),
                ("Heartbeat", f"{elapsed(status.heartbeat_at, now)} ago"),
                ("Queue", f"{status.queue_length} file(s)"),
                ("Last file", status.last_file or DASH),
                ("Last result", status.last_result or DASH),
                ("Last error", status.last_error or DASH),
                ("Paused", status.paused_reason or DASH),
            ]
            watcher.update(fields_table(rows, 1))
        self._limits(message)
        self._ledger(message)

    def _limits(self, message: SyncStatusLoaded) -> None:
        now = message.limiter_now
        if not message.buckets:
            text = "Rate limits: not learned yet (no request has been answered)."
            self.query_one("#limits", Static).update(text)
            return
        rows = []
        for kind, bucket in sorted(message.buckets.items()):
            reset = max(0, int(bucket.reset - now))
            rows.append((kind, f"{bucket.remaining}/{bucket.limit} left, {reset}s to reset"))
        self.query_one("#limits", Static).update(fields_table([("Rate limits", ""), *rows], 1))

    def _ledger(self, message: SyncStatusLoaded) -> None:
        table = self.query_one("#ledger", DataTable)
        table.clear()
        if message.status is None:
            return
        for entry in message.status.recent:
            table.add_row(
                moment(entry.at),
                entry.file,
                Text(entry.fate, style=FATE_STYLE.get(entry.fate, "")),
                str(entry.accepted),
                str(entry.rejected),
                entry.receipt_path or DASH,
            )
