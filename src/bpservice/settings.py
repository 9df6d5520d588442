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


@dataclass(frozen=True)
class RateLimits:
    """Requests allowed per window for each bucket class (spec, Limits)."""

    per_key: int = 1000
    per_user: int = 300
    bulk: int = 10
    reports: int = 20
    window_seconds: int = 60


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///bpservice.db"
    rate_limits: RateLimits = field(default_factory=RateLimits)
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
