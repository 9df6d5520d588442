"""Reports: the types, a form to generate one, live status with elapsed time until it is complete
or failed, download with a progress bar to a chosen folder, and the list of past reports."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Input, Label, ProgressBar, Select, Static

from bpsync.client import errors as E
from bpsync.client.models import Report, ReportStatus, ReportTemplate, ReportType
from bpsync.tui.format import DASH, PROPERTY_TYPES, elapsed, moment, size
from bpsync.tui.messages import (
    DownloadFinished,
    DownloadProgress,
    ReportCatalogue,
    ReportsListed,
    ReportUpdated,
)
from bpsync.tui.screens.base import AppScreen, failure
from bpsync.tui.widgets.country import CountryInput
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.plain import PlainTable
from bpsync.tui.widgets.topbar import TopBar

COLUMNS = ("Created", "Type", "Fmt", "Status", "Time", "Size")
MAX_POLL_SECONDS = 5.0


def default_period(today: dt.date) -> tuple[dt.date, dt.date]:
    """The last whole calendar year: valid for every type (whole months, one calendar year)."""
    return dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31)


def status_text(report: Report, now: dt.datetime) -> tuple[Text, str]:
    """(status cell, time cell): elapsed while processing, the generation time when done."""
    if report.status == ReportStatus.PROCESSING:
        return Text("processing", style="bold yellow"), elapsed(report.created_at, now)
    if report.status == ReportStatus.COMPLETE:
        took = elapsed(report.created_at, report.completed_at) if report.completed_at else DASH
        return Text("complete", style="bold green"), took
    return Text("failed", style="bold red"), report.reason_code or DASH


def report_cells(report: Report, now: dt.datetime) -> tuple[Any, ...]:
    """The report's row in the list (COLUMNS)."""
    status, took = status_text(report, now)
    return (
        moment(report.created_at),
        report.type,
        report.format,
        status,
        took,
        size(report.file_size_bytes),
    )


def detail_text(report: Report, now: dt.datetime) -> Text:
    """The highlighted report in full under the list: id, type, period, scope, status, link."""
    status, took = status_text(report, now)
    what = report.building_id or ", ".join(f"{k}={v}" for k, v in (report.filters or {}).items())
    period = report.reporting_period
    span = f"{period.start} → {period.end}" if period else DASH
    expires = (
        f" · link valid until {moment(report.download_expires_at)}"
        if report.download_expires_at
        else ""
    )
    return Text.assemble(
        (report.id, "bold"),
        f" · {report.type} {report.format} · {span}",
        f" · {what or 'all buildings'} · ",
        status,
        f" {took}{expires}",
    )


