"""A meter's replacement trail (issue 30, docs/corrections.md): every stored reading that
`bpsync import --update` replaced, or tried to, newest first: when, who, the file, the old
reading's period and figures, the readings that replaced it, and the outcome. Read from this
machine's import journal in a thread worker (the engine loads there, never at the app's start);
no request is made. `bpsync history METER` shows the same on the command line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from bpsync.tui.format import DASH, number
from bpsync.tui.messages import TrailLoaded
from bpsync.tui.screens.base import AppScreen, failure
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.plain import PlainTable, right
from bpsync.tui.widgets.topbar import TopBar

HOW_THEY_GET_HERE = (
    "Corrections and rebills of stored readings are listed here once a corrected file is "
    "imported with `bpsync import FILE --update` (a dry run first lists what it would replace; "
    "docs/corrections.md). The trail is kept in the import journal of the machine that ran "
    "the import."
)


def trail_columns(unit: str) -> tuple[Any, ...]:
    """The table's headings: the periods, consumption (in the meter's unit) and outcome first, so
    they fit a narrow terminal; cost, demand, file and who follow (and the detail shows all)."""
    return (
        "When",
        "Kind",
        "Old period",
        right(f"Old {unit}"),
        "New period",
        right(f"New {unit}"),
        "Outcome",
        right("Old cost"),
        right("New cost"),
        right("Old kW"),
        right("New kW"),
        "File",
        "Who",
    )


def when_text(when: str | None) -> str:
    """The journal's ISO time (UTC) as the app shows moments: `2026-11-20 09:30`."""
    return (when or DASH).replace("T", " ")[:16]


def period(r: Mapping[str, Any]) -> str:
    return f"{r.get('start_date', DASH)}..{r.get('end_date', DASH)}"


def _lines(values: Sequence[str]) -> Text:
    return right("\n".join(values) or DASH)


def outcome(entry: Mapping[str, Any]) -> str:
    """What became of the stored reading and the rows replacing it, in a few words."""
    status = entry.get("status")
    fates = {str(n.get("status")) for n in entry.get("new", [])}
    if status == "deleted":
        if fates <= {"accepted"}:
            return "replaced"
        if "rejected" in fates:
            return "deleted; new refused"
        return "deleted; new not stored yet (resume)"
    return {
        "refused": "not replaced",
        "restored": "put back",
        "planned": "waiting (resume)",
        "deleting": "interrupted (resume)",
    }.get(str(status), str(status))


def trail_cells(entry: Mapping[str, Any]) -> list[Any]:
    """One table row for a replaced reading (a rebill's several new readings one per line).
    Every cell is plain Text: file names and reasons are never read as markup."""
    old: Mapping[str, Any] = entry.get("old", {})
    new: Sequence[Mapping[str, Any]] = entry.get("new", [])
    return [
        when_text(entry.get("when")),
        str(entry.get("kind", DASH)),
        period(old),
        right(number(old.get("consumption"), 1)),
        "\n".join(period(n) for n in new) or DASH,
        _lines([number(n.get("consumption"), 1) for n in new]),
        outcome(entry),
        right(number(old.get("cost"), 2)),
        _lines([number(n.get("cost"), 2) for n in new]),
        right(number(old.get("demand_kw"), 1)),
        _lines([number(n.get("demand_kw"), 1) for n in new]),
        str(entry.get("file", DASH)),
        str(entry.get("who", DASH)),
    ]


def figures(r: Mapping[str, Any], unit: str) -> str:
    text = f"{period(r)}  {number(r.get('consumption'), 1)} {unit}"
    if r.get("cost") is not None:
        text += f"  cost {number(r['cost'], 2)}" + (
            f" {r['cost_currency']}" if r.get("cost_currency") else ""
        )
    if r.get("demand_kw") is not None:
        text += f"  demand {number(r['demand_kw'], 1)} kW"
    return text


