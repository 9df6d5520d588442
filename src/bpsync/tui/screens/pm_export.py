"""Portfolio Manager export, as a dialog: choose the workbook (bills or new meters), the scope
(everything, or properties, buildings or meters by id), the period and the file; the export runs
in a worker and the dialog shows its summary, with every meter left out, why, and the command that
fixes it (the same as `bpsync export pm-bills` / `pm-meters`; docs/pm-round-trip.md).

The dialog is given its client and profile, so it needs nothing else of the app; it dismisses
with the last Outcome (or None)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from bpsync.client import errors as E
from bpsync.config import ConfigError
from bpsync.tui.format import describe

if TYPE_CHECKING:
    from bpsync.client.service import AsyncServiceClient
    from bpsync.pm_export.export import Outcome, Scope

BILLS, METERS = "bills", "meters"
SCOPES = (("Everything", "all"), ("Properties", "property"), ("Buildings", "building"))
SCOPES += (("Meters", "meter"),)


@dataclass
class PmExportFinished(Message):
    """The export's outcome, posted by the worker."""

    outcome: Outcome


@dataclass
class PmExportFailed(Message):
    """Why the export could not run (a sentence for the user)."""

    message: str


@dataclass(frozen=True)
class Request:
    """The dialog's fields, checked."""

    what: str
    scope: Scope
    start: dt.date | None
    end: dt.date | None
    path: Path
    everything: bool


def _date(text: str, name: str) -> dt.date | None:
    text = text.strip()
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name} must be a date YYYY-MM-DD, not {text!r}.") from None


def read_form(
    what: str, scope_kind: str, ids: str, start: str, end: str, path: str, everything: bool
) -> Request:
    """The form as a Request; raises ValueError with a sentence naming the field to fix."""
    from bpsync.pm_export.export import Scope

    wanted = tuple(x for x in ids.replace(",", " ").split() if x)
    if scope_kind != "all" and not wanted:
        raise ValueError(f"Give the {scope_kind} id(s), or choose Everything.")
    prefix = {"property": "prp_", "building": "bld_", "meter": "mtr_"}.get(scope_kind)
    if prefix and any(not x.startswith(prefix) for x in wanted):
        raise ValueError(f"{scope_kind.capitalize()} ids start with {prefix}.")
    scope = Scope(
        wanted if scope_kind == "property" else (),
        wanted if scope_kind == "building" else (),
        wanted if scope_kind == "meter" else (),
    )
    first, last = _date(start, "From"), _date(end, "To")
    if first and last and last < first:
        raise ValueError("To is before From.")
    target = Path(path.strip()).expanduser()
    if target.suffix.lower() != ".xlsx":
        raise ValueError("Save to an .xlsx file.")
    if not target.parent.is_dir():
        raise ValueError(f"No folder {target.parent}.")
    return Request(what, scope, first, last, target, everything)


def summary_text(outcome: Outcome) -> Text:
    """What the export did, as plain text (names and reasons are never markup)."""
    from bpsync.pm_export.rows import BillsPlan

    plan = outcome.plan
    if isinstance(plan, BillsPlan):
        count, noun, skipped, in_pm = plan.readings, "reading(s)", plan.already_exported, 0
    else:
        count, noun, skipped, in_pm = plan.meters, "meter(s)", 0, plan.in_pm
    lines = [
        f"Wrote {count} {noun} to {outcome.path}"
        if outcome.path
        else f"Nothing new to write: no file written ({noun}: 0)."
    ]
    lines += [f"  {sheet}: {len(rows)}" for sheet, rows in plan.sheets.items() if rows]
    if skipped:
        lines.append(
            f"Skipped {skipped} reading(s) exported before (tick 'Also readings exported before')."
        )
    if in_pm:
        lines.append(f"Skipped {in_pm} meter(s) already in Portfolio Manager.")
    lines += [f"Note: {n}" for n in plan.notes]
    if plan.left_out:
        lines.append(f"Left out {len(plan.left_out)} meter(s):")
        for x in plan.left_out:
            held = f", {x.readings} reading(s)" if x.readings else ""
            lines.append(f"  {x.meter} ({x.meter_id}, {x.building}{held}): {x.reason}")
            if x.fix:
                lines.append(f"    fix: {x.fix}")
    return Text("\n".join(lines))


