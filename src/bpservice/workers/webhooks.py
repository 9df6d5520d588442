"""Webhook delivery from the event outbox (docs/decisions.md (webhooks section)).

Each pass of `deliver_due` (1) fans new outbox events out to the subscriptions of their
organisation and environment that want them (one delivery row per subscription and event, body fixed
then), (2) claims the deliveries that are due, (3) POSTs them, signed, with a 10 s timeout, and
(4) records every attempt, schedules retries (1 m, 5 m, 30 m, 2 h, 12 h after each failure) and
disables a subscription whose endpoint has failed for 7 consecutive days. `run(app)` repeats it.

Time comes from the caller (`now`), so tests drive retries and the 7-day rule with a FakeClock;
latency is measured with the real monotonic clock."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import anyio
import httpx
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from bpservice import __version__
from bpservice.db.models import Event
from bpservice.db.session import Database
from bpservice.db.webhook_models import (
    Notification,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from bpservice.events import event_body
from bpservice.ids import new_id

log = logging.getLogger("bpservice.webhooks")

# Spec, Delivery rules 1, 2 and 6.
TIMEOUT_SECONDS = 10.0
RETRY_DELAYS = (
    dt.timedelta(minutes=1),
    dt.timedelta(minutes=5),
    dt.timedelta(minutes=30),
    dt.timedelta(hours=2),
    dt.timedelta(hours=12),
)
MAX_ATTEMPTS = 1 + len(RETRY_DELAYS)
DISABLE_AFTER = dt.timedelta(days=7)
RESPONSE_BODY_LIMIT = 1024
# A claimed delivery is not claimed again before this, so a crash mid-send only delays it.
CLAIM_LEASE = dt.timedelta(minutes=2)
BATCH = 100
FAN_OUT_BATCH = 1000
CONCURRENCY = 8

FAILURE_REASONS = ("timeout", "connection_refused", "non_2xx", "connection_error")


# --- pure rules -----------------------------------------------------------------------------------


def retry_delay(attempts_made: int) -> dt.timedelta | None:
    """How long after the `attempts_made`-th failed attempt the next one is due; None = give up."""
    if 1 <= attempts_made <= len(RETRY_DELAYS):
        return RETRY_DELAYS[attempts_made - 1]
    return None


def wants(events: Iterable[str], event_type: str) -> bool:
    events = list(events)
    return "*" in events or event_type in events


def encode_body(event: Event) -> str:
    """The delivered JSON, compact and fixed at fan-out so every retry sends the same bytes."""
    return json.dumps(event_body(event), separators=(",", ":"), ensure_ascii=False)


def svc_signature(secret: str, body: bytes) -> str:
    """`X-SVC-Signature`: `sha256=` + lowercase hex HMAC-SHA256 of the raw body (spec)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """`webhook-signature` (Standard Webhooks): `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`,
    keyed with the UTF-8 bytes of the subscription secret."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return (
        "v1,"
        + base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    )


def delivery_headers(secret: str, event_id: str, body: bytes, now: dt.datetime) -> dict[str, str]:
    timestamp = int(now.timestamp())
    return {
        "Content-Type": "application/json",
        "User-Agent": f"bpservice-webhooks/{__version__}",
        "X-SVC-Signature": svc_signature(secret, body),
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, event_id, timestamp, body),
    }


@dataclass(frozen=True)
class Outcome:
    """What one HTTP attempt produced."""

    delivery_id: str
    status_code: int | None
    response_body: str | None
    latency_ms: int
    failure_reason: str | None  # None when a 2xx came back
    error_message: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.failure_reason is None


def _refused(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or "refused" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def classify_error(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError) and _refused(exc):
        return "connection_refused"
    return "connection_error"


# --- I/O ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryDeps:
    db: Database
    timeout: float = TIMEOUT_SECONDS
    # An httpx transport for tests or proxies; None = real network.
    transport: httpx.BaseTransport | None = None


def deps_of(app_or_deps: FastAPI | DeliveryDeps) -> DeliveryDeps:
    if isinstance(app_or_deps, DeliveryDeps):
        return app_or_deps
    state = app_or_deps.state
    return DeliveryDeps(
        db=state.db,
        timeout=state.settings.webhook_timeout_seconds,
        transport=getattr(state, "webhook_transport", None),
    )


def current_seq(session: Session) -> int:
    return session.scalar(select(func.max(Event.seq))) or 0


def fan_out(session: Session, now: dt.datetime) -> int:
    """Create deliveries for events past each live subscription's cursor; returns how many."""
    latest = current_seq(session)
    subscriptions = session.scalars(
        select(WebhookSubscription).where(
            WebhookSubscription.status.in_(("enabled", "paused")),
            WebhookSubscription.cursor_seq < latest,
        )
    ).all()
    created = 0
    for sub in subscriptions:
        events = session.scalars(
            select(Event)
            .where(
                Event.org_id == sub.org_id,
                Event.environment == sub.environment,
                Event.seq > sub.cursor_seq,
            )
            .order_by(Event.seq)
            .limit(FAN_OUT_BATCH)
        ).all()
        for event in events:
            if not wants(sub.events, event.type):
                continue
            session.add(
                WebhookDelivery(
                    id=new_id("delivery"),
                    subscription_id=sub.id,
                    event_id=event.id,
                    event_seq=event.seq,
                    event_type=event.type,
                    event_created_at=event.created_at,
                    body=encode_body(event),
                    status="pending",
                    attempt_count=0,
                    next_attempt_at=now,
                    created_at=now,
                )
            )
            created += 1
        # Events of other scopes between the cursor and `latest` are skipped over too.
        sub.cursor_seq = events[-1].seq if len(events) == FAN_OUT_BATCH else latest
    return created


