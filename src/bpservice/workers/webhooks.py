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
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

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
from bpservice.netguard import DestinationRefused, Resolver, delivery_transport, system_resolver
from bpservice.secretbox import SecretBox, secret_box

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
# The most slots of one worker that one organisation's deliveries may hold at once.
ORG_SHARE = CONCURRENCY // 2

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
    claim_token: str | None = None
    sent_at: dt.datetime | None = None

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
    # The service clock, read as each request goes out (attempted_at); None = the pass's `now`
    # plus the time the pass has taken.
    clock: Callable[[], dt.datetime] | None = None
    # Settings.secrets_key: opens the sealed subscription secrets just before signing.
    secrets_key: str | None = None
    # Settings.allow_private_webhooks / webhook_resolver (bpservice.netguard).
    allow_private: bool = False
    resolver: Resolver | None = None

    def secret_box(self, now: dt.datetime) -> SecretBox:
        return secret_box(self.db, self.secrets_key, now)


def deps_of(app_or_deps: FastAPI | DeliveryDeps) -> DeliveryDeps:
    if isinstance(app_or_deps, DeliveryDeps):
        return app_or_deps
    state = app_or_deps.state
    return DeliveryDeps(
        db=state.db,
        timeout=state.settings.webhook_timeout_seconds,
        transport=getattr(state, "webhook_transport", None),
        clock=state.settings.clock,
        secrets_key=state.settings.secrets_key,
        allow_private=state.settings.allow_private_webhooks,
        resolver=state.settings.webhook_resolver,
    )


def current_seq(session: Session) -> int:
    return session.scalar(select(func.max(Event.seq))) or 0


def _insert_ignoring_duplicates(session: Session, rows: list[dict]) -> None:
    """INSERT … ON CONFLICT (subscription_id, event_id) DO NOTHING, on PostgreSQL and SQLite."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    statement = dialect_insert(WebhookDelivery).on_conflict_do_nothing(
        index_elements=["subscription_id", "event_id"]
    )
    session.execute(statement, rows)


def fan_out(session: Session, now: dt.datetime) -> int:
    """Create deliveries for events not yet fanned out; returns how many.

    Works from each event's `fanned_out` flag, never a numeric cursor: an event whose transaction
    commits after a later-numbered event's is simply still unflagged at the next pass, so no
    committed event can be skipped (decisions IN2). Rows are taken with FOR UPDATE SKIP LOCKED,
    so two workers fan out disjoint events; ON CONFLICT DO NOTHING makes a repeat harmless."""
    events = session.scalars(
        select(Event)
        .where(Event.fanned_out.is_(False))
        .order_by(Event.seq)
        .limit(FAN_OUT_BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    if not events:
        return 0
    scopes = {(e.org_id, e.environment) for e in events}
    subscriptions = session.scalars(
        select(WebhookSubscription).where(
            WebhookSubscription.status.in_(("enabled", "paused")),
            WebhookSubscription.org_id.in_({org for org, _ in scopes}),
        )
    ).all()
    by_scope: dict[tuple[str, str], list[WebhookSubscription]] = {}
    for sub in subscriptions:
        by_scope.setdefault((sub.org_id, sub.environment), []).append(sub)
    rows = []
    for event in events:
        for sub in by_scope.get((event.org_id, event.environment), ()):
            # A subscription receives the events numbered above the newest one at its creation.
            if event.seq <= sub.cursor_seq or not wants(sub.events, event.type):
                continue
            rows.append(
                {
                    "id": new_id("delivery"),
                    "subscription_id": sub.id,
                    "event_id": event.id,
                    "event_seq": event.seq,
                    "event_type": event.type,
                    "event_created_at": event.created_at,
                    "body": encode_body(event),
                    "status": "pending",
                    "attempt_count": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
            )
    _insert_ignoring_duplicates(session, rows)
    session.execute(
        update(Event).where(Event.seq.in_([e.seq for e in events])).values(fanned_out=True)
    )
    return len(rows)


@dataclass(frozen=True)
class _Job:
    delivery_id: str
    url: str
    secret: str
    event_id: str
    body: bytes
    claim_token: str
    org_id: str = ""


def _due(now: dt.datetime) -> tuple:
    return (
        WebhookDelivery.status == "pending",
        WebhookDelivery.next_attempt_at <= now,
        WebhookSubscription.status == "enabled",
    )


def _claim(
    session: Session,
    now: dt.datetime,
    box: SecretBox,
    limit: int = BATCH,
    busy: dict[str, int] | None = None,
) -> list[_Job]:
    """Lease up to `limit` due deliveries, taking organisations in turn (the k-th due delivery
    of every organisation before the (k+1)-th of any), so one organisation's backlog cannot
    starve another's. With `busy` (deliveries this worker has in flight per organisation), an
    organisation gets at most ORG_SHARE of the worker's slots, so 24 slow endpoints of one
    organisation leave room for everyone else. Candidates are chosen without locks (window
    functions cannot be locked), then locked with FOR UPDATE SKIP LOCKED and re-checked: a row
    another worker holds or has just leased is skipped, so a delivery is in flight at most once."""
    turn = (
        func.row_number()
        .over(
            partition_by=WebhookSubscription.org_id,
            order_by=(WebhookDelivery.next_attempt_at, WebhookDelivery.event_seq),
        )
        .label("turn")
    )
    candidates = (
        select(WebhookDelivery.id.label("id"), WebhookSubscription.org_id.label("org_id"), turn)
        .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
        .where(*_due(now))
        .subquery()
    )
    query = select(candidates.c.id)
    if busy is not None:
        # Cap each organisation's slots: its turn plus what it already has in flight.
        for org_id, count in busy.items():
            query = query.where(
                (candidates.c.org_id != org_id) | (candidates.c.turn <= ORG_SHARE - count)
            )
        query = query.where(candidates.c.turn <= ORG_SHARE)
    ids = session.scalars(query.order_by(candidates.c.turn, candidates.c.id).limit(limit)).all()
    if not ids:
        return []
    rows = session.execute(
        select(WebhookDelivery, WebhookSubscription)
        .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
        .where(WebhookDelivery.id.in_(ids), *_due(now))
        .with_for_update(skip_locked=True, of=WebhookDelivery)
    ).all()
    order = {delivery_id: i for i, delivery_id in enumerate(ids)}
    jobs = []
    for delivery, sub in sorted(rows, key=lambda row: order[row[0].id]):
        token = secrets.token_hex(8)
        delivery.next_attempt_at = now + CLAIM_LEASE
        delivery.claim_token = token
        jobs.append(
            _Job(
                delivery.id,
                sub.url,
                box.open(sub.secret),
                delivery.event_id,
                delivery.body.encode(),
                token,
                sub.org_id,
            )
        )
    return jobs


class _Deadline:
    """A total time limit for one attempt. httpx's timeouts are per operation: a receiver that
    drips a byte every few seconds never trips them. At the deadline this shuts the attempt's
    sockets down (found through httpcore's trace hook), which ends any read or write at once."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if name not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _post(
    client: httpx.Client, url: str, body: bytes, headers: dict[str, str], deadline: _Deadline
) -> tuple[int, bytes]:
    """The HTTP POST of one attempt: the status and the first RESPONSE_BODY_LIMIT bytes."""
    extensions = {"trace": deadline.trace}
    with client.stream(
        "POST", url, content=body, headers=headers, extensions=extensions
    ) as response:
        received = b""
        for chunk in response.iter_bytes():
            received += chunk
            if len(received) >= RESPONSE_BODY_LIMIT:
                break
        return response.status_code, received[:RESPONSE_BODY_LIMIT]


