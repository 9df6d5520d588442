"""Messages: the contract between workers (network and file I/O) and the screens that show the
results. Workers never touch widgets; they post one of these and the screen updates itself."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from bpsync.client.models import (
    BenchmarkHistory,
    BenchmarkResult,
    Building,
    Meter,
    PortfolioBenchmark,
    Property,
    PropertyArchived,
    Reading,
    Report,
    ReportTemplate,
    ReportType,
)
from bpsync.client.ratelimit import Bucket


class AppMessage(Message, bubble=False):
    """Posted by a worker to its own screen, which handles it; it goes no further."""


@dataclass
class ActionFailed(AppMessage, bubble=False):
    """A worker's action failed in an expected way (service error, no network, bad input)."""

    action: str
    message: str
    code: str | None = None
    status: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --- sign in -------------------------------------------------------------------------------------


@dataclass
class SignedIn(AppMessage, bubble=False):
    profile: str
    environment: str | None


@dataclass
class OAuthStarted(AppMessage, bubble=False):
    url: str


@dataclass
class KeyStored(AppMessage, bubble=False):
    profile: str
    masked: str


# --- portfolio -----------------------------------------------------------------------------------


@dataclass
class PropertiesPage(AppMessage, bubble=False):
    """One page of properties for the query `generation` (older generations are ignored)."""

    generation: int
    items: list[Property]
    page: int
    total: int
    total_pages: int
    scanned: int = 0  # with a search: how many properties were looked at so far


@dataclass
class ArchiveDone(AppMessage, bubble=False):
    result: PropertyArchived


@dataclass
class PropertyLoaded(AppMessage, bubble=False):
    prop: Property


@dataclass
class BuildingsLoaded(AppMessage, bubble=False):
    property_id: str
    items: list[Building]
    total: int


@dataclass
class BuildingLoaded(AppMessage, bubble=False):
    building: Building
    locked_through: dt.date | None
    meters: list[Meter]


@dataclass
class ReadingsPage(AppMessage, bubble=False):
    meter_id: str
    items: list[Reading]
    page: int
    total: int
    total_pages: int


@dataclass
class ReadingDeleted(AppMessage, bubble=False):
    meter_id: str
    reading_id: str


# --- benchmarks ----------------------------------------------------------------------------------


@dataclass
class BenchmarksLoaded(AppMessage, bubble=False):
    result: BenchmarkResult


@dataclass
class HistoryLoaded(AppMessage, bubble=False):
    history: BenchmarkHistory
    periods: int


@dataclass
class PortfolioBenchmarkLoaded(AppMessage, bubble=False):
    result: PortfolioBenchmark
    filters: dict[str, str]


# --- reports -------------------------------------------------------------------------------------


@dataclass
class ReportCatalogue(AppMessage, bubble=False):
    types: list[ReportType]
    templates: list[ReportTemplate]


@dataclass
class ReportsListed(AppMessage, bubble=False):
    items: list[Report]
    total: int


@dataclass
class ReportUpdated(AppMessage, bubble=False):
    """The latest state of a report being watched (created, polled, or re-read for a fresh URL)."""

    report: Report


@dataclass
class DownloadProgress(AppMessage, bubble=False):
    report_id: str
    done: int
    total: int | None

    def can_replace(self, message: Message) -> bool:
        # Chunks arrive faster than the screen repaints: only the newest count matters.
        return isinstance(message, DownloadProgress) and message.report_id == self.report_id


@dataclass
class DownloadFinished(AppMessage, bubble=False):
    report_id: str
    path: Path
    size: int


# --- sync status ---------------------------------------------------------------------------------


@dataclass
class SyncStatusLoaded(AppMessage, bubble=False):
    status: Any  # bpsync.watch.status.WatchStatus | None
    problem: str | None
    stale: bool
    buckets: dict[str, Bucket]
    checked_at: dt.datetime
    limiter_now: float  # the rate limiter's own clock (Unix seconds) when the buckets were read


# --- import wizard -------------------------------------------------------------------------------


@dataclass
class WizardStep(AppMessage, bubble=False):
    """A wizard worker finished a step; `payload` is the step's result object."""

    step: str
    payload: Any


@dataclass
class SubmitProgress(AppMessage, bubble=False):
    done: int
    total: int
    accepted: int
    rejected: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SubmitProgress)


# --- replacement trail ---------------------------------------------------------------------------


@dataclass
class TrailLoaded(AppMessage, bubble=False):
    """A meter's replaced readings, read from this machine's import journal (newest first, as
    `Journal.replacements` gives them: when, who, file, kind, status, reason, old, new)."""

    meter_id: str
    entries: list[dict[str, Any]]