class ReportForm(Vertical):
    """The request form: type and format, period, a building (building reports) or filters and a
    template (organisation reports), and the folder to save into."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.types: dict[str, ReportType] = {}

    def compose(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            yield Label("Type", classes="form-label")
            yield Select([], prompt="report type", id="r-type", compact=True)
            yield Label("Format", classes="form-label")
            yield Select([], prompt="format", id="r-format", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("Period", classes="form-label")
            yield Input(placeholder="YYYY-MM-DD", id="r-start", compact=True)
            yield Label("to", classes="form-label-short")
            yield Input(placeholder="YYYY-MM-DD", id="r-end", compact=True)
        with Horizontal(classes="form-row", id="row-building"):
            yield Label("Building", classes="form-label")
            yield Input(placeholder="bld_…", id="r-building", compact=True)
        with Horizontal(classes="form-row", id="row-filters"):
            yield Label("Filters", classes="form-label")
            yield Select(
                [(t, t) for t in PROPERTY_TYPES], prompt="any use", id="r-ftype", compact=True
            )
            yield CountryInput(id="r-fcountry")
            yield Select([], prompt="template", id="r-template", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("Save to", classes="form-label")
            yield Input(id="r-folder", compact=True)
            yield Button("Generate", id="r-generate", variant="primary", compact=True)

    def show_catalogue(
        self, types: dict[str, ReportType], templates: list[ReportTemplate], wanted: str
    ) -> None:
        """Offer the service's report types (`wanted` first chosen) and saved templates."""
        self.types = types
        select = self.query_one("#r-type", Select)
        select.set_options([(f"{t.type} ({t.scope})", t.type) for t in types.values()])
        if wanted in self.types:
            select.value = wanted
        self.query_one("#r-template", Select).set_options([(t.name, t.id) for t in templates])
        self._scope_rows()

    @on(Select.Changed, "#r-type")
    def _type_changed(self) -> None:
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        formats = self.query_one("#r-format", Select)
        if chosen is None:
            formats.set_options([])
        else:
            formats.set_options([(f, f) for f in chosen.formats])
            formats.value = chosen.formats[0]
        self._scope_rows()

    def _scope_rows(self) -> None:
        chosen = self.types.get(str(self.query_one("#r-type", Select).value))
        building_scope = chosen is not None and chosen.scope == "building"
        self.query_one("#row-building").display = building_scope
        self.query_one("#row-filters").display = not building_scope
        self.query_one("#r-template").display = chosen is not None and chosen.type == "custom"

    def request_body(self) -> dict[str, Any]:
        """The form as a request body; raises ValueError naming the field to fix."""
        type_ = self.query_one("#r-type", Select).value
        format_ = self.query_one("#r-format", Select).value
        if not isinstance(type_, str) or type_ not in self.types:
            raise ValueError("Choose a report type.")
        if not isinstance(format_, str):
            raise ValueError("Choose a format.")
        chosen = self.types[type_]
        if format_ not in chosen.formats:
            raise ValueError(f"{type_} comes as {', '.join(chosen.formats)}.")
        period = {}
        for name, widget in (("start", "#r-start"), ("end", "#r-end")):
            text = self.query_one(widget, Input).value.strip()
            try:
                period[name] = dt.date.fromisoformat(text)
            except ValueError:
                raise ValueError(f"The period {name} must be a date YYYY-MM-DD.") from None
        body: dict[str, Any] = {"type": type_, "format": format_, "reporting_period": period}
        if chosen.scope == "building":
            building = self.query_one("#r-building", Input).value.strip()
            if not building:
                raise ValueError(f"{type_} is for one building: give its id (bld_…).")
            body["building_id"] = building
        else:
            ftype = self.query_one("#r-ftype", Select).value
            field = self.query_one("#r-fcountry", CountryInput)
            if field.problem:
                raise ValueError(field.problem)
            country = field.code
            filters = {
                k: v
                for k, v in {
                    "type": ftype if isinstance(ftype, str) else None,
                    "country": country,
                }.items()
                if v
            }
            if filters:
                body["filters"] = filters
            if type_ == "custom":
                template = self.query_one("#r-template", Select).value
                if not isinstance(template, str):
                    raise ValueError("A custom report needs a saved template.")
                body["template_id"] = template
        return body

    def folder(self, default: Path) -> Path:
        """The folder typed in the form, else `default`."""
        text = self.query_one("#r-folder", Input).value.strip()
        folder = Path(text).expanduser() if text else default
        return folder


