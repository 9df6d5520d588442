"""The reports list: one row per report, newest first, naming its building (or filters) rather
than its id, with sizes that are never cut ("5.3 KB") and a failed report's reason code; and the
highlighted report's line under it, which gives a failure's reason whole."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from rich.text import Text

from bpsync.client.models import Report, ReportStatus
from bpsync.tui.format import DASH, elapsed, moment, size
from bpsync.tui.widgets.plain import PlainTable, right

# Whom a report is for comes last: names are long, and the status and size must show at 80.
COLUMNS = ("Created", "Type", "Fmt", "Status", "Time", right("Size"), "For")
SIZE_WIDTH = len("1,023.9 MB")  # the widest size(): the column is never cut


def status_text(report: Report, now: dt.datetime) -> tuple[Text, str]:
    """(status cell, time cell): elapsed while processing, the generation time when done, the
    reason code when failed (the detail line gives the reason whole)."""
    if report.status == ReportStatus.PROCESSING:
        return Text("processing", style="bold yellow"), elapsed(report.created_at, now)
    if report.status == ReportStatus.COMPLETE:
        took = elapsed(report.created_at, report.completed_at) if report.completed_at else DASH
        return Text("complete", style="bold green"), took
    return Text("failed", style="bold red"), report.reason_code or DASH


def scope_text(report: Report, names: Mapping[str, str]) -> str:
    """Whom the report is about: the building's name (its id only while the name is unknown),
    the filters, or all buildings."""
    if report.building_id:
        return names.get(report.building_id, report.building_id)
    filters = " · ".join(str(v) for v in (report.filters or {}).values())
    return filters or "all buildings"


def report_cells(
    report: Report, now: dt.datetime, names: Mapping[str, str] | None = None
) -> tuple[Any, ...]:
    """The report's row in the list (COLUMNS)."""
    status, took = status_text(report, now)
    return (
        moment(report.created_at),
        report.type,
        report.format,
        status,
        took,
        right(size(report.file_size_bytes)),
        scope_text(report, names or {}),
    )


def detail_text(report: Report, now: dt.datetime, names: Mapping[str, str] | None = None) -> Text:
    """The highlighted report in full under the list: type, period, scope, status, why it failed
    (whole), link, id."""
    status, took = status_text(report, now)
    period = report.reporting_period
    span = f"{period.start} → {period.end}" if period else DASH
    expires = (
        f" · link valid until {moment(report.download_expires_at)}"
        if report.download_expires_at
        else ""
    )
    if report.status == ReportStatus.FAILED:
        why = report.reason or report.reason_code or "no reason given"
        outcome = f": {why}"
    else:
        outcome = f" {took}{expires}"
    return Text.assemble(
        (f"{report.type} {report.format}", "bold"),
        f" · {span} · {scope_text(report, names or {})} · ",
        status,
        outcome,
        (f" · {report.id}", "dim"),
    )


class ReportList(PlainTable):
    """The reports, keyed by id; rows are rebuilt from `reports` and `names`, so a name learnt
    later (or a status polled) only needs `update()`."""

    def __init__(self, clock: Callable[[], dt.datetime], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.clock = clock
        self.reports: dict[str, Report] = {}
        self.names: dict[str, str] = {}

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column, width=SIZE_WIDTH if column is COLUMNS[5] else None)

    def cells(self, report: Report) -> tuple[Any, ...]:
        return report_cells(report, self.clock(), self.names)

    def show_all(self, reports: list[Report]) -> None:
        """Replace the list with `reports` (the service's order: newest first)."""
        self.clear()
        self.reports.clear()
        self.reports.update({r.id: r for r in reports})
        for r in reports:
            self.add_row(*self.cells(r), key=r.id)

    def put(self, report: Report) -> bool:
        """Add or update `report`; True when it is new (then it is on top, under the cursor)."""
        new = report.id not in self.reports
        self.reports[report.id] = report
        if not new:
            self.update(report)
            return False
        ordered = sorted(self.reports.values(), key=lambda r: (r.created_at, r.id), reverse=True)
        self.clear()  # DataTable appends: rebuild so the newest stays first
        for r in ordered:
            self.add_row(*self.cells(r), key=r.id)
        self.move_cursor(row=0)
        return True

    def update(self, report: Report) -> None:
        if report.id not in self.rows:
            return
        for column, value in zip(self.ordered_columns, self.cells(report), strict=True):
            self.update_cell(report.id, column.key, value, update_width=True)

    def update_all(self, processing_only: bool = False) -> None:
        for report in self.reports.values():
            if not processing_only or report.status == ReportStatus.PROCESSING:
                self.update(report)

    def selected(self) -> Report | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return self.reports.get(str(key.value))