def _send(
    client: httpx.Client,
    job: _Job,
    now: dt.datetime,
    pass_started: float,
    clock: Any = None,
    timeout: float = TIMEOUT_SECONDS,
) -> Outcome:
    started = time.perf_counter()
    # attempted_at is when this request goes out, not when the pass began.
    sent_at = clock() if clock else now + dt.timedelta(seconds=started - pass_started)
    headers = delivery_headers(job.secret, job.event_id, job.body, sent_at)
    try:
        with _Deadline(timeout) as deadline:
            status, received = _post(client, job.url, job.body, headers, deadline)
        latency = round((time.perf_counter() - started) * 1000)
        ok = 200 <= status < 300
        return Outcome(
            job.delivery_id,
            status,
            response_excerpt(received),
            latency,
            None if ok else "non_2xx",
            claim_token=job.claim_token,
            sent_at=sent_at,
        )
    except Exception as exc:  # every failure becomes a recorded attempt, never a crash
        latency = round((time.perf_counter() - started) * 1000)
        reason = "timeout" if deadline.expired else classify_error(exc)
        if isinstance(exc, DestinationRefused):
            message = str(exc)  # says what was refused; nothing learnt from the network
        elif deadline.expired:
            message = f"No complete answer within the {timeout:g} s deadline."
        else:
            # Fixed sentences: the exception's own text (resolver errors, errno strings, the
            # address tried) would tell a tenant about the network the service sits in.
            message = ERROR_MESSAGES[reason]
        return Outcome(
            job.delivery_id,
            None,
            None,
            latency,
            reason,
            message,
            claim_token=job.claim_token,
            sent_at=sent_at,
        )


ERROR_MESSAGES = {
    "timeout": "The receiver did not answer in time.",
    "connection_refused": "The receiver refused the connection.",
    "connection_error": "Could not connect to the receiver.",
}


def response_excerpt(received: bytes) -> str:
    """What the history keeps of a reply: its first RESPONSE_BODY_LIMIT bytes as text, control
    characters (other than tab and line breaks) replaced, so a reply cannot smuggle terminal
    escapes or NULs into a tenant's tools."""
    text = received[:RESPONSE_BODY_LIMIT].decode("utf-8", errors="replace")
    return "".join(
        c if c in "\t\n\r" or (c.isprintable() and c not in "\u2028\u2029") else "\ufffd"
        for c in text
    )