class ReportsScreen(AppScreen):
    HELP_TITLE = "Reports"
    HELP = (
        "Choose a type and a format it allows, the reporting period, and a building (building "
        "reports) or filters (organisation reports), then Generate. The list shows every report, "
        "newest first, with live status. Highlight a complete report and press d to download it "
        "into the folder shown; an expired download link is renewed automatically."
    )
    BINDINGS = [
        Binding("ctrl+g", "generate", "Generate", id="reports.generate"),
        Binding("d", "download", "Download", id="reports.download"),
        Binding("r", "reload", "Reload", id="reports.reload"),
    ]

    def __init__(self, building_id: str | None = None) -> None:
        super().__init__()
        self.building_id = building_id
        self.types: dict[str, ReportType] = {}
        self.templates: list[ReportTemplate] = []
        self.reports: dict[str, Report] = {}
        self.watching: set[str] = set()

    def compose(self) -> ComposeResult:
        yield TopBar("Reports")
        yield ReportForm(id="report-form")
        yield PlainTable(id="reports", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="download-row"):
            yield Static("", id="report-detail")
            yield ProgressBar(id="download", show_eta=False)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        start, end = default_period(self.bpsync.clock().date())
        self.query_one("#r-start", Input).value = start.isoformat()
        self.query_one("#r-end", Input).value = end.isoformat()
        self.query_one("#r-folder", Input).value = str(self.bpsync.download_dir)
        if self.building_id:
            self.query_one("#r-building", Input).value = self.building_id
        self.query_one("#reports", DataTable).add_columns(*COLUMNS)
        self.query_one("#download", ProgressBar).display = False
        self.set_interval(1.0, self._tick)
        self.load_catalogue()
        self.load_list()

    # --- catalogue and form ----------------------------------------------------------------------

    @work(exclusive=True, group="catalogue", exit_on_error=False)
    async def load_catalogue(self) -> None:
        types = await self.guarded("Report types", self.client.reports.types())
        if types is None:
            return
        templates = await self.guarded("Templates", self.client.reports.templates().to_list())
        self.post_message(ReportCatalogue(types, templates or []))

    def on_report_catalogue(self, message: ReportCatalogue) -> None:
        self.types = {t.type: t for t in message.types}
        self.templates = message.templates
        wanted = "benchmark_certificate" if self.building_id else "portfolio_summary"
        self.query_one(ReportForm).show_catalogue(self.types, self.templates, wanted)

    # --- generating and watching -----------------------------------------------------------------

    @on(Button.Pressed, "#r-generate")
    def action_generate(self) -> None:
        try:
            body = self.query_one(ReportForm).request_body()
        except ValueError as exc:
            self.inline(str(exc))
            return
        self.inline("Asking for the report…", error=False)
        self.generate(body)

    @work(group="generate", exit_on_error=False)
    async def generate(self, body: dict[str, Any]) -> None:
        report = await self.guarded("Generate", self.client.reports.create(body))
        if report is not None:
            self.post_message(ReportUpdated(report))

    def watch_report(self, report_id: str) -> None:
        if report_id not in self.watching:
            self.watching.add(report_id)
            self.poll(report_id)

    @work(group="poll", exit_on_error=False)
    async def poll(self, report_id: str) -> None:
        """Re-read a processing report until it is complete or failed (ETags keep polls cheap)."""
        delay = self.bpsync.poll_interval
        try:
            while True:
                await asyncio.sleep(delay)
                report = await self.guarded("Report status", self.client.reports.get(report_id))
                if report is None:
                    return
                if report.status != ReportStatus.PROCESSING:
                    self.post_message(ReportUpdated(report))
                    return
                delay = min(MAX_POLL_SECONDS, delay * 1.5)
        finally:
            self.watching.discard(report_id)

    def on_report_updated(self, message: ReportUpdated) -> None:
        report = message.report
        previous = self.reports.get(report.id)
        new = previous is None
        self.reports[report.id] = report
        table = self.query_one("#reports", DataTable)
        if new:
            self._add_rows([report], top=True)
            table.move_cursor(row=0)
            self.inline(f"Report {report.id} requested: {report.type} as {report.format}.", False)
        else:
            self._update_row(report)
        if report.status == ReportStatus.PROCESSING:
            self.watch_report(report.id)
        elif (
            report.status == ReportStatus.COMPLETE
            and previous is not None
            and previous.status == ReportStatus.PROCESSING
        ):
            self.notify(f"Report {report.id} is ready ({size(report.file_size_bytes)}).")
        elif report.status == ReportStatus.FAILED:
            self.inline(f"Report {report.id} failed: {report.reason or report.reason_code}.")
        self._detail()

    # --- the list --------------------------------------------------------------------------------

    def action_reload(self) -> None:
        self.load_list()

    @work(exclusive=True, group="list", exit_on_error=False)
    async def load_list(self) -> None:
        page = await self.guarded("Reports", self.client.reports.list(per_page=100))
        if page is not None:
            self.post_message(ReportsListed(page.items, page.meta.total))

    def on_reports_listed(self, message: ReportsListed) -> None:
        table = self.query_one("#reports", DataTable)
        table.clear()
        self.reports = {r.id: r for r in message.items}
        self._add_rows(message.items)
        for report in message.items:
            if report.status == ReportStatus.PROCESSING:
                self.watch_report(report.id)
        self._detail()

    def _cells(self, report: Report) -> tuple[Any, ...]:
        return report_cells(report, self.bpsync.clock())

    def _add_rows(self, reports: list[Report], top: bool = False) -> None:
        table = self.query_one("#reports", DataTable)
        if top and table.row_count:
            # DataTable appends; rebuild so the newest stays first.
            ordered = sorted(
                self.reports.values(), key=lambda r: (r.created_at, r.id), reverse=True
            )
            table.clear()
            for r in ordered:
                table.add_row(*self._cells(r), key=r.id)
            return
        for r in reports:
            table.add_row(*self._cells(r), key=r.id)

    def _update_row(self, report: Report) -> None:
        table = self.query_one("#reports", DataTable)
        for column, value in zip(table.ordered_columns, self._cells(report), strict=True):
            table.update_cell(report.id, column.key, value)

    def _tick(self) -> None:
        for report in self.reports.values():
            if report.status == ReportStatus.PROCESSING:
                self._update_row(report)
        self._detail()

    def selected(self) -> Report | None:
        table = self.query_one("#reports", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return self.reports.get(str(key.value))

    @on(DataTable.RowHighlighted, "#reports")
    def _detail(self) -> None:
        report = self.selected()
        detail = self.query_one("#report-detail", Static)
        if report is None:
            detail.update("No reports yet.")
            return
        detail.update(detail_text(report, self.bpsync.clock()))

    # --- download --------------------------------------------------------------------------------

    @on(DataTable.RowSelected, "#reports")
    def action_download(self) -> None:
        report = self.selected()
        if report is None:
            return
        if report.status != ReportStatus.COMPLETE:
            self.inline(f"Report {report.id} is {report.status.value}: nothing to download yet.")
            return
        folder = self.query_one(ReportForm).folder(self.bpsync.download_dir)
        if not folder.is_dir():
            self.inline(f"{folder} is not a folder: create it or choose another.")
            return
        bar = self.query_one("#download", ProgressBar)
        bar.update(total=report.file_size_bytes or None, progress=0)
        bar.display = True
        self.download(report.id, folder)

    @work(exclusive=True, group="download", exit_on_error=False)
    async def download(self, report_id: str, folder: Path) -> None:
        client = self.client
        known = self.reports.get(report_id)
        expires = known.download_expires_at if known else None
        if expires is None or expires <= self.bpsync.clock():
            # The link we hold has expired (or we hold none): reading the report again is the
            # spec's way to a fresh one.
            report = await self.guarded("Download", client.reports.get(report_id))
            if report is None:
                return
            self.post_message(ReportUpdated(report))
            if expires is not None:
                self.notify("The download link had expired; fetched a fresh one.")

        def progress(done: int, total: int | None) -> None:
            self.post_message(DownloadProgress(report_id, done, total))

        try:
            path = await client.reports.download(report_id, folder, progress=progress)
        except (E.BPSyncError, OSError) as exc:
            self.post_message(failure("Download", exc))
            return
        self.post_message(DownloadFinished(report_id, path, path.stat().st_size))

    def on_download_progress(self, message: DownloadProgress) -> None:
        bar = self.query_one("#download", ProgressBar)
        if message.total:
            bar.update(total=message.total, progress=message.done)
        else:
            bar.update(total=None)

    def on_download_finished(self, message: DownloadFinished) -> None:
        bar = self.query_one("#download", ProgressBar)
        bar.update(total=message.size or 1, progress=message.size or 1)
        self.inline(f"Saved {message.path} ({size(message.size)}).", error=False)
        self.notify(f"Saved {message.path.name}.")
