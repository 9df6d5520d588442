"""What every screen of the app shares: the top bar with the environment badge, the footer, a
`back` binding, and one way of turning failures into notifications and inline messages."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from rich.text import Text
from textual import work
from textual._context import NoActiveAppError
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from bpsync.client import errors as E
from bpsync.config import ConfigError
from bpsync.tui.context import AppContext
from bpsync.tui.format import describe
from bpsync.tui.messages import ActionFailed

if TYPE_CHECKING:
    from textual.widgets import DataTable

    from bpsync.client.service import AsyncServiceClient
    from bpsync.tui.widgets.export import TableContent

T = TypeVar("T")
ID_SHAPE = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9]+$")  # prp_…, bld_…, mtr_…, rdg_…, rpt_…

# Failures a worker expects and reports as ActionFailed; anything else is a bug, which the
# worker-state handler still turns into a notification (workers run with exit_on_error=False).
EXPECTED: tuple[type[BaseException], ...] = (
    E.BPSyncError,
    ConfigError,
    ValueError,
    OSError,
    TimeoutError,
)


def near_end(table: DataTable[Any], rows: int) -> bool:
    """Whether a table fetched a page at a time wants the next page: its cursor or its scroll
    position is within `rows` of the end, or its rows do not fill it yet."""
    return (
        table.cursor_row >= table.row_count - rows
        or table.scroll_y >= table.max_scroll_y - rows
        or table.row_count < table.size.height
    )


def failure(action: str, exc: BaseException) -> ActionFailed:
    if isinstance(exc, E.APIStatusError):
        return ActionFailed(action, describe(exc), exc.code, exc.status, dict(exc.extra))
    return ActionFailed(action, describe(exc))


class AppScreen(Screen[Any]):
    """Base of the app's screens. Subclasses compose `TopBar(...)` and `AppFooter()` themselves."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="screen.back"),
        Binding("c", "copy_id", "Copy id", id="screen.copy_id", show=False),
        Binding("e", "export", "Export", id="screen.export", show=False),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Textual re-parses the whole stylesheet (about 0.2 s) the first time each section is
        # shown, because a new screen's CSS update count starts at -1 ("styles out of date").
        # A screen made now takes its styles when it mounts, from the stylesheet as it is: mark
        # it current, so the re-parse happens only when the CSS really changed (a theme switch).
        with contextlib.suppress(NoActiveAppError):
            self._css_update_count = self.app._css_update_count

    @property
    def bpsync(self) -> AppContext:
        """The running app, through the interface the screens need (never the app class itself:
        importing it would close an import circle, issue 26)."""
        return cast(AppContext, self.app)

    @property
    def client(self) -> AsyncServiceClient:
        connection = self.bpsync.connection
        if connection is None:
            raise E.LoginRequiredError("Not signed in: choose a profile first (ctrl+o).")
        return connection.client

    async def guarded(self, action: str, work: Awaitable[T]) -> T | None:
        """Await `work`; an expected failure becomes an ActionFailed message (None returned)."""
        try:
            return await work
        except EXPECTED as exc:
            self.post_message(failure(action, exc))
            return None

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1 and self.app.screen is self:
            self.app.pop_screen()

    def selected_id(self) -> str | None:
        """The id of the row under the cursor of the focused table (rows are keyed by id)."""
        from textual.widgets import DataTable

        table = self.focused
        if not isinstance(table, DataTable) or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return key if isinstance(key, str) and ID_SHAPE.match(key) else None

    def action_copy_id(self) -> None:
        """c: put the selected row's id on the clipboard (tables cut long ids) and show it whole
        in the note line, for terminals that do not pass the clipboard through."""
        found = self.selected_id()
        if found is None:
            self.notify("Select a row of a table first.", severity="warning")
            return
        self.app.copy_to_clipboard(found)
        self.inline(f"Copied {found}", error=False)
        self.notify(f"Copied {found} to the clipboard.")

    def export_content(self) -> TableContent | None:
        """What `e` exports: the focused table, else the screen's first table, as shown. Screens
        whose cells hold more than their text (units, numbers) override this."""
        from textual.widgets import DataTable

        from bpsync.tui.widgets.export import from_datatable

        table = self.focused if isinstance(self.focused, DataTable) else None
        if table is None:
            tables = self.query(DataTable)
            table = tables.first() if tables else None
        if table is None or not table.row_count:
            return None
        title = getattr(self, "HELP_TITLE", "") or type(self).__name__
        return from_datatable(title, table)

    def action_export(self) -> None:
        """e: the table on screen (visible rows and columns, as sorted, filtered and in the units
        shown) to CSV and XLSX in the download dir; a notification says where."""
        content = self.export_content()
        if content is None:
            self.notify("There is no table with rows to export here.", severity="warning")
            return
        self._export(content, self.bpsync.download_dir, self.bpsync.clock())

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, content: TableContent, folder: Path, now: Any) -> None:
        from bpsync.tui.widgets.export import export, summary

        try:
            files = export(content, folder, now)
        except OSError as exc:
            self.app.call_from_thread(
                self.notify, f"Export failed: {describe(exc)}", severity="error", timeout=10
            )
            return
        text = summary(content, files)
        self.app.call_from_thread(self.notify, text, title="Exported", timeout=10)
        self.app.call_from_thread(self.inline, text, False)

    def inline(self, text: str, error: bool = True) -> None:
        """Show a message in the screen's `#note` line, when it has one."""
        for note in self.query("#note").results(Static):
            note.update(Text(text))  # messages carry names and values: never markup
            note.set_class(error and bool(text), "-error")

    def on_action_failed(self, message: ActionFailed) -> None:
        self.inline(f"{message.action}: {message.message}")
        self.notify(message.message, title=message.action, severity="error", timeout=8)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.notify(describe(error), title="Unexpected error", severity="error", timeout=10)
            self.inline(f"Unexpected error: {describe(error)}")


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no before anything destructive; answers True only on an explicit yes."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> Any:
        from textual.containers import Horizontal, Vertical
        from textual.widgets import Button

        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            if self.detail:
                yield Static(self.detail, id="detail")
            with Horizontal(id="buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no").focus()

    def on_button_pressed(self, event: Any) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