def http_client(deps: DeliveryDeps) -> httpx.Client:
    """One client for many attempts. No kept-alive connections: every attempt opens its own, so
    the deadline knows its socket (and receivers are many and different anyway). Connections go
    only to public addresses unless the server allows private ones (bpservice.netguard); proxy
    variables are ignored, since a proxy would connect on the service's behalf unchecked."""
    transport = deps.transport or delivery_transport(
        allow_private=deps.allow_private, resolver=deps.resolver or system_resolver
    )
    return httpx.Client(
        transport=transport,
        timeout=httpx.Timeout(deps.timeout),
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=0),
        trust_env=False,
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
    delivery = session.get(WebhookDelivery, outcome.delivery_id, with_for_update=True)
    if delivery is None:  # the subscription was deleted while we were sending
        return
    if delivery.claim_token != outcome.claim_token:
        # Our lease ran out and another worker took the delivery over: its attempt counts.
        log.warning("webhook delivery %s: lease lost, attempt not recorded", delivery.id)
        return
    delivery.claim_token = None
    delivery.attempt_count += 1
    session.add(
        WebhookAttempt(
            delivery_id=delivery.id,
            number=delivery.attempt_count,
            attempted_at=outcome.sent_at or now,
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
        sub_behind = session.scalar(select(Event.seq).where(Event.fanned_out.is_(False)).limit(1))
        due = session.scalar(
            select(func.count(WebhookDelivery.id))
            .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
            .where(
                WebhookDelivery.status == "pending",
                WebhookDelivery.next_attempt_at <= now,
                WebhookSubscription.status == "enabled",
            )
        )
    if sub_behind is None and not due:
        return 0  # nothing to do: no write transaction taken
    box = deps.secret_box(now)  # before the transaction: the key may be read from the database
    with deps.db.write() as session:
        fan_out(session, now)
        session.flush()
        jobs = _claim(session, now, box)
    if not jobs:
        return 0
    pass_started = time.perf_counter()

    def send(job: _Job) -> Outcome:
        return _send(client, job, now, pass_started, deps.clock, deps.timeout)

    with http_client(deps) as client:
        if len(jobs) == 1:
            outcomes = [send(jobs[0])]
        else:
            with ThreadPoolExecutor(max_workers=min(CONCURRENCY, len(jobs))) as pool:
                outcomes = list(pool.map(send, jobs))
    with deps.db.write() as session:
        for outcome in outcomes:
            _record(session, outcome, now)
    return len(outcomes)


def _attempt(deps: DeliveryDeps, client: httpx.Client, job: _Job) -> None:
    """Send one claimed delivery and record it at once (the background worker's unit of work)."""
    clock = deps.clock or (lambda: dt.datetime.now(dt.UTC))
    outcome = _send(client, job, clock(), time.perf_counter(), deps.clock, deps.timeout)
    with deps.db.write() as session:
        _record(session, outcome, clock())


def _fan_out_and_claim(deps: DeliveryDeps, now: dt.datetime, free: int, busy: dict) -> list[_Job]:
    with deps.db.read() as session:
        pending = session.scalar(select(Event.seq).where(Event.fanned_out.is_(False)).limit(1))
        due = session.scalar(
            select(WebhookDelivery.id)
            .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
            .where(*_due(now))
            .limit(1)
        )
    if pending is None and due is None:
        return []  # nothing to do: no write transaction taken
    box = deps.secret_box(now)  # before the transaction: the key may be read from the database
    with deps.db.write() as session:
        fan_out(session, now)
        session.flush()
        return _claim(session, now, box, limit=free, busy=busy)


async def run(app: Any) -> None:
    """The background worker: keeps up to CONCURRENCY attempts in flight and claims more as each
    one ends, so a pass never waits for its slowest delivery; an organisation holds at most
    ORG_SHARE of the slots. Runs until cancelled."""
    deps = deps_of(app)
    settings = app.state.settings
    in_flight: dict[Future[None], str] = {}
    pool = ThreadPoolExecutor(max_workers=CONCURRENCY, thread_name_prefix="webhook")
    client = http_client(deps)
    try:
        while True:
            for future in [f for f in in_flight if f.done()]:
                in_flight.pop(future)
                if future.exception() is not None:
                    log.error("webhook attempt failed", exc_info=future.exception())
            free = CONCURRENCY - len(in_flight)
            jobs: list[_Job] = []
            if free:
                busy: dict[str, int] = {}
                for org_id in in_flight.values():
                    busy[org_id] = busy.get(org_id, 0) + 1
                try:
                    jobs = await anyio.to_thread.run_sync(
                        _fan_out_and_claim, deps, settings.clock(), free, busy
                    )
                except Exception:
                    log.exception("webhook claim failed")
            for job in jobs:
                in_flight[pool.submit(_attempt, deps, client, job)] = job.org_id
            await asyncio.sleep(0 if jobs else settings.webhook_poll_seconds)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        client.close()
