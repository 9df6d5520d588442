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

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bpsync.ingest.send.import_records import (
    ImportRecord,
    ImportStatus,
    InFlight,
    JournalRow,
    NewRow,
    Outcome,
    RowStatus,
    connect,
    default_path,
    import_record,
    in_flight_record,
    journal_row,
    new_row_columns,
    now,
    storable_name,
)


class Journal:
    """The journal file. One connection, used from one thread (the import's event loop)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._db = connect(self.path)

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

    def latest(self, target: str, file_hash: str, sheet: str | None = None) -> ImportRecord | None:
        """The newest import of this content (and sheet) into this target, unless superseded."""
        r = self._db.execute(
            "SELECT * FROM imports WHERE target = ? AND file_hash = ? AND IFNULL(sheet, '') = ?"
            " AND status != 'superseded' ORDER BY id DESC LIMIT 1",
            (target, file_hash, sheet or ""),
        ).fetchone()
        return import_record(r) if r else None

    def get(self, import_id: int) -> ImportRecord:
        r = self._db.execute("SELECT * FROM imports WHERE id = ?", (import_id,)).fetchone()
        if r is None:
            raise KeyError(import_id)
        return import_record(r)

    def open_imports(self, target: str) -> list[ImportRecord]:
        rows = self._db.execute(
            "SELECT * FROM imports WHERE target = ? AND status = 'open' ORDER BY id", (target,)
        )
        return [import_record(r) for r in rows]

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
        also: Callable[[sqlite3.Connection, int], None] | None = None,
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
                    now(),
                    json.dumps(list(headers)),
                    json.dumps(info),
                ),
            )
            import_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT INTO rows (import_id, seq, source_row, meter_id, building_id, meter_key,"
                " start_date, end_date, consumption, payload, status, code, reason, row_values)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_row_columns(import_id, seq, r) for seq, r in enumerate(rows)),
            )
            if also is not None:  # the readings it replaces (send/trail.py), in the same commit
                also(db, import_id)
        return import_id

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the journal's connection (for send/trail.py)."""
        with self._tx() as db:
            yield db

    @property
    def connection(self) -> sqlite3.Connection:
        return self._db

    def replacements(self, meter_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The trail of these meters' replaced readings, newest first (send/trail.py)."""
        from bpsync.ingest.send.trail import Trail  # it builds on this class

        return Trail(self).for_meter(meter_ids)

    def set_status(self, import_id: int, status: ImportStatus, info: dict[str, Any] | None = None):
        with self._tx() as db:
            if info is not None:
                db.execute(
                    "UPDATE imports SET info = ? WHERE id = ?", (json.dumps(info), import_id)
                )
            db.execute(
                "UPDATE imports SET status = ?, finished_at = ? WHERE id = ?",
                (status, now() if status != "open" else None, import_id),
            )

    # ---- rows ----------------------------------------------------------------------------------

    def rows(self, import_id: int, status: RowStatus | None = None) -> list[JournalRow]:
        query = "SELECT * FROM rows WHERE import_id = ?"
        args: tuple[Any, ...] = (import_id,)
        if status is not None:
            query += " AND status = ?"
            args += (status,)
        return [journal_row(r) for r in self._db.execute(query + " ORDER BY seq", args)]

    def counts(self, import_id: int) -> dict[str, int]:
        out = {s: 0 for s in ("pending", "sent", "accepted", "rejected", "skipped", "waiting")}
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
                    now(),
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
                (status, now(), request_id),
            )

    def in_flight(self, target: str) -> list[InFlight]:
        out = []
        for r in self._db.execute(
            "SELECT * FROM requests WHERE target = ? AND status = 'in_flight' ORDER BY id",
            (target,),
        ).fetchall():
            rows = [
                journal_row(x)
                for x in self._db.execute(
                    "SELECT * FROM rows WHERE request_id = ? AND status = 'sent' ORDER BY seq",
                    (r["id"],),
                )
            ]
            out.append(in_flight_record(r, rows))
        return out

    def request_count(self, import_id: int) -> int:
        r = self._db.execute(
            "SELECT COUNT(*) AS n FROM requests WHERE import_id = ?", (import_id,)
        ).fetchone()
        return int(r["n"])