class PmExportScreen(ModalScreen["Outcome | None"]):
    """Export Portfolio Manager upload workbooks from what the service holds."""

    DEFAULT_CSS = """
    PmExportScreen { align: center middle; }
    #pm-export { width: 96%; max-width: 110; height: auto; max-height: 90%; border: thick $primary;
                 background: $surface; padding: 1 2; }
    #pm-export .form-row { height: auto; margin-bottom: 1; }
    #pm-export .form-label { width: 10; padding-top: 0; }
    #pm-export Input { width: 1fr; }
    #pm-export Select { width: 24; }
    #pm-summary { height: auto; max-height: 16; }
    #pm-note { color: $error; height: auto; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close", id="pm_export.close"),
        Binding("ctrl+g", "export", "Export", id="pm_export.run"),  # as Reports: ctrl+e is Input's
    ]

    def __init__(
        self,
        client: AsyncServiceClient,
        profile: str,
        *,
        folder: Path | None = None,
        today: dt.date | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.profile = profile
        self.folder = folder or Path.cwd()
        self.today = today or dt.date.today()
        self.outcome: Outcome | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="pm-export"):
            yield Static(Text("Portfolio Manager export", style="bold"))
            with Horizontal(classes="form-row"):
                yield Label("Workbook", classes="form-label")
                yield Select(
                    [("Add Bills to Existing Meters", BILLS), ("Create Meters", METERS)],
                    value=BILLS,
                    allow_blank=False,
                    id="pm-what",
                    compact=True,
                )
            with Horizontal(classes="form-row"):
                yield Label("Scope", classes="form-label")
                yield Select(SCOPES, value="all", allow_blank=False, id="pm-scope", compact=True)
                yield Input(placeholder="ids, comma-separated", id="pm-ids", compact=True)
            with Horizontal(classes="form-row", id="pm-period"):
                yield Label("From", classes="form-label")
                yield Input(placeholder="YYYY-MM-DD (optional)", id="pm-from", compact=True)
                yield Label("To", classes="form-label")
                yield Input(placeholder="YYYY-MM-DD (optional)", id="pm-to", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("Save to", classes="form-label")
                yield Input(id="pm-path", compact=True)
            with Horizontal(classes="form-row"):
                yield Checkbox("Also readings exported before", id="pm-all", compact=True)
                yield Button("Export", id="pm-run", variant="primary", compact=True)
                yield Button("Close", id="pm-close", compact=True)
            yield Static("", id="pm-note")
            with VerticalScroll(id="pm-summary"):
                yield Static("", id="pm-result")

    def on_mount(self) -> None:
        self._default_path()

    def _default_path(self) -> None:
        what = self.query_one("#pm-what", Select).value
        name = f"pm_{'bills' if what == BILLS else 'meters'}_{self.today.isoformat()}.xlsx"
        self.query_one("#pm-path", Input).value = str(self.folder / name)

    @on(Select.Changed, "#pm-what")
    def _what_changed(self) -> None:
        bills = self.query_one("#pm-what", Select).value == BILLS
        self.query_one("#pm-period").display = bills
        self.query_one("#pm-all").display = bills
        self._default_path()

    def note(self, text: str) -> None:
        self.query_one("#pm-note", Static).update(Text(text))

    @on(Button.Pressed, "#pm-run")
    def action_export(self) -> None:
        try:
            request = read_form(
                str(self.query_one("#pm-what", Select).value),
                str(self.query_one("#pm-scope", Select).value),
                self.query_one("#pm-ids", Input).value,
                self.query_one("#pm-from", Input).value,
                self.query_one("#pm-to", Input).value,
                self.query_one("#pm-path", Input).value,
                self.query_one("#pm-all", Checkbox).value,
            )
        except ValueError as exc:
            self.note(str(exc))
            return
        if request.path.exists():
            self.note(f"{request.path} exists: choose another file name.")
            return
        self.note("")
        self.query_one("#pm-result", Static).update(Text("Exporting…"))
        self.query_one("#pm-run", Button).disabled = True
        self.run_export(request)

    @work(exclusive=True, group="pm-export", exit_on_error=False)
    async def run_export(self, request: Request) -> None:
        from bpsync.pm_export.export import ScopeError, export_bills, export_meters

        try:
            if request.what == BILLS:
                outcome = await export_bills(
                    self.client,
                    self.profile,
                    request.path,
                    scope=request.scope,
                    start=request.start,
                    end=request.end,
                    everything=request.everything,
                )
            else:
                outcome = await export_meters(
                    self.client, self.profile, request.path, scope=request.scope
                )
        except (E.BPSyncError, ConfigError, ScopeError, ValueError, OSError) as exc:
            self.post_message(PmExportFailed(describe(exc)))
            return
        self.post_message(PmExportFinished(outcome))

    def on_pm_export_finished(self, message: PmExportFinished) -> None:
        self.outcome = message.outcome
        self.query_one("#pm-run", Button).disabled = False
        self.query_one("#pm-result", Static).update(summary_text(message.outcome))

    def on_pm_export_failed(self, message: PmExportFailed) -> None:
        self.query_one("#pm-run", Button).disabled = False
        self.query_one("#pm-result", Static).update("")
        self.note(f"Export: {message.message}")

    @on(Button.Pressed, "#pm-close")
    def action_close(self) -> None:
        self.dismiss(self.outcome)

    def on_worker_state_changed(self, event: Any) -> None:
        from textual.worker import WorkerState

        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.query_one("#pm-run", Button).disabled = False
            self.note(f"Unexpected error: {describe(event.worker.error)}")
