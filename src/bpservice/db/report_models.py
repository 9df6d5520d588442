"""Tables for reports: the report requests and their state, the generated files (kept apart so
listing reports never loads file bytes), saved templates for custom reports, and service secrets
(the key that signs download URLs lives here so a restart keeps issued URLs valid)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Date, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bpservice.db.models import Base
from bpservice.db.types import UTCDateTime


class Report(Base):
    __tablename__ = "reports"
    __table_args__ = (
        Index("ix_reports_scope_created", "org_id", "environment", "created_at"),
        Index("ix_reports_status_created", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    type: Mapped[str] = mapped_column(String(32))
    format: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), default="processing")
    period_start: Mapped[dt.date] = mapped_column(Date)
    period_end: Mapped[dt.date] = mapped_column(Date)
    building_id: Mapped[str | None] = mapped_column(String(32))
    # The building's property (building-scoped reports), for callers limited to some properties.
    property_id: Mapped[str | None] = mapped_column(String(32))
    # Organisation-scoped filters as sent: {"type": ..., "country": ...}.
    filters: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    template_id: Mapped[str | None] = mapped_column(String(32))
    # The template as it was when the report was requested, so later edits do not change it.
    template: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Properties the requester could see (None = all), so the report shows no more than that.
    property_access: Mapped[list[str] | None] = mapped_column(JSON)
    requested_by: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    estimated_completion: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    # Set when a worker claims the report; a claim older than the lease is taken over.
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    completed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    failed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    failure_code: Mapped[str | None] = mapped_column(String(64))
    failure_reason: Mapped[str | None] = mapped_column(Text)
    file_size_bytes: Mapped[int | None] = mapped_column(Integer)
    filename: Mapped[str | None] = mapped_column(String(200))
    content_type: Mapped[str | None] = mapped_column(String(100))


class ReportFile(Base):
    __tablename__ = "report_files"

    report_id: Mapped[str] = mapped_column(ForeignKey("reports.id"), primary_key=True)
    content: Mapped[bytes] = mapped_column(LargeBinary)


class ReportTemplate(Base):
    __tablename__ = "report_templates"
    __table_args__ = (Index("ix_report_templates_scope", "org_id", "environment", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(String(1000))
    title: Mapped[str | None] = mapped_column(String(200))
    columns: Mapped[list[str]] = mapped_column(JSON)
    filters: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    sort: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class ServiceSecret(Base):
    """Secrets the service creates for itself (not user data). Never logged or returned."""

    __tablename__ = "service_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