@dataclass(frozen=True)
class _Job:
    delivery_id: str
    url: str
    secret: str
    event_id: str
    body: bytes


def _claim(session: Session, now: dt.datetime) -> list[_Job]:
    rows = session.execute(
        select(WebhookDelivery, WebhookSubscription)
        .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
        .where(
            WebhookDelivery.status == "pending",
            WebhookDelivery.next_attempt_at <= now,
            WebhookSubscription.status == "enabled",
        )
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.event_seq)
        .limit(BATCH)
    ).all()
    jobs = []
    for delivery, sub in rows:
        delivery.next_attempt_at = now + CLAIM_LEASE
        jobs.append(
            _Job(delivery.id, sub.url, sub.secret, delivery.event_id, delivery.body.encode())
        )
    return jobs


def _send(client: httpx.Client, job: _Job, now: dt.datetime) -> Outcome:
    headers = delivery_headers(job.secret, job.event_id, job.body, now)
    started = time.perf_counter()
    try:
        with client.stream("POST", job.url, content=job.body, headers=headers) as response:
            received = b""
            for chunk in response.iter_bytes():
                received += chunk
                if len(received) >= RESPONSE_BODY_LIMIT:
                    break
            latency = round((time.perf_counter() - started) * 1000)
            text = received[:RESPONSE_BODY_LIMIT].decode("utf-8", errors="replace")
            ok = 200 <= response.status_code < 300
            return Outcome(
                job.delivery_id,
                response.status_code,
                text,
                latency,
                None if ok else "non_2xx",
            )
    except Exception as exc:  # every failure becomes a recorded attempt, never a crash
        latency = round((time.perf_counter() - started) * 1000)
        return Outcome(
            job.delivery_id,
            None,
            None,
            latency,
            classify_error(exc),
            f"{type(exc).__name__}: {exc}"[:300],
        )


