"""One settings object for the whole service; tests build their own with a scaled window and clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bpservice.faults import FaultSettings

Clock = Callable[[], dt.datetime]


def system_clock() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def database_url(path_or_url: str) -> str:
    """Accept a SQLAlchemy URL as is, and treat anything else as a SQLite file path."""
    if "://" in path_or_url:
        return path_or_url
    return f"sqlite:///{Path(path_or_url).expanduser().resolve()}"


# How long an idle keep-alive connection stays open. Longer than clients keep an idle
# connection in their pools (httpx: 5 s, the same as uvicorn's default): a client reusing one
# the moment the service closes it meets a closed connection on a request the service never
# saw (httpx.ReadError), as 200 concurrent writers retrying after Retry-After did under load.
KEEP_ALIVE_SECONDS = 75


@dataclass(frozen=True)
class RateLimits:
    """Requests allowed per window for each bucket class (spec, Limits)."""

    per_key: int = 1000
    per_user: int = 300
    bulk: int = 10
    reports: int = 20
    window_seconds: int = 60


@dataclass(frozen=True)
class DatabaseLimits:
    """How many requests use the database at once, and how many more may wait and for how long.

    A request waits for its slot on the event loop, never in a worker thread: the 40 threads stay
    free for the requests that hold a slot, so the writer holding SQLite's lock (or a PostgreSQL
    row lock) can always finish and commit. A request that finds the queue full, or waits longer
    than `wait_seconds`, is answered 503 `service_unavailable` with Retry-After. The connection
    pool is sized against the slots, so a request holding one never waits for a connection."""

    # Write transactions at once; None = 1 on SQLite (one writer at a time), 8 elsewhere.
    write_slots: int | None = None
    # Read sessions at once (SQLite WAL readers never wait for the writer; this bounds the pool).
    read_slots: int = 16
    # Requests that may wait for a slot; one more is refused at once.
    write_queue: int = 64
    read_queue: int = 256
    # The longest a request waits for a slot, SQLite's write lock or a PostgreSQL row lock.
    wait_seconds: float = 10.0
    # Retry-After (and error.retry_after) of the 503.
    retry_after_seconds: int = 1

    def __post_init__(self) -> None:
        # More write slots than the 40 worker threads would let writers waiting on one meter's
        # row lock hold every thread while the holder needs one to commit.
        if self.write_slots is not None and not 1 <= self.write_slots <= 32:
            raise ValueError("write_slots must be between 1 and 32")
        if not 1 <= self.read_slots <= 64:
            raise ValueError("read_slots must be between 1 and 64")
        if self.write_queue < 0 or self.read_queue < 0:
            raise ValueError("queues cannot be negative")
        if self.wait_seconds <= 0 or self.retry_after_seconds < 1:
            raise ValueError("wait_seconds must be positive and retry_after_seconds at least 1")


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///bpservice.db"
    rate_limits: RateLimits = field(default_factory=RateLimits)
    # Database slots and their queues (overload answers 503 with Retry-After, never 500).
    database_limits: DatabaseLimits = field(default_factory=DatabaseLimits)
    clock: Clock = system_clock
    # Largest request body accepted; a full 500-reading batch is about 100 KB.
    max_body_bytes: int = 5 * 1024 * 1024
    # Public address of this server, used in absolute links (report downloads); None = from request.
    public_base_url: str | None = None
    # Start background workers (webhook delivery, report generation) with the app
    # (`serve --no-workers` turns this off; `bpservice worker` runs them on their own).
    run_workers: bool = True
    # Schema: None = migrate on start for SQLite (one file, one owner) and only check elsewhere,
    # where `bpservice admin migrate` runs once per deploy. True/False force either.
    migrate_on_start: bool | None = None
    # Shared rate-limit and sign-in throttle state; None = this process's memory (one instance).
    redis_url: str | None = None
    # Prefix of every Redis key, so several services (or tests) can share one Redis.
    redis_prefix: str = "bpservice"
    # Webhook delivery: seconds to wait for a 2xx (spec: 10) and between outbox polls.
    webhook_timeout_seconds: float = 10.0
    webhook_poll_seconds: float = 0.1
    # Key that signs the authorization server's form tokens; None = one key kept in the database
    # (service_secrets), the same for every instance.
    oauth_form_key: bytes | None = None
    # Fernet key(s) sealing webhook secrets at rest (comma-separated: the first seals, all open);
    # None = one key kept in the database (see bpservice.secretbox for what that does not cover).
    secrets_key: str | None = None
    # Let webhooks go to loopback/private/link-local addresses (local testing only; off by
    # default: a tenant's URL must not reach this server's own network, decisions S3).
    allow_private_webhooks: bool = False
    # host, port -> addresses for webhook connections; None = the system resolver (tests inject).
    webhook_resolver: Callable[[str, int], list[str]] | None = None
    # Fault injection for resilience tests (`bpservice serve --faults`); off by default.
    faults: FaultSettings = field(default_factory=FaultSettings)
