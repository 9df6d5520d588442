"""Tables for webhooks: subscriptions, one delivery per (subscription, event), the attempts of each
delivery, and notifications to the people who own subscriptions (docs/decisions.md (webhooks section))."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from bpservice.db.models import Base
from bpservice.db.types import UTCDateTime


class WebhookSubscription(Base):
    __tablename__ = "webhook_subscriptions"
    __table_args__ = (Index("ix_webhooks_scope", "org_id", "environment", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    environment: Mapped[str] = mapped_column(String(8))
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str | None] = mapped_column(String(200))
    # Event types, or ["*"] for every type.
    events: Mapped[list[str]] = mapped_column(JSON)
    # Stored as given: it is needed in plain form to compute HMACs (see the decision record).
    secret: Mapped[str] = mapped_column(String(512))  # sealed by bpservice.secretbox
    status: Mapped[str] = mapped_column(String(16))  # enabled, paused, disabled
    # The user notified when the subscription is disabled: the API key's owner or the token's user.
    owner_user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_by: Mapped[str] = mapped_column(String(32))  # key_… or usr_…
    # The newest event seq when the subscription was created: it receives events numbered above
    # this (fan-out itself works from Event.fanned_out, not from a cursor; decisions IN2).
    cursor_seq: Mapped[int] = mapped_column(Integer)
    # Start of the current run of failed attempts (None while the endpoint answers).
    failing_since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_success_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    paused_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    disabled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    disabled_reason: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())

    deliveries: Mapped[list[WebhookDelivery]] = relationship(
        back_populates="subscription", cascade="all, delete-orphan", passive_deletes=True
    )


class WebhookDelivery(Base):
    """One event for one subscription; its body is fixed at fan-out so every retry is identical."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("subscription_id", "event_id", name="uq_delivery_event"),
        Index("ix_deliveries_due", "status", "next_attempt_at"),
        Index("ix_deliveries_subscription", "subscription_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    subscription_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_subscriptions.id", ondelete="CASCADE")
    )
    event_id: Mapped[str] = mapped_column(String(32))
    event_seq: Mapped[int] = mapped_column(Integer)
    event_type: Mapped[str] = mapped_column(String(64))
    event_created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    body: Mapped[str] = mapped_column(Text)
    # pending (an attempt is due at next_attempt_at), succeeded, failed (retries spent),
    # cancelled (the subscription was disabled first).
    status: Mapped[str] = mapped_column(String(16))
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # Set by the worker that claimed the delivery; only that worker may record the attempt, so a
    # delivery is in flight at most once even when a lease runs out (decisions IN3).
    claim_token: Mapped[str | None] = mapped_column(String(32))
    completed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())

    subscription: Mapped[WebhookSubscription] = relationship(back_populates="deliveries")
    attempts: Mapped[list[WebhookAttempt]] = relationship(
        back_populates="delivery",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="WebhookAttempt.number",
    )


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int] = mapped_column(Integer)  # 1 for the first try, 2 to 6 for retries
    attempted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    status_code: Mapped[int | None] = mapped_column(Integer)
    # The first 1 KB of the response body (decoded as UTF-8 with replacement characters).
    response_body: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[int] = mapped_column(Integer)
    succeeded: Mapped[bool] = mapped_column(default=False)
    # timeout, connection_refused, non_2xx, connection_error; None on success.
    failure_reason: Mapped[str | None] = mapped_column(String(32))
    error_message: Mapped[str | None] = mapped_column(String(300))

    delivery: Mapped[WebhookDelivery] = relationship(back_populates="attempts")


class Notification(Base):
    """A message for a user (the reference service has no mail; the web application shows these)."""

    __tablename__ = "notifications"
    __table_args__ = (Index("ix_notifications_user", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    type: Mapped[str] = mapped_column(String(64))  # e.g. webhook.disabled
    subject_id: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(String(1000))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
