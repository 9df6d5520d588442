"""The import journal: a SQLite file in the user state dir that makes imports resumable.

It records each import (file hash, template, profile, environment, target service), each row's
fate (`pending` → `sent` → `accepted` with the reading id, or `rejected` with the reason, or
`skipped`), and each request in flight. The order is dlt's and the Meltano SDK's: the rows a
request carries are marked `sent` and the request recorded as `in_flight`, and that is committed
*before* the request is sent; the answer is committed after it arrives. A crash between the two
leaves an `in_flight` request, which the next run reconciles against the service (list the meter's
readings over the request's dates) before it sends anything new, so nothing is lost and nothing is
sent twice. (Even a journal that lost its last write could not cause a duplicate: the service
refuses overlapping readings, and an overlap with the same values counts as "already there".)

No secret is stored here: the target is the base URL and the credential's fingerprint."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bpsync.paths import ensure_private_dir, state_dir

RowStatus = Literal["pending", "sent", "accepted", "rejected", "skipped"]
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
"""


def default_path() -> Path:
    return state_dir() / "imports.sqlite"


def _now() -> str:
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


class Journal:
    """The journal file. One connection, used from one thread (the import's event loop)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        ensure_private_dir(self.path.parent)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        # WAL + NORMAL: a committed transaction survives the process being killed (SIGKILL);
        # only an OS crash could lose the last one, and the service's overlap rule still
        # prevents a duplicate then.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        self.path.chmod(0o600)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ---- imports -------------------------------------------------------------------------------

    @staticmethod
    def _import(r: sqlite3.Row) -> ImportRecord:
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

    def latest(self, target: str, file_hash: str, sheet: str | None = None) -> ImportRecord | None:
        """The newest import of this content (and sheet) into this target, unless superseded."""
        r = self._db.execute(
            "SELECT * FROM imports WHERE target = ? AND file_hash = ? AND IFNULL(sheet, '') = ?"
            " AND status != 'superseded' ORDER BY id DESC LIMIT 1",
            (target, file_hash, sheet or ""),
        ).fetchone()
        return self._import(r) if r else None

    def get(self, import_id: int) -> ImportRecord:
        r = self._db.execute("SELECT * FROM imports WHERE id = ?", (import_id,)).fetchone()
        if r is None:
            raise KeyError(import_id)
        return self._import(r)

    def open_imports(self, target: str) -> list[ImportRecord]:
        rows = self._db.execute(
            "SELECT * FROM imports WHERE target = ? AND status = 'open' ORDER BY id", (target,)
        )
        return [self._import(r) for r in rows]

    def create_import(
        self,
        *,
        target: str,
        file_hash: str,
        path: Path,
        sheet: str | None,
        template: str,
        profile: str,
        environment: str | None,
        headers: Sequence[str],
        info: dict[str, Any],
        rows: Iterable[NewRow],
    ) -> int:
        """Record an import and every row's starting fate in one transaction: the whole load
        package is on disk before the first request is sent."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO imports (target, file_hash, file_name, file_path, sheet, template,"
                " profile, environment, status, created_at, headers, info)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)",
                (
                    target,
                    file_hash,
                    storable_name(path.name),
                    storable_name(str(path)),
                    sheet,
                    template,
                    profile,
                    environment,
                    _now(),
                    json.dumps(list(headers)),
                    json.dumps(info),
                ),
            )
            import_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT INTO rows (import_id, seq, source_row, meter_id, building_id, meter_key,"
                " start_date, end_date, consumption, payload, status, code, reason, row_values)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
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
                    for seq, r in enumerate(rows)
                ),
            )
        return import_id

    def set_status(self, import_id: int, status: ImportStatus, info: dict[str, Any] | None = None):
        with self._tx() as db:
            if info is not None:
                db.execute(
                    "UPDATE imports SET info = ? WHERE id = ?", (json.dumps(info), import_id)
                )
            db.execute(
                "UPDATE imports SET status = ?, finished_at = ? WHERE id = ?",
                (status, _now() if status != "open" else None, import_id),
            )

    # ---- rows ----------------------------------------------------------------------------------

    @staticmethod
    def _row(r: sqlite3.Row) -> JournalRow:
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

    def rows(self, import_id: int, status: RowStatus | None = None) -> list[JournalRow]:
        query = "SELECT * FROM rows WHERE import_id = ?"
        args: tuple[Any, ...] = (import_id,)
        if status is not None:
            query += " AND status = ?"
            args += (status,)
        return [self._row(r) for r in self._db.execute(query + " ORDER BY seq", args)]

    def counts(self, import_id: int) -> dict[str, int]:
        out = {s: 0 for s in ("pending", "sent", "accepted", "rejected", "skipped")}
        for r in self._db.execute(
            "SELECT status, COUNT(*) AS n FROM rows WHERE import_id = ? GROUP BY status",
            (import_id,),
        ):
            out[r["status"]] = r["n"]
        return out

    def code_counts(self, import_id: int, status: RowStatus) -> dict[str, int]:
        return {
            r["code"] or "": r["n"]
            for r in self._db.execute(
                "SELECT code, COUNT(*) AS n FROM rows WHERE import_id = ? AND status = ?"
                " GROUP BY code",
                (import_id, status),
            )
        }

    def set_row_values(self, import_id: int, values: dict[int, Sequence[str]]) -> None:
        with self._tx() as db:
            db.executemany(
                "UPDATE rows SET row_values = ? WHERE import_id = ? AND seq = ?",
                ((json.dumps(list(v)), import_id, seq) for seq, v in values.items()),
            )

    # ---- requests ------------------------------------------------------------------------------

    def begin_request(
        self,
        import_id: int,
        target: str,
        kind: str,
        meter_id: str,
        building_id: str,
        rows: Sequence[JournalRow],
    ) -> int:
        """Record a request and mark its rows `sent`; committed before the request goes out."""
        start = min(r.start for r in rows if r.start)
        end = max(r.end for r in rows if r.end)
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO requests (import_id, target, meter_id, building_id, kind, start_date,"
                " end_date, size, status, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'in_flight', ?)",
                (
                    import_id,
                    target,
                    meter_id,
                    building_id,
                    kind,
                    start.isoformat(),  # type: ignore[union-attr]
                    end.isoformat(),  # type: ignore[union-attr]
                    len(rows),
                    _now(),
                ),
            )
            request_id = int(cur.lastrowid or 0)
            db.executemany(
                "UPDATE rows SET status = 'sent', request_id = ? WHERE import_id = ? AND seq = ?",
                ((request_id, import_id, r.seq) for r in rows),
            )
        return request_id

    def finish_request(
        self,
        import_id: int,
        request_id: int,
        outcomes: Iterable[Outcome],
        status: str = "answered",
    ) -> None:
        """Commit the answer: each row's fate, and the request as answered (or reconciled)."""
        with self._tx() as db:
            db.executemany(
                "UPDATE rows SET status = ?, reading_id = ?, code = ?, reason = ?"
                " WHERE import_id = ? AND seq = ?",
                ((o.status, o.reading_id, o.code, o.reason, import_id, o.seq) for o in outcomes),
            )
            db.execute(
                "UPDATE requests SET status = ?, answered_at = ? WHERE id = ?",
                (status, _now(), request_id),
            )

    def in_flight(self, target: str) -> list[InFlight]:
        out = []
        for r in self._db.execute(
            "SELECT * FROM requests WHERE target = ? AND status = 'in_flight' ORDER BY id",
            (target,),
        ).fetchall():
            rows = [
                self._row(x)
                for x in self._db.execute(
                    "SELECT * FROM rows WHERE request_id = ? AND status = 'sent' ORDER BY seq",
                    (r["id"],),
                )
            ]
            out.append(
                InFlight(
                    r["id"],
                    r["import_id"],
                    r["meter_id"],
                    r["building_id"],
                    r["kind"],
                    dt.date.fromisoformat(r["start_date"]),
                    dt.date.fromisoformat(r["end_date"]),
                    rows,
                )
            )
        return out

    def request_count(self, import_id: int) -> int:
        r = self._db.execute(
            "SELECT COUNT(*) AS n FROM requests WHERE import_id = ?", (import_id,)
        ).fetchone()
        return int(r["n"])