def detail(entry: Mapping[str, Any], unit: str) -> Text:
    """Everything about one replaced reading, whole (the table cuts long cells)."""
    old: Mapping[str, Any] = entry.get("old", {})
    lines = [
        f"{when_text(entry.get('when'))} UTC · {entry.get('who')} · {entry.get('file')} · "
        f"{entry.get('kind')} · import {entry.get('import_id')}",
        f"Old  {old.get('id', DASH)}  {figures(old, unit)}",
    ]
    for n in entry.get("new", []):
        fate = str(n.get("status"))
        if n.get("reading_id"):
            fate += f" as {n['reading_id']}"
        lines.append(f"New  row {n.get('row', DASH)}  {figures(n, unit)}  {fate}")
    if not entry.get("new"):
        lines.append("New  none")
    line = f"Outcome  {outcome(entry)}"
    if entry.get("reason"):
        line += f": {entry['reason']}"
    if "resume" in outcome(entry):
        line += f". Run `bpsync import {entry.get('file')} --update --resume` to finish it."
    lines.append(line)
    return Text("\n".join(lines))


class ReplacementHistoryScreen(AppScreen):
    """The replaced readings of one meter (opened with `h` on the building's meters)."""

    HELP_TITLE = "Replaced readings"
    HELP = (
        "The meter's readings replaced by `bpsync import --update`, newest first: when, who (the "
        "OS user and the bpsync profile), the file, the kind (correction or rebill), the stored "
        "reading's period, consumption, cost and demand, the readings that replaced it, and the "
        "outcome (replaced; not replaced: a locked period; put back; waiting for --resume). The "
        "highlighted row is shown whole below the table. Read from this machine's import "
        "journal: " + HOW_THEY_GET_HERE
    )
    BINDINGS = [Binding("r", "reload", "Reload", id="replacements.reload")]

    def __init__(
        self, meter_id: str, meter_name: str = "", unit: str = "", where: str = ""
    ) -> None:
        super().__init__()
        self.meter_id = meter_id
        self.meter_name = meter_name or meter_id
        self.unit = unit
        self.where = where
        self.entries: list[dict[str, Any]] | None = None  # None until the journal is read

    def compose(self) -> ComposeResult:
        title = f"Replaced readings · {self.meter_name}"
        yield TopBar(f"{title} · {self.where}" if self.where else title)
        yield Static(Text("Reading the import journal…"), id="trail-title", classes="fields")
        yield PlainTable(id="trail", cursor_type="row", zebra_stripes=True)
        yield Static("", id="trail-detail", classes="fields")
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        table = self.query_one("#trail", DataTable)
        table.add_columns(*trail_columns(self.unit))
        table.focus()
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="trail", exit_on_error=False)
    def load(self) -> None:
        # SQLite and the engine's journal module, off the UI thread; the connection lives and
        # dies in this thread.
        try:
            from bpsync.ingest import Journal

            with Journal() as journal:
                entries = journal.replacements([self.meter_id])
        except Exception as exc:  # an unreadable journal: said on the screen, never a crash
            self.post_message(failure("Import journal", exc))
            return
        self.post_message(TrailLoaded(self.meter_id, entries))

    def on_trail_loaded(self, message: TrailLoaded) -> None:
        if message.meter_id != self.meter_id:
            return
        self.entries = message.entries
        table = self.query_one("#trail", DataTable)
        table.clear()
        title = self.query_one("#trail-title", Static)
        table.display = bool(message.entries)
        if not message.entries:
            title.update(
                Text(
                    f"No replaced readings for {self.meter_name} in this machine's import "
                    f"journal.\n\n{HOW_THEY_GET_HERE}"
                )
            )
            self.query_one("#trail-detail", Static).update("")
            return
        kinds = [e.get("kind") for e in message.entries]
        title.update(
            Text(
                f"{len(kinds)} stored reading(s) of {self.meter_name} replaced or tried, newest "
                f"first: {kinds.count('correction')} by corrections, "
                f"{kinds.count('rebill')} by rebills."
            )
        )
        for i, entry in enumerate(message.entries):
            new = max(1, len(entry.get("new", [])))
            table.add_row(*trail_cells(entry), key=str(i), height=new)
        self._show_detail(0)

    def selected_id(self) -> str | None:
        """c copies the highlighted row's stored (old) reading id."""
        table = self.query_one("#trail", DataTable)
        if not self.entries or not table.row_count:
            return None
        found = self.entries[table.cursor_row].get("old", {}).get("id")
        return str(found) if found else None

    @on(DataTable.RowHighlighted, "#trail")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(int(str(event.row_key.value)))

    def _show_detail(self, index: int) -> None:
        if self.entries and 0 <= index < len(self.entries):
            text = detail(self.entries[index], self.unit)
            self.query_one("#trail-detail", Static).update(text)
