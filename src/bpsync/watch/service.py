"""The watcher's import function: one file through the import engine (`import_file`, with its
journal), and what the receipt needs back (counts, accepted reading ids, the reject report).

`FileImporter` is the seam the watcher core depends on; `ServiceImporter` is the real one. It is
used from the watcher's import thread only: the client (an httpx client bound to that thread's
event loop) and the journal (a SQLite connection) are created there, on first use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bpsync.client.service import AsyncServiceClient
from bpsync.config import Profile, resolve_profile
from bpsync.ingest import ImportOptions, Journal, import_file, target_of
from bpsync.watch.rules import ImportInterrupted

MAX_RECEIPT_PROBLEMS = 200


@dataclass(frozen=True)
class Connection:
    """Where readings go: `target` is the dedup scope (service URL and credential fingerprint,
    never the secret), as the import journal names it."""

    target: str
    environment: str | None
    service: str


@dataclass
class FileOutcome:
    """One file's import, finished (`complete`), or found already done (`no-op`)."""

    status: str
    template: str | None
    accepted: int = 0
    rejected: int = 0  # source rows with a refused reading
    skipped: int = 0
    warnings: int = 0
    accepted_ids: list[str] = field(default_factory=list)
    reject_report: Path | None = None
    reject_reports: list[Path] = field(default_factory=list)  # one per sheet, or [reject_report]
    import_id: int | None = None
    message: str | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)
    # Every row read: with readings, refused, skipped by reason (the import's `accounting`).
    accounting: dict[str, Any] = field(default_factory=dict)


class FileImporter(Protocol):
    """What the watcher needs from the import engine."""

    async def connect(self) -> Connection:
        """Make sure a client exists; raises credential or configuration errors."""
        ...

    async def run(self, path: Path) -> FileOutcome:
        """Import the file at `path` (the watcher's private copy). Raises on anything that
        stopped it: the watcher decides whether to pause or to fail the file."""
        ...

    async def reset(self) -> None:
        """Drop the client, so the next `connect` reads the profile and credentials again."""
        ...

    async def aclose(self) -> None: ...


ClientFactory = Callable[[Profile], AsyncServiceClient]


def _default_factory(profile: Profile) -> AsyncServiceClient:
    return AsyncServiceClient.from_profile(profile)


class ServiceImporter:
    """`import_file` with the profile's client, one journal, and the receipt's details."""

    def __init__(
        self,
        profile: str,
        options: ImportOptions,
        *,
        client_factory: ClientFactory = _default_factory,
        journal_path: Path | None = None,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.profile = profile
        self.options = options
        self.client_factory = client_factory
        self.journal_path = journal_path
        self.note = note
        self._client: AsyncServiceClient | None = None
        self._journal: Journal | None = None

    async def connect(self) -> Connection:
        if self._client is None:
            self._client = self.client_factory(resolve_profile(self.profile))
        if self._journal is None:
            self._journal = Journal(self.journal_path)
        client = self._client
        return Connection(target_of(client), client.environment, client.base.base_url)

    async def run(self, path: Path) -> FileOutcome:
        await self.connect()
        assert self._client is not None and self._journal is not None
        client, journal = self._client, self._journal
        summary = await import_file(
            client, self.profile, path, self.options, journal=journal, note=self.note
        )
        if summary.status == "interrupted":
            # The submitter stopped (the service went away, refused the key, or asked for a
            # longer wait than the client accepts). A probe names the cause so the watcher can
            # say it and decide; if the service answers again, it is retried later anyway.
            await client.properties.list(per_page=1)
            raise ImportInterrupted(summary.message or "the import stopped before the end")
        outcome = FileOutcome(
            status=summary.status,
            template=summary.template,
            accepted=summary.accepted,
            rejected=summary.rejected,
            skipped=summary.skipped,
            warnings=summary.warnings,
            import_id=summary.import_id,
            message=summary.message,
            problems=list(summary.problems[:MAX_RECEIPT_PROBLEMS]),
            accounting=dict(summary.accounting),
            reject_report=Path(summary.reject_reports[0]) if summary.reject_reports else None,
            reject_reports=[Path(r) for r in summary.reject_reports],
        )
        if summary.import_id is not None:
            accepted = journal.rows(summary.import_id, "accepted")
            outcome.accepted_ids = [r.reading_id for r in accepted if r.reading_id]
            outcome.accepted = len(accepted)
            # The summary of a no-op import does not count rejected rows; the journal does.
            rejected = journal.rows(summary.import_id, "rejected")
            outcome.rejected = len({r.source_row for r in rejected})
            if outcome.rejected and outcome.reject_report is None:
                report = journal.get(summary.import_id).info.get("reject_report")
                outcome.reject_report = Path(report) if report else None
                outcome.reject_reports = [Path(report)] if report else []
        return outcome

    async def reset(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def aclose(self) -> None:
        await self.reset()
        if self._journal is not None:
            self._journal.close()
            self._journal = None
