"""Import wizard: pick a file, a sheet, check the preview, map columns to fields (a matching or
suggested template, editable, savable), then validate against the service's meters and stored
readings, all through `bpsync.ingest` (the engine of `bpsync import`); nothing is re-implemented
here: the meters and stored readings come from the engine's fetchers, and the plan, the submit
(journaled, resumable) and the reject report from `import_file`, exactly as `bpsync import`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Button,
    ContentSwitcher,
    DataTable,
    DirectoryTree,
    Input,
    Label,
    ProgressBar,
    Select,
    Static,
)

from bpsync.ingest import (
    FIELDS,
    ImportSummary,
    IngestError,
    Template,
    TemplateError,
    cell_text,
    find_column,
    list_templates,
    load_meter_map,
    match_template,
    save_template,
)
from bpsync.paths import user_templates_dir
from bpsync.tui.format import DASH
from bpsync.tui.messages import SubmitProgress, WizardStep
from bpsync.tui.screens.base import AppScreen
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.plain import PlainTable
from bpsync.tui.widgets.topbar import TopBar

if TYPE_CHECKING:
    from bpsync.ingest import ImportOptions, Prepared, Table, ValidationResult

STEPS = ("file", "preview", "mapping", "validate", "plan")
FOCUS = {
    "file": "#files",
    "preview": "#preview-table",
    "mapping": "#mapping-table",
    "validate": "#problems",
    "plan": "#submit",
}
PREVIEW_ROWS = 20
IMPORTABLE = {".csv", ".tsv", ".txt", ".xlsx", ".xlsm", ".xml"}


class ImportFiles(DirectoryTree):
    """Folders, and files of a format the importer reads."""

    def filter_paths(self, paths: Any) -> Any:
        return [
            p
            for p in paths
            if not p.name.startswith(".") and (p.is_dir() or p.suffix.casefold() in IMPORTABLE)
        ]


@dataclass
class Opened:
    path: Path
    table: Table
    sheets: list[str]
    preview: list[tuple[int, tuple[str, ...]]]
    templates: list[Template]
    template: Template
    matched: bool
    missing: tuple[str, ...]


@dataclass
class Validated:
    prepared: Prepared
    result: ValidationResult
    meters_known: int


class WizardProgress:
    """The engine's Progress, turned into messages for the screen (called on the app's loop)."""

    def __init__(self, screen: ImportWizardScreen) -> None:
        self.screen = screen
        self.total = 0
        self.done = 0
        self.accepted = 0
        self.rejected = 0

    def start(self, total: int, description: str) -> None:
        self.total = total
        self._post()

    def advance(self, accepted: int, rejected: int, skipped: int) -> None:
        self.done += accepted + rejected + skipped
        self.accepted += accepted
        self.rejected += rejected
        self._post()

    def close(self) -> None:
        self._post()

    def _post(self) -> None:
        self.screen.post_message(
            SubmitProgress(self.done, self.total, self.accepted, self.rejected)
        )


class WizardState(AppScreen):
    """The wizard's state and how it moves between steps; each step below adds its own handlers,
    and `ImportWizardScreen` puts them together (so no class holds all five steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.step = "file"
        self.opened: Opened | None = None
        self.template: Template | None = None
        self.validated: Validated | None = None
        self.problems: list[Any] = []
        self.submitting = False

    def _show_step(self) -> None:
        self.query_one(ContentSwitcher).current = self.step
        marks = []
        for i, name in enumerate(STEPS, 1):
            label = f"{i} {name}"
            marks.append(f"[b reverse] {label} [/]" if name == self.step else f" {label} ")
        self.query_one("#wizard-steps", Static).update("".join(marks))
        # Focus the step's main widget, so the wizard's keys are not taken by a hidden input.
        self.query_one(FOCUS[self.step]).focus()

    def go(self, step: str) -> None:
        self.step = step
        self._show_step()


def _in_file(headers: list, names: tuple[str, ...]) -> bool:
    """Whether the import finds a column for these names (the same rule: `Usage (kWh)` is in a
    file whose header reads `Usage (kWh)`, and a name two columns share is there)."""
    try:
        return bool(names) and find_column(headers, names) is not None
    except ValueError:  # AmbiguousColumn: present, twice
        return True


class MappingStep(WizardState):
    """Step 3: which column feeds each field; edit it, save it as a template."""

    def set_template(self, template: Template, missing: tuple[str, ...] = ()) -> None:
        self.template = template
        self.validated = None
        rows = self.query_one("#mapping-table", DataTable)
        rows.clear()
        headers = self.opened.table.headers if self.opened else []
        meter = template.meter
        rows.add_row("meter", ", ".join(meter.column) or DASH, f"by {meter.by}", key="meter")
        if meter.by == "building_name":
            rows.add_row("building", ", ".join(meter.building_column), "name", key="building")
            rows.add_row("meter_name", ", ".join(meter.name_column), "name", key="meter_name")
        for field in FIELDS:
            names = template.names_for(field)
            found = _in_file(headers, names)
            column = Text(", ".join(names) or DASH, style="" if found or not names else "red")
            rows.add_row(field, column, "" if found or not names else "not in this file", key=field)
        info = f"Template {template.name} · layout {template.layout}"
        if template.fixed_unit:
            info += f" · unit {template.fixed_unit}"
        if missing:
            info += " · still missing: " + "; ".join(missing)
        self.query_one("#mapping-info", Static).update(Text(info))
        self.query_one("#template-name", Input).value = (
            template.name if template.name != "suggested" else ""
        )

    @on(Select.Changed, "#template")
    def _template(self, event: Select.Changed) -> None:
        if not self.opened or not isinstance(event.value, str):
            return
        chosen = next((t for t in self.opened.templates if t.name == event.value), None)
        if chosen is None and event.value == self.opened.template.name:
            chosen = self.opened.template
        if chosen is not None:
            self.set_template(chosen)

    @on(Select.Changed, "#column")
    def _column(self, event: Select.Changed) -> None:
        """Point the highlighted field at the chosen column."""
        if self.template is None or not isinstance(event.value, str):
            return
        rows = self.query_one("#mapping-table", DataTable)
        if rows.row_count == 0:
            return
        field = str(rows.coordinate_to_cell_key(rows.cursor_coordinate).row_key.value)
        t = self.template
        if field == "meter":
            t = replace(t, meter=replace(t.meter, column=(event.value,)))
        elif field == "building":
            t = replace(t, meter=replace(t.meter, building_column=(event.value,)))
        elif field == "meter_name":
            t = replace(t, meter=replace(t.meter, name_column=(event.value,)))
        else:
            t = replace(t, columns={**t.columns, field: (event.value,)})
        cursor = rows.cursor_row
        self.set_template(t)
        rows.move_cursor(row=cursor)

    @on(Button.Pressed, "#save-template")
    def _save(self) -> None:
        name = self.query_one("#template-name", Input).value.strip()
        if self.template is None or not name:
            self.inline("Give the template a name (lower case letters, digits, - or _).")
            return
        self.save(replace(self.template, name=name, path=None))

    @work(thread=True, group="wizard-save", exit_on_error=False)
    def save(self, template: Template) -> None:
        try:
            path = save_template(template, user_templates_dir(), overwrite=True)
        except (TemplateError, OSError) as exc:
            self.app.call_from_thread(self.inline, f"Not saved: {exc}")
            return
        self.app.call_from_thread(self._saved, template, path)

    def _saved(self, template: Template, path: Path) -> None:
        self.template = template
        if self.opened is not None:
            self.opened.templates = [
                template,
                *(t for t in self.opened.templates if t.name != template.name),
            ]
            select = self.query_one("#template", Select)
            with select.prevent(Select.Changed):
                select.set_options([(t.name, t.name) for t in self.opened.templates])
                select.value = template.name
        self.inline(f"Saved template {template.name} to {path}.", error=False)
        self.notify(f"Template {template.name} saved.")


class FileStep(MappingStep):
    """Steps 1 and 2: pick a file and a sheet, read the preview, choose a matching or suggested
    template (shown by the mapping step)."""

    @on(DirectoryTree.FileSelected, "#files")
    def _file(self, event: DirectoryTree.FileSelected) -> None:
        self.open_file(Path(event.path), None)

    @on(Select.Changed, "#sheet")
    def _sheet(self, event: Select.Changed) -> None:
        if self.opened and isinstance(event.value, str) and event.value != self.opened.table.sheet:
            self.open_file(self.opened.path, event.value)

    @work(thread=True, exclusive=True, group="wizard-open", exit_on_error=False)
    def open_file(self, path: Path, sheet: str | None) -> None:
        """Read the header and the first rows (a thread: spreadsheets are parsed synchronously,
        and the engine's readers, with pandas and pyarrow, load here on first use rather than
        when the wizard opens)."""
        from bpsync.ingest import detect_format, open_table

        try:
            fmt = detect_format(path)
            templates = list_templates([user_templates_dir()])
            expected = set().union(*(t.expected_keys() for t in templates))
            table = open_table(path, fmt=fmt, sheet=sheet, expected=expected)
            sheets = [table.sheet, *table.other_sheets] if table.sheet else []
            preview = []
            for row in table.rows():
                preview.append((row.number, tuple(cell_text(c) for c in row.cells)))
                if len(preview) >= PREVIEW_ROWS:
                    break
            match = match_template(table.headers, templates, fmt=fmt)
            if match is not None:
                template, missing = match.template, ()
            else:
                # The import's own inference, so the wizard proposes what the import does
                # (loaded here: it reads files, which the app's start must not pay for).
                from bpsync.ingest import suggest_for_table

                suggestion = suggest_for_table(table)
                template, missing = suggestion.template, suggestion.missing
        except (IngestError, OSError, ValueError) as exc:
            self.app.call_from_thread(self.inline, f"{path.name}: {exc}")
            return
        opened = Opened(
            path, table, sheets, preview, templates, template, match is not None, missing
        )
        self.post_message(WizardStep("opened", opened))

    def _opened(self, opened: Opened) -> None:
        self.opened = opened
        self.validated = None
        table = opened.table
        sheet = self.query_one("#sheet", Select)
        with sheet.prevent(Select.Changed):
            sheet.set_options([(s, s) for s in opened.sheets])
            if table.sheet:
                sheet.value = table.sheet
        sheet.display = bool(opened.sheets)
        self.query_one("#table-info", Static).update(Text(table.describe()))
        preview = self.query_one("#preview-table", DataTable)
        preview.clear(columns=True)
        preview.add_columns("Row", *(h.text or f"({h.index + 1})" for h in table.headers))
        width = len(table.headers)
        for number, cells in opened.preview:
            cells = (cells + ("",) * width)[:width]
            preview.add_row(str(number), *cells)
        names = [(t.name, t.name) for t in opened.templates]
        if not opened.matched:
            names.insert(0, (f"{opened.template.name} (suggested)", opened.template.name))
        select = self.query_one("#template", Select)
        with select.prevent(Select.Changed):
            select.set_options(names)
            select.value = opened.template.name
        self.query_one("#column", Select).set_options(
            [(h.text, h.text) for h in table.headers if h.text]
        )
        self.set_template(opened.template, opened.missing)
        self.inline("")
        self.go("preview")


class ValidateStep(WizardState):
    """Step 4: the engine's checks against the service's meters and stored readings."""

    @work(exclusive=True, group="wizard-validate", exit_on_error=False)
    async def run_validation(self) -> None:
        """The engine's own checks: its portfolio and stored-readings fetchers, `prepare`, `check`
        (the same calls `bpsync import` makes before it journals anything)."""
        from bpsync.ingest import check, fetch_existing, fetch_portfolio, prepare  # loaded by now

        if self.opened is None or self.template is None:
            return
        summary = self.query_one("#validation-summary", Static)
        summary.update("Fetching your meters…")
        profile = self.bpsync.connection.name if self.bpsync.connection else "default"
        try:
            meter_map = await asyncio.to_thread(load_meter_map, profile)
        except ValueError as exc:
            self.inline(str(exc))
            return
        portfolio = await self.guarded("Meters", fetch_portfolio(self.client, meter_map))
        if portfolio is None:
            return
        summary.update("Reading and checking the file…")
        try:
            prepared = await asyncio.to_thread(
                prepare,
                self.opened.path,
                self.template,
                catalog=portfolio.catalog,
                template_dirs=[user_templates_dir()],
                sheet=self.opened.table.sheet,
            )
        except (IngestError, OSError, ValueError) as exc:
            self.inline(f"The file cannot be imported: {exc}")
            return
        ranges = prepared.collected.meter_ranges()
        existing = await self.guarded(
            "Stored readings",
            fetch_existing(self.client, portfolio.building_of, ranges, portfolio.latest),
        )
        if existing is None:
            return
        today = self.bpsync.clock().date()
        result = await asyncio.to_thread(check, prepared, existing=existing, today=today)
        known = len(portfolio.catalog.meters)
        self.post_message(WizardStep("validated", Validated(prepared, result, known)))

    def _validated(self, validated: Validated) -> None:
        self.validated = validated
        result = validated.result
        s = result.summary()
        text = (
            f"{s['rows_read']} rows read · [b]{s['readings']}[/b] readings for {s['meters']} "
            f"meter(s) pass · [b red]{s['rejected_rows']}[/b red] rows rejected "
            f"({s['errors']} errors) · {s['warnings']} warnings · "
            f"{s['already_stored']} already stored"
        )
        self.query_one("#validation-summary", Static).update(text)
        table = self.query_one("#problems", DataTable)
        table.clear()
        self.problems = sorted(result.problems, key=lambda p: (p.where.row or 0, p.code))
        for p in self.problems:
            style = "bold red" if p.is_error else "yellow"
            column = p.where.column or ""
            if p.where.letter:
                column = f"{column} ({p.where.letter})"
            table.add_row(
                Text(str(p.where.row or DASH), style=style),
                column,
                p.value or "",
                Text(p.code, style=style),
                p.reason,
                " | ".join(p.row_values),
            )
        if not result.problems:
            self.inline("No problems found.", error=False)

    @on(DataTable.RowHighlighted, "#problems")
    def _explain(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted problem in full: where, what and why (the table truncates)."""
        if not 0 <= event.cursor_row < len(self.problems):
            return
        p = self.problems[event.cursor_row]
        value = f" · value {p.value!r}" if p.value else ""
        self.query_one("#problem-detail", Static).update(
            Text.assemble(
                (f"{p.severity.upper()} {p.code}", "bold red" if p.is_error else "bold yellow"),
                f" · {p.where}{value}\n{p.reason}",
            )
        )


class PlanStep(WizardState):
    """Step 5: the plan (a dry run), the journaled submit with live counts, and the summary."""

    def options(self, dry_run: bool) -> ImportOptions:
        from bpsync.ingest import ImportOptions

        assert self.opened is not None and self.template is not None
        return ImportOptions(
            template=self.template.name,
            sheet=self.opened.table.sheet,
            dry_run=dry_run,
            template_dirs=[user_templates_dir()],
            today=self.bpsync.clock().date(),
        )

    def _saved_template(self) -> bool:
        """The engine reads the template by name (and again for the reject report): an edited
        mapping must be saved first."""
        if self.template is None or self.opened is None:
            return False
        known = {t.name: t for t in self.opened.templates}
        return known.get(self.template.name) == self.template

    def _plan(self) -> None:
        self.query_one("#submit", Button).disabled = True
        self.query_one("#submit-progress", ProgressBar).display = False
        if not self._saved_template():
            self.query_one("#plan-info", Static).update(
                "The mapping was changed: save it as a template (step 3) so the import, and any "
                "later import of the same layout, can use it."
            )
            return
        self.query_one("#plan-info", Static).update("Planning…")
        self.plan_import()

    @work(exclusive=True, group="wizard-plan", exit_on_error=False)
    async def plan_import(self) -> None:
        """A dry run of the engine: the plan and its time under the learned rate limits."""
        from bpsync.ingest import import_file

        assert self.opened is not None
        connection = self.bpsync.connection
        profile = connection.name if connection else "default"
        summary = await self.guarded(
            "Plan", import_file(self.client, profile, self.opened.path, self.options(True))
        )
        if summary is not None:
            self.post_message(WizardStep("planned", summary))

    def _planned(self, summary: ImportSummary) -> None:
        plan = summary.plan or {}
        lines = [summary.message or ""]
        if plan:
            limits = plan.get("limits", {})
            principal = limits.get("principal", {})
            bulk = limits.get("bulk", {})
            lines.append(
                f"{plan.get('readings', 0)} readings · {plan.get('meters', 0)} meter(s) · "
                f"{plan.get('upload_calls', 0)} upload(s) + "
                f"{plan.get('batch_calls', 0)} batch call(s) + {plan.get('single_calls', 0)} "
                f"single call(s) · about {plan.get('estimated_seconds', 0)} s "
                f"(bound by {plan.get('bound_by', '?')})"
            )
            lines.append(
                f"Limits: {principal.get('limit', '?')} per {principal.get('window', '?')} s "
                f"({principal.get('kind', 'key')}), bulk {bulk.get('limit', '?')} per "
                f"{bulk.get('window', '?')} s, {int(limits.get('headroom', 0) * 100)} % left for "
                "other traffic"
            )
        if summary.rejected:
            lines.append(f"{summary.rejected} row(s) will be rejected (see step 4).")
        self.query_one("#plan-info", Static).update(Text("\n".join(lines)))
        self.query_one("#submit", Button).disabled = summary.status != "dry-run" or not (
            summary.pending or summary.rejected
        )

    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        if self.step != "plan" or self.submitting or self.query_one("#submit", Button).disabled:
            return
        self.submitting = True
        self.query_one("#submit", Button).disabled = True
        bar = self.query_one("#submit-progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.submit()

    @work(exclusive=True, group="wizard-submit", exit_on_error=False)
    async def submit(self) -> None:
        """The real import: journaled, paced, resumable; cancelling leaves it resumable."""
        from bpsync.ingest import import_file

        assert self.opened is not None
        connection = self.bpsync.connection
        profile = connection.name if connection else "default"
        try:
            summary = await self.guarded(
                "Import",
                import_file(
                    self.client,
                    profile,
                    self.opened.path,
                    self.options(False),
                    progress=WizardProgress(self),
                ),
            )
        finally:
            self.submitting = False
        if summary is not None:
            self.post_message(WizardStep("submitted", summary))

    def action_stop(self) -> None:
        """Stop sending; the journal keeps what was sent, and submitting again resumes."""
        if self.submitting:
            self.workers.cancel_group(self, "wizard-submit")
            self.submitting = False
            self.query_one("#submit", Button).disabled = False
            self.inline(
                "Import stopped: submit again (or `bpsync import --resume`) to send the rest."
            )

    def on_submit_progress(self, message: SubmitProgress) -> None:
        bar = self.query_one("#submit-progress", ProgressBar)
        if message.total:
            bar.update(total=message.total, progress=message.done)
        self.query_one("#submit-counts", Static).update(
            f"sent {message.done} of {message.total} · accepted {message.accepted} · "
            f"refused by the service {message.rejected}"
        )

    def _submitted(self, summary: ImportSummary) -> None:
        lines = [
            f" · accepted {summary.accepted} · rejected rows "
            f"{summary.rejected} · skipped {summary.skipped} · not sent {summary.pending} · "
            f"{summary.requests} request(s) in {summary.seconds:.1f} s"
        ]
        if summary.message:
            lines.append(summary.message)
        if summary.reject_report:
            lines.append(f"Reject report: {summary.reject_report}")
        self.query_one("#summary", Static).update(
            Text.assemble((summary.status, "bold"), "\n".join(lines))
        )
        if summary.status == "complete":
            self.notify(f"Imported {summary.accepted} reading(s).")


class ImportWizardScreen(PlanStep, ValidateStep, FileStep):
    HELP_TITLE = "Import wizard"
    HELP = (
        "1 pick a file (CSV, XLSX or Green Button XML) · 2 pick the sheet and check the preview · "
        "3 check which column feeds each field (a matching template is chosen, or a mapping is "
        "suggested from the headers); change a field by highlighting it and choosing a column; "
        "save the mapping as a template · 4 validate: every problem names its row and why · "
        "5 plan (calls, batches, time under the rate limits), submit with live counts, and the "
        "summary with the reject report's path. Imports are journaled: an interrupted one "
        "resumes where it stopped."
    )
    BINDINGS = [
        Binding("ctrl+right", "next", "Next", id="wizard.next"),
        Binding("ctrl+left", "previous", "Back a step", id="wizard.previous"),
        Binding("ctrl+s", "submit", "Submit", id="wizard.submit"),
        Binding("ctrl+x", "stop", "Stop import", id="wizard.stop"),
    ]

    def compose(self) -> ComposeResult:
        yield TopBar("Import")
        yield Static("", id="wizard-steps")
        with ContentSwitcher(initial="file", id="wizard-body"):
            with Vertical(id="file"):
                yield Label("Choose a file (enter opens it):")
                yield ImportFiles(self.bpsync.import_dir, id="files")
            with Vertical(id="preview"):
                with Horizontal(classes="toolbar"):
                    yield Label("Sheet")
                    yield Select([], prompt="sheet", id="sheet", compact=True)
                yield Static("", id="table-info")
                yield PlainTable(id="preview-table", zebra_stripes=True)
            with Vertical(id="mapping"):
                with Horizontal(classes="toolbar"):
                    yield Label("Template")
                    yield Select([], prompt="template", id="template", compact=True)
                    yield Label("Column")
                    yield Select([], prompt="column for the field", id="column", compact=True)
                yield Static("", id="mapping-info")
                yield PlainTable(id="mapping-table", cursor_type="row")
                with Horizontal(classes="toolbar"):
                    yield Input(placeholder="template name", id="template-name", compact=True)
                    yield Button("Save as template", id="save-template", compact=True)
            with Vertical(id="validate"):
                yield Static("", id="validation-summary")
                yield PlainTable(id="problems", cursor_type="row", zebra_stripes=True)
                yield Static("", id="problem-detail")
            with Vertical(id="plan"):
                yield Static("", id="plan-info")
                yield Button("Submit", id="submit", variant="primary", compact=True)
                yield ProgressBar(id="submit-progress", show_eta=False)
                yield Static("", id="submit-counts")
                yield Static("", id="summary")
        with Horizontal(classes="toolbar", id="wizard-buttons"):
            yield Button("◀ Back", id="wiz-back", compact=True)
            yield Button("Next ▶", id="wiz-next", variant="primary", compact=True)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#mapping-table", DataTable).add_columns("Field", "Column", "Read as")
        self.query_one("#problems", DataTable).add_columns(
            "Row", "Column", "Value", "Problem", "Why", "Row as in the file"
        )
        self._show_step()

    def action_next(self) -> None:
        if self.step == "file":
            self.inline("Choose a file first.")
        elif self.step == "preview" and self.opened is not None:
            self.go("mapping")
        elif self.step == "mapping" and self.template is not None:
            self.go("validate")
            self.run_validation()
        elif self.step == "validate" and self.validated is not None:
            self.go("plan")
            self._plan()

    def action_previous(self) -> None:
        if self.step != "file":
            self.go(STEPS[STEPS.index(self.step) - 1])

    def action_back(self) -> None:
        self.action_previous()

    @on(Button.Pressed, "#wiz-next")
    def _next_pressed(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#wiz-back")
    def _back_pressed(self) -> None:
        self.action_previous()

    def on_wizard_step(self, message: WizardStep) -> None:
        if message.step == "opened":
            self._opened(message.payload)
        elif message.step == "validated":
            self._validated(message.payload)
        elif message.step == "planned":
            self._planned(message.payload)
        elif message.step == "submitted":
            self._submitted(message.payload)