def _disable(session: Session, sub: WebhookSubscription, now: dt.datetime) -> None:
    sub.status = "disabled"
    sub.disabled_at = now
    sub.updated_at = now
    sub.disabled_reason = (
        f"Every delivery attempt failed for {DISABLE_AFTER.days} consecutive days "
        f"(since {sub.failing_since.isoformat() if sub.failing_since else 'unknown'})."
    )
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.subscription_id == sub.id, WebhookDelivery.status == "pending")
        .values(status="cancelled", next_attempt_at=None, completed_at=now)
    )
    session.add(
        Notification(
            org_id=sub.org_id,
            user_id=sub.owner_user_id,
            type="webhook.disabled",
            subject_id=sub.id,
            message=f"The webhook subscription {sub.id} to {sub.url} was disabled: "
            f"{sub.disabled_reason} Fix the endpoint, then resume the subscription.",
            created_at=now,
        )
    )
    log.warning("webhook subscription %s disabled after %s of failures", sub.id, DISABLE_AFTER)


def _record(session: Session, outcome: Outcome, now: dt.datetime) -> None:
    delivery = session.get(WebhookDelivery, outcome.delivery_id)
    if delivery is None:  # the subscription was deleted while we were sending
        return
    delivery.attempt_count += 1
    session.add(
        WebhookAttempt(
            delivery_id=delivery.id,
            number=delivery.attempt_count,
            attempted_at=now,
            status_code=outcome.status_code,
            response_body=outcome.response_body,
            latency_ms=outcome.latency_ms,
            succeeded=outcome.succeeded,
            failure_reason=outcome.failure_reason,
            error_message=outcome.error_message,
        )
    )
    sub = session.get(WebhookSubscription, delivery.subscription_id)
    assert sub is not None
    if outcome.succeeded:
        delivery.status = "succeeded"
        delivery.next_attempt_at = None
        delivery.completed_at = now
        sub.last_success_at = now
        sub.failing_since = None
        return
    delay = retry_delay(delivery.attempt_count)
    if delay is None:
        delivery.status = "failed"
        delivery.next_attempt_at = None
        delivery.completed_at = now
    else:
        delivery.next_attempt_at = now + delay
    if sub.failing_since is None:
        sub.failing_since = now
    if sub.status == "enabled" and now - sub.failing_since >= DISABLE_AFTER:
        _disable(session, sub, now)


def deliver_due(app_or_deps: FastAPI | DeliveryDeps, now: dt.datetime) -> int:
    """One deterministic pass: fan out, send what is due at `now`, record. Returns attempts made."""
    deps = deps_of(app_or_deps)
    with deps.db.read() as session:
        sub_behind = session.scalar(
            select(func.count(WebhookSubscription.id)).where(
                WebhookSubscription.status.in_(("enabled", "paused")),
                WebhookSubscription.cursor_seq < current_seq(session),
            )
        )
        due = session.scalar(
            select(func.count(WebhookDelivery.id))
            .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
            .where(
                WebhookDelivery.status == "pending",
                WebhookDelivery.next_attempt_at <= now,
                WebhookSubscription.status == "enabled",
            )
        )
    if not sub_behind and not due:
        return 0  # nothing to do: no write transaction taken
    with deps.db.write() as session:
        fan_out(session, now)
        session.flush()
        jobs = _claim(session, now)
    if not jobs:
        return 0
    with httpx.Client(
        transport=deps.transport, timeout=httpx.Timeout(deps.timeout), follow_redirects=False
    ) as client:
        if len(jobs) == 1:
            outcomes = [_send(client, jobs[0], now)]
        else:
            with ThreadPoolExecutor(max_workers=min(CONCURRENCY, len(jobs))) as pool:
                outcomes = list(pool.map(lambda job: _send(client, job, now), jobs))
    with deps.db.write() as session:
        for outcome in outcomes:
            _record(session, outcome, now)
    return len(outcomes)


async def run(app: FastAPI) -> None:
    """Runs until cancelled when the app starts with settings.run_workers."""
    deps = deps_of(app)
    settings = app.state.settings
    while True:
        try:
            made = await anyio.to_thread.run_sync(deliver_due, deps, settings.clock())
        except Exception:
            log.exception("webhook delivery pass failed")
            made = 0
        await asyncio.sleep(0 if made else settings.webhook_poll_seconds)
