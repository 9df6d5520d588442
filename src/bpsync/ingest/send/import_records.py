"""What the import journal holds, and how its SQLite file holds it: the schema, the records (an
import, a row's fate, a request in flight, a row's outcome) and their encoding into columns and
back. The journal's operations, and the order in which they commit, are `journal.Journal`'s."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bpsync.paths import ensure_private_dir, state_dir

# `waiting`: a row replacing stored readings, held until they are deleted (then `pending`).
RowStatus = Literal["pending", "sent", "accepted", "rejected", "skipped", "waiting"]
ImportStatus = Literal["open", "complete", "superseded"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS imports (
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    file_name TEXT NOT NULL,
    file_path TEXT NOT NULL,
    sheet TEXT,
    template TEXT NOT NULL,
    profile TEXT NOT NULL,
    environment TEXT,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    headers TEXT NOT NULL DEFAULT '[]',
    info TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS imports_by_file ON imports (target, file_hash);
CREATE TABLE IF NOT EXISTS rows (
    import_id INTEGER NOT NULL REFERENCES imports (id),
    seq INTEGER NOT NULL,
    source_row INTEGER,
    meter_id TEXT,
    building_id TEXT,
    meter_key TEXT,
    start_date TEXT,
    end_date TEXT,
    consumption REAL,
    payload TEXT,
    status TEXT NOT NULL,
    reading_id TEXT,
    code TEXT,
    reason TEXT,
    request_id INTEGER,
    row_values TEXT,
    PRIMARY KEY (import_id, seq)
);
CREATE INDEX IF NOT EXISTS rows_by_status ON rows (import_id, status);
CREATE INDEX IF NOT EXISTS rows_by_request ON rows (request_id);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY,
    import_id INTEGER NOT NULL REFERENCES imports (id),
    target TEXT NOT NULL,
    meter_id TEXT NOT NULL,
    building_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    size INTEGER NOT NULL,
    status TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    answered_at TEXT
);
CREATE INDEX IF NOT EXISTS requests_in_flight ON requests (target, status);
CREATE TABLE IF NOT EXISTS replaced (
    id INTEGER PRIMARY KEY,
    import_id INTEGER NOT NULL REFERENCES imports (id),
    grp INTEGER NOT NULL,
    kind TEXT NOT NULL,
    meter_id TEXT NOT NULL,
    building_id TEXT NOT NULL,
    meter_key TEXT,
    reading_id TEXT NOT NULL,
    old TEXT NOT NULL,
    new_seqs TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    who TEXT NOT NULL,
    file_name TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS replaced_by_meter ON replaced (meter_id);
CREATE INDEX IF NOT EXISTS replaced_by_import ON replaced (import_id, grp);
"""


def default_path() -> Path:
    return state_dir() / "imports.sqlite"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ImportRecord:
    id: int
    target: str
    file_hash: str
    file_name: str
    file_path: str
    sheet: str | None
    template: str
    profile: str
    environment: str | None
    status: ImportStatus
    created_at: str
    finished_at: str | None
    headers: list[str]
    info: dict[str, Any]


@dataclass(frozen=True)
class JournalRow:
    """One row's fate. Readings have a meter, dates and a payload; a source row refused before
    sending (a bad date, an unknown meter) has only its row number, reason and original cells."""

    seq: int
    source_row: int | None
    meter_id: str | None
    building_id: str | None
    meter_key: str | None
    start: dt.date | None
    end: dt.date | None
    consumption: float | None
    payload: dict[str, Any] | None
    status: RowStatus
    reading_id: str | None = None
    code: str | None = None
    reason: str | None = None
    request_id: int | None = None
    row_values: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NewRow:
    """A row to record when an import starts."""

    source_row: int | None
    status: RowStatus
    meter_id: str | None = None
    building_id: str | None = None
    meter_key: str | None = None
    start: dt.date | None = None
    end: dt.date | None = None
    consumption: float | None = None
    payload: dict[str, Any] | None = None
    code: str | None = None
    reason: str | None = None
    row_values: Sequence[str] | None = None


@dataclass(frozen=True)
class InFlight:
    """A request that was sent but whose answer was never journaled."""

    id: int
    import_id: int
    meter_id: str
    building_id: str
    kind: str
    start: dt.date
    end: dt.date
    rows: list[JournalRow]


@dataclass(frozen=True)
class Outcome:
    """What the service said about one row of a request."""

    seq: int
    status: RowStatus
    reading_id: str | None = None
    code: str | None = None
    reason: str | None = None


def _date(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def storable_name(name: str) -> str | bytes:
    """A file name or path as SQLite can hold it. A name that is not valid UTF-8 on disk reaches
    Python with surrogate escapes (os.fsdecode), which no UTF-8 text column accepts: it is kept
    as its file-system bytes (a BLOB), so nothing is lost and the path still opens."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name)
    return name


def stored_name(value: str | bytes) -> str:
    """The name `storable_name` kept, as Python names the file again."""
    return os.fsdecode(value) if isinstance(value, bytes) else value


def connect(path: Path) -> sqlite3.Connection:
    """Open (or create) the journal file, private to the user, with the schema in place."""
    ensure_private_dir(path.parent)
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.row_factory = sqlite3.Row
    # WAL + NORMAL: a committed transaction survives the process being killed (SIGKILL);
    # only an OS crash could lose the last one, and the service's overlap rule still
    # prevents a duplicate then.
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.executescript(SCHEMA)
    path.chmod(0o600)
    return db


def import_record(r: sqlite3.Row) -> ImportRecord:
    return ImportRecord(
        r["id"],
        r["target"],
        r["file_hash"],
        stored_name(r["file_name"]),
        stored_name(r["file_path"]),
        r["sheet"],
        r["template"],
        r["profile"],
        r["environment"],
        r["status"],
        r["created_at"],
        r["finished_at"],
        json.loads(r["headers"]),
        json.loads(r["info"]),
    )


def journal_row(r: sqlite3.Row) -> JournalRow:
    return JournalRow(
        r["seq"],
        r["source_row"],
        r["meter_id"],
        r["building_id"],
        r["meter_key"],
        _date(r["start_date"]),
        _date(r["end_date"]),
        r["consumption"],
        json.loads(r["payload"]) if r["payload"] else None,
        r["status"],
        r["reading_id"],
        r["code"],
        r["reason"],
        r["request_id"],
        tuple(json.loads(r["row_values"])) if r["row_values"] else None,
    )


def new_row_columns(import_id: int, seq: int, r: NewRow) -> tuple[Any, ...]:
    """A new row as the `rows` table's columns (import_id … row_values, as `create_import`
    inserts them)."""
    return (
        import_id,
        seq,
        r.source_row,
        r.meter_id,
        r.building_id,
        r.meter_key,
        r.start.isoformat() if r.start else None,
        r.end.isoformat() if r.end else None,
        r.consumption,
        json.dumps(r.payload) if r.payload is not None else None,
        r.status,
        r.code,
        r.reason,
        json.dumps(list(r.row_values)) if r.row_values else None,
    )


def in_flight_record(r: sqlite3.Row, rows: list[JournalRow]) -> InFlight:
    """A `requests` row still in flight, with the rows it carried."""
    return InFlight(
        r["id"],
        r["import_id"],
        r["meter_id"],
        r["building_id"],
        r["kind"],
        dt.date.fromisoformat(r["start_date"]),
        dt.date.fromisoformat(r["end_date"]),
        rows,
    )
