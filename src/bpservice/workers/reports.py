"""Report generation in the background: claim a `processing` report, gather and render it in a
worker thread (requests never wait for it), then store the file and move the report to `complete`
(emitting report.generated in the same transaction) or to `failed` with a reason.

A claim is a lease: `started_at` is set when a worker takes the report, and a claim older than
LEASE (a process that died mid-report) is taken over. After MAX_ATTEMPTS claims the report fails
rather than crash-looping. Tests call `generate_pending(app, now)` directly; the app's lifespan runs
`run(app)` when settings.run_workers is on."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import anyio
from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from bpservice.db.report_models import Report, ReportFile
from bpservice.db.session import Database
from bpservice.domain.compliance import ComplianceError
from bpservice.events import record_event
from bpservice.reporting.catalogue import CONTENT_TYPES
from bpservice.reporting.content.blocks import NoData
from bpservice.reporting.gather import build_document
from bpservice.reporting.render import render

log = logging.getLogger("bpservice.reports")

POLL_SECONDS = 0.2
LEASE = dt.timedelta(minutes=10)
MAX_ATTEMPTS = 3
# How far back an organisation's latest claim counts when organisations take turns.
FAIRNESS_MEMORY = dt.timedelta(hours=1)
EXTENSIONS = {"pdf": "pdf", "xlsx": "xlsx", "csv": "csv", "json": "json"}


def _database_and_clock(app_or_db: Any) -> tuple[Database, Any]:
    if isinstance(app_or_db, Database):
        return app_or_db, None
    return app_or_db.state.db, app_or_db.state.settings.clock


def _claim(db: Database, now: dt.datetime) -> str | None:
    """Take the next unclaimed (or abandoned) processing report; None when there is none.

    Organisations take turns: the next report is the oldest of the organisation whose latest
    claim is the oldest (or that has none), so 20 queued reports of one organisation delay
    another's by at most one report, not twenty."""
    stale = now - LEASE
    recent = (
        select(Report.org_id.label("org_id"), func.max(Report.started_at).label("last"))
        .where(Report.started_at >= now - FAIRNESS_MEMORY)
        .group_by(Report.org_id)
        .subquery()
    )
    while True:
        with db.write() as session:
            candidate = session.execute(
                select(Report.id, Report.attempts)
                .join(recent, recent.c.org_id == Report.org_id, isouter=True)
                .where(
                    Report.status == "processing",
                    or_(Report.started_at.is_(None), Report.started_at < stale),
                )
                .order_by(recent.c.last.asc().nulls_first(), Report.created_at, Report.id)
                .limit(1)
            ).first()
            if candidate is None:
                return None
            report_id, attempts = candidate
            if attempts >= MAX_ATTEMPTS:
                report = session.get(Report, report_id)
                assert report is not None
                _fail(
                    report,
                    now,
                    "generation_interrupted",
                    f"Generation was interrupted {attempts} times; request the report again.",
                )
                continue
            # Conditional update: of two workers racing for one report, exactly one wins.
            claimed = session.execute(
                update(Report)
                .where(
                    Report.id == report_id,
                    Report.status == "processing",
                    or_(Report.started_at.is_(None), Report.started_at < stale),
                )
                .values(started_at=now, attempts=Report.attempts + 1)
            ).rowcount
            if claimed:
                return report_id


def _fail(report: Report, now: dt.datetime, code: str, reason: str) -> None:
    report.status = "failed"
    report.failed_at = now
    report.failure_code = code
    report.failure_reason = reason


def _event_data(report: Report) -> dict[str, Any]:
    # No download URL: the URL is a credential and webhook payloads end up in logs; receivers
    # read the report (GET /v1/reports/{id}) for a fresh one.
    return {
        "report": {
            "id": report.id,
            "type": report.type,
            "format": report.format,
            "status": report.status,
            "building_id": report.building_id,
            "reporting_period": {"start": report.period_start, "end": report.period_end},
            "file_size_bytes": report.file_size_bytes,
            "created_at": report.created_at,
            "completed_at": report.completed_at,
        }
    }


def _finish(
    db: Database,
    report_id: str,
    now: dt.datetime,
    content: bytes | None,
    failure: tuple[str, str] | None,
) -> None:
    with db.write() as session:
        report = session.get(Report, report_id)
        if report is None or report.status != "processing":
            return
        if failure is not None:
            _fail(report, now, *failure)
            return
        assert content is not None
        session.merge(ReportFile(report_id=report.id, content=content))
        report.status = "complete"
        report.completed_at = now
        report.file_size_bytes = len(content)
        report.content_type = CONTENT_TYPES[report.format]
        report.filename = f"{report.type}-{report.id}.{EXTENSIONS[report.format]}"
        record_event(
            session,
            org_id=report.org_id,
            environment=report.environment,
            type="report.generated",
            data=_event_data(report),
            now=now,
        )


def generate_one(db: Database, report_id: str, now: dt.datetime) -> str:
    """Generate a claimed report; returns its final status."""
    content: bytes | None = None
    failure: tuple[str, str] | None = None
    try:
        with db.read() as session:
            report = _read(session, report_id)
            document = build_document(session, report, now)
        content = render(document, report.format)
    except NoData as exc:
        failure = ("no_data", str(exc))
    except ComplianceError as exc:
        failure = (exc.code, exc.message)
    except Exception:
        log.exception("report %s could not be generated", report_id)
        failure = (
            "generation_error",
            "The service failed to generate the report; the error has been logged.",
        )
    _finish(db, report_id, now, content, failure)
    return "failed" if failure else "complete"


def _read(session: Session, report_id: str) -> Report:
    report = session.get(Report, report_id)
    if report is None:
        raise NoData(f"Report {report_id} no longer exists.")
    return report


def generate_pending(
    app_or_db: Any, now: dt.datetime | None = None, limit: int | None = None
) -> int:
    """Generate queued reports (oldest first) and return how many were processed. `now` stamps
    every step of this call (tests pass a fixed time); None reads the app's clock at each step."""
    db, clock = _database_and_clock(app_or_db)
    if now is None and clock is None:
        raise ValueError("pass `now` when calling with a Database")
    done = 0
    while limit is None or done < limit:
        report_id = _claim(db, now or clock())
        if report_id is None:
            break
        generate_one(db, report_id, now or clock())
        done += 1
    return done


async def run(app: Any) -> None:
    """Runs until cancelled when the app starts with settings.run_workers: each report is
    generated in a worker thread, so the event loop keeps serving requests."""
    while True:
        try:
            processed = await anyio.to_thread.run_sync(generate_pending, app, None, 1)
        except Exception:  # keep the loop alive; the failure is logged, the report retried
            log.exception("report worker iteration failed")
            processed = 0
        if not processed:
            await anyio.sleep(POLL_SECONDS)
