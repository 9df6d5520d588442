"""The watcher's status file: what a running `bpsync watch` is doing, for other processes to read.

One JSON file per profile in the state dir (`status_path`). The watcher rewrites it on every change
and at least every `heartbeat_interval` seconds (`write_status`, an atomic replace, so a reader never
sees half a file); readers (`read_status`) treat a heartbeat older than three intervals as a watcher
that died without cleaning up (`is_stale`). `recent` is the tail of the ledger: the last files the
watcher settled, newest first, each with its fate and the path of its receipt.

The file holds paths, counts and times only: never a credential or file contents."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bpsync.config import validate_name
from bpsync.paths import ensure_private_dir, state_dir

Fate = Literal["processed", "failed", "skipped"]
FATES: tuple[Fate, ...] = ("processed", "failed", "skipped")
SCHEMA_VERSION = 1
HEARTBEAT_SECONDS = 5.0  # the watcher's default heartbeat interval
STALE_FACTOR = 3  # heartbeats a reader may miss before calling the watcher gone
RECENT_LIMIT = 50  # ledger entries kept in the status file (the full ledger lives elsewhere)


class StatusFileError(ValueError):
    """The status file exists but cannot be understood (damaged, or from a newer bpsync)."""


@dataclass(frozen=True)
class LedgerEntry:
    """One settled file: `accepted`/`rejected` count readings; `receipt_path` is the receipt (or
    the reject report) the watcher wrote for it, when there is one."""

    file: str
    sha256: str
    fate: Fate
    at: dt.datetime
    accepted: int = 0
    rejected: int = 0
    receipt_path: str | None = None


@dataclass
class WatchStatus:
    pid: int
    profile: str
    folder: str
    started_at: dt.datetime
    heartbeat_at: dt.datetime
    queue_length: int = 0
    last_file: str | None = None
    last_result: str | None = None  # a short sentence: "accepted 120, rejected 2"
    last_error: str | None = None
    paused_reason: str | None = None  # e.g. "rate limited until 10:42", "not logged in"
    recent: list[LedgerEntry] = field(default_factory=list)
    heartbeat_interval: float = HEARTBEAT_SECONDS


def status_path(profile: str) -> Path:
    """`<state dir>/watch/<profile>.status.json` (the name is checked, so it stays one file)."""
    return state_dir() / "watch" / f"{validate_name(profile)}.status.json"


def _time(value: dt.datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("status times must be timezone-aware")
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _parse_time(value: Any, name: str) -> dt.datetime:
    if not isinstance(value, str):
        raise StatusFileError(f"{name} is not a timestamp")
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise StatusFileError(f"{name} is not a timestamp: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def to_json(status: WatchStatus) -> dict[str, Any]:
    data = asdict(status)
    data["started_at"] = _time(status.started_at)
    data["heartbeat_at"] = _time(status.heartbeat_at)
    data["recent"] = [
        {**asdict(entry), "at": _time(entry.at)} for entry in status.recent[:RECENT_LIMIT]
    ]
    for entry in data["recent"]:
        if entry["fate"] not in FATES:
            raise ValueError(f"unknown fate {entry['fate']!r}")
    return {"version": SCHEMA_VERSION, **data}


def from_json(data: Any) -> WatchStatus:
    if not isinstance(data, dict):
        raise StatusFileError("the status file is not a JSON object")
    version = data.get("version")
    if version != SCHEMA_VERSION:
        raise StatusFileError(f"unsupported status file version {version!r}")
    try:
        recent = []
        for item in data.get("recent") or []:
            fate = item["fate"]
            if fate not in FATES:
                raise StatusFileError(f"unknown fate {fate!r}")
            recent.append(
                LedgerEntry(
                    file=str(item["file"]),
                    sha256=str(item["sha256"]),
                    fate=fate,
                    at=_parse_time(item["at"], "recent.at"),
                    accepted=int(item.get("accepted") or 0),
                    rejected=int(item.get("rejected") or 0),
                    receipt_path=item.get("receipt_path"),
                )
            )
        return WatchStatus(
            pid=int(data["pid"]),
            profile=str(data["profile"]),
            folder=str(data["folder"]),
            started_at=_parse_time(data["started_at"], "started_at"),
            heartbeat_at=_parse_time(data["heartbeat_at"], "heartbeat_at"),
            queue_length=int(data.get("queue_length") or 0),
            last_file=data.get("last_file"),
            last_result=data.get("last_result"),
            last_error=data.get("last_error"),
            paused_reason=data.get("paused_reason"),
            recent=recent,
            heartbeat_interval=float(data.get("heartbeat_interval") or HEARTBEAT_SECONDS),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, StatusFileError):
            raise
        raise StatusFileError(f"the status file is incomplete or malformed ({exc})") from None


def write_status(status: WatchStatus, path: Path | None = None) -> Path:
    """Replace the status file atomically (write a temporary file, then rename over the old one)."""
    path = path or status_path(status.profile)
    ensure_private_dir(path.parent)
    text = json.dumps(to_json(status), indent=1)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_status(profile: str, path: Path | None = None) -> WatchStatus | None:
    """The last status the profile's watcher wrote, or None when no watcher ever wrote one.
    A damaged file raises StatusFileError (the reader says so rather than guessing)."""
    path = path or status_path(profile)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        raise StatusFileError(f"{path} is not valid JSON") from None
    return from_json(data)


def is_stale(status: WatchStatus, now: dt.datetime) -> bool:
    """True when the heartbeat is older than three heartbeat intervals: the watcher is gone."""
    age = (now - status.heartbeat_at).total_seconds()
    return age > STALE_FACTOR * status.heartbeat_interval
