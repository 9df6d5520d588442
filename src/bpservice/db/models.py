"""Tables of the service. Every tenant row carries `org_id`; data rows also carry `environment`
(`live` or `test`), because production and sandbox are separate data spaces of one organisation.
Users and API keys belong to the organisation as a whole (see docs/decisions.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from bpservice.db.types import UTCDateTime


class Base(DeclarativeBase):
    pass


class Organisation(Base):
    __tablename__ = "organisations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class User(Base):
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("org_id", "email"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"), index=True)
    email: Mapped[str] = mapped_column(String(320))
    name: Mapped[str | None] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    # None means "all"; otherwise a list of property ids.
    property_access: Mapped[list[str] | None] = mapped_column(JSON)
    mfa_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    sso_provider: Mapped[str | None] = mapped_column(String(64))
    password_hash: Mapped[str | None] = mapped_column(String(256))
    last_login_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    invite_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    activated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    deactivated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"), index=True)
    # The user who created the key: "the API key owner" that notifications go to.
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(200))
    environment: Mapped[str] = mapped_column(String(8))
    # First characters of the key, shown in listings so people can tell keys apart.
    display_prefix: Mapped[str] = mapped_column(String(32))
    # SHA-256 of the whole key: keys carry 190 bits of randomness, so a fast hash is enough.
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class Property(Base):
    __tablename__ = "properties"
    __table_args__ = (Index("ix_properties_scope_created", "org_id", "environment", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(200))
    street: Mapped[str] = mapped_column(String(200))
    # Lengths equal the API's validation limits (Name, ShortText: 200), so PostgreSQL and SQLite
    # accept exactly what the API accepts.
    city: Mapped[str] = mapped_column(String(200))
    state: Mapped[str | None] = mapped_column(String(200))
    postal_code: Mapped[str | None] = mapped_column(String(200))
    country: Mapped[str] = mapped_column(String(2))
    latitude: Mapped[float | None] = mapped_column(Float)
    longitude: Mapped[float | None] = mapped_column(Float)
    type: Mapped[str] = mapped_column(String(32))
    internal_ref: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), default="active")
    archived_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())

    buildings: Mapped[list[Building]] = relationship(
        back_populates="property", order_by="Building.created_at"
    )


class Building(Base):
    __tablename__ = "buildings"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    property_id: Mapped[str] = mapped_column(ForeignKey("properties.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    primary_use_type: Mapped[str] = mapped_column(String(32))
    use_types: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    gfa_m2: Mapped[float] = mapped_column(Float)
    nla_m2: Mapped[float | None] = mapped_column(Float)
    year_built: Mapped[int] = mapped_column(Integer)
    floors: Mapped[int] = mapped_column(Integer)
    occupancy_pct: Mapped[float | None] = mapped_column(Float)
    operating_hours_week: Mapped[float | None] = mapped_column(Float)
    renewable_capacity_kw: Mapped[float | None] = mapped_column(Float)
    car_park_area_m2: Mapped[float | None] = mapped_column(Float)
    data_quality_grade: Mapped[str] = mapped_column(String(1), default="F")
    status: Mapped[str] = mapped_column(String(16), default="active")
    # Readings that end on or before this date are locked (see docs/decisions.md).
    locked_through: Mapped[dt.date | None] = mapped_column(Date)
    locked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())

    property: Mapped[Property] = relationship(back_populates="buildings")
    meters: Mapped[list[Meter]] = relationship(
        back_populates="building", order_by="Meter.created_at"
    )


class Meter(Base):
    __tablename__ = "meters"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    building_id: Mapped[str] = mapped_column(ForeignKey("buildings.id"), index=True)
    type: Mapped[str] = mapped_column(String(32))
    name: Mapped[str | None] = mapped_column(String(200))
    unit: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(32), default="manual")
    provider: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), default="active")
    latest_reading_date: Mapped[dt.date | None] = mapped_column(Date)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())

    building: Mapped[Building] = relationship(back_populates="meters")


class Reading(Base):
    __tablename__ = "readings"
    __table_args__ = (
        # Readings of one meter never overlap, so ordering by start also orders by end: one index
        # seek finds the only candidate for an overlap (see domain/readings.py).
        UniqueConstraint("meter_id", "start_date", name="uq_readings_meter_start"),
        Index("ix_readings_meter_end", "meter_id", "end_date"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    meter_id: Mapped[str] = mapped_column(ForeignKey("meters.id"))
    building_id: Mapped[str] = mapped_column(String(32), index=True)
    org_id: Mapped[str] = mapped_column(String(32))
    environment: Mapped[str] = mapped_column(String(8))
    start_date: Mapped[dt.date] = mapped_column(Date)
    end_date: Mapped[dt.date] = mapped_column(Date)
    consumption: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(16))
    cost: Mapped[float | None] = mapped_column(Float)
    cost_currency: Mapped[str | None] = mapped_column(String(3))
    demand_kw: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(16), default="api")
    anomaly_flags: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class Event(Base):
    """The outbox: every change writes one row in the same transaction; webhooks deliver them."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_scope_seq", "org_id", "environment", "seq"),
        Index("ix_events_fan_out", "fanned_out", "seq"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(32), unique=True)
    org_id: Mapped[str] = mapped_column(String(32))
    environment: Mapped[str] = mapped_column(String(8))
    type: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    # False until the webhook fan-out has made this event's deliveries. Fan-out reads this flag,
    # never a numeric cursor, so an event whose transaction commits after a later-numbered one is
    # still fanned out (docs/decisions.md, IN2).
    fanned_out: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
