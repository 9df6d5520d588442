"""Reports: the types, a form to generate one (widgets/report_form.py), live status with elapsed
time until it is complete or failed, download with a progress bar to a chosen folder, and the list
of past reports (widgets/report_list.py), which names each report's building."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, ProgressBar, Static

from bpsync.client import errors as E
from bpsync.client.models import Report, ReportStatus, ReportTemplate, ReportType
from bpsync.tui.format import size
from bpsync.tui.messages import (
    DownloadFinished,
    DownloadProgress,
    ReportCatalogue,
    ReportsListed,
    ReportUpdated,
)
from bpsync.tui.screens.base import AppScreen, failure
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.report_form import ReportForm, default_period
from bpsync.tui.widgets.report_list import ReportList, detail_text, scope_text
from bpsync.tui.widgets.topbar import TopBar

__all__ = ["ReportsScreen", "default_period"]

MAX_POLL_SECONDS = 5.0


class ReportsScreen(AppScreen):
    HELP_TITLE = "Reports"
    HELP = (
        "Choose a type and a format it allows, the reporting period, and a building (building "
        "reports, chosen by name) or filters (organisation reports), then Generate (ctrl+g). The "
        "period starts as the last complete calendar year with data for the building or the "
        "organisation. The list shows every report, newest first, with live status; after a "
        "request the cursor is on it. Highlight a complete report and press d to download it "
        "into the folder shown; an expired download link is renewed automatically."
    )
    BINDINGS = [
        Binding("ctrl+g", "generate", "Generate", id="reports.generate"),
        Binding("d", "download", "Download", id="reports.download"),
        Binding("r", "reload", "Reload", id="reports.reload"),
    ]

    def __init__(self, building_id: str | None = None, building_name: str = "") -> None:
        super().__init__()
        self.building_id = building_id
        self.building_name = building_name
        self.types: dict[str, ReportType] = {}
        self.templates: list[ReportTemplate] = []
        self.watching: set[str] = set()

    @property
    def reports(self) -> dict[str, Report]:
        """The reports listed, by id ({} until the list is there)."""
        found = self.query(ReportList)
        return found.first().reports if found else {}

    def compose(self) -> ComposeResult:
        yield TopBar("Reports")
        yield ReportForm(id="report-form")
        yield ReportList(self.bpsync.clock, id="reports")
        with Horizontal(id="download-row"):
            yield Static("", id="report-detail")
            yield ProgressBar(id="download", show_eta=False)
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#r-folder", Input).value = str(self.bpsync.download_dir)
        self.query_one("#download", ProgressBar).display = False
        self.set_interval(1.0, self._tick)
        self.load_catalogue()
        self.load_list()
        if self.bpsync.connection is not None:
            given = (self.building_id, self.building_name) if self.building_id else None
            self.query_one(ReportForm).start(self.client, self.bpsync.clock().date(), given)
        if self.building_id:
            self.query_one(ReportList).names[self.building_id] = self.building_name

    def on_report_form_names_known(self, message: ReportForm.NamesKnown) -> None:
        reports = self.query_one(ReportList)
        reports.names.update(message.names)
        reports.update_all()
        self._detail()

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
        outlook = self.bpsync.outlooks.get(self.building_id or "")
        if outlook is not None and outlook.covered and outlook.law:
            wanted = f"compliance_{outlook.law.lower()}"  # the law the building screen showed
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
        # The list is where the request shows up and where d downloads it: leave the form.
        self.query_one(ReportList).focus()
        self.generate(body)

    @work(group="generate", exit_on_error=False)
    async def generate(self, body: dict[str, Any]) -> None:
        report = await self.guarded("Generate", self.client.reports.create(body))
        if report is not None:
            # The 202 answer leaves out whom the report is about; the list names it now.
            asked = {k: body.get(k) for k in ("building_id", "filters") if body.get(k)}
            self.post_message(ReportUpdated(report.model_copy(update=asked)))

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
        reports = self.query_one(ReportList)
        previous = reports.reports.get(report.id)
        if reports.put(report):
            what = scope_text(report, reports.names)
            self.inline(f"Requested {report.type} as {report.format} for {what}.", False)
        if report.status == ReportStatus.PROCESSING:
            self.watch_report(report.id)
        elif (
            report.status == ReportStatus.COMPLETE
            and previous is not None
            and previous.status == ReportStatus.PROCESSING
        ):
            what = scope_text(report, reports.names)
            ready = f"{report.type} for {what} is ready ({size(report.file_size_bytes)})."
            self.notify(ready, markup=False)  # building names are users' text
        elif report.status == ReportStatus.FAILED:
            self.inline(f"{report.type} failed: {report.reason or report.reason_code}")
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
        self.query_one(ReportList).show_all(message.items)
        for report in message.items:
            if report.status == ReportStatus.PROCESSING:
                self.watch_report(report.id)
        self._detail()

    def _tick(self) -> None:
        self.query_one(ReportList).update_all(processing_only=True)
        self._detail()

    def selected(self) -> Report | None:
        return self.query_one(ReportList).selected()

    @on(DataTable.RowHighlighted, "#reports")
    def _detail(self) -> None:
        report = self.selected()
        detail = self.query_one("#report-detail", Static)
        if report is None:
            detail.update("No reports yet.")
            return
        names = self.query_one(ReportList).names
        detail.update(detail_text(report, self.bpsync.clock(), names))

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
