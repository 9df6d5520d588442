"""The watcher's ledger: a SQLite file per profile in the user state dir, keyed on content hash.

`contents` has one row per file content (SHA-256) and target (the service and credential the
readings go to, as the import journal names it): `claimed` while it is being imported, then
`processed` or `failed`. Content already processed is never imported again, whatever the file is
called and however often it is copied back (content that failed is tried again when dropped
again: what made it fail may have been fixed outside the file); a file whose content changed is a new content and a
new import. A claim remembers where the original was, its size and mtime at claim time, and the
private copy the import reads, so an import interrupted by a crash is finished on the next start
(the journal resumes it) before anything new is taken. `files` lists every file settled, newest
last: the tail of it is the status file's `recent`.

Like the journal, it holds paths, hashes, counts and times: never a credential or file contents."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bpsync.ingest import storable_name, stored_name
from bpsync.paths import ensure_private_dir
from bpsync.watch.rules import Snapshot
from bpsync.watch.status import RECENT_LIMIT, Fate, LedgerEntry

ContentState = Literal["claimed", "processed", "failed"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS contents (
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    state TEXT NOT NULL,
    file_name TEXT NOT NULL,
    original_path TEXT NOT NULL,
    original_size INTEGER NOT NULL,
    original_mtime_ns INTEGER NOT NULL,
    work_path TEXT NOT NULL,
    dest_path TEXT,
    claimed_at TEXT NOT NULL,
    settled_at TEXT,
    accepted INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0,
    import_id INTEGER,
    receipt_path TEXT,
    UNIQUE (target, sha256)
);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL,
    file_name TEXT NOT NULL,
    fate TEXT NOT NULL,
    at TEXT NOT NULL,
    accepted INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0,
    receipt_path TEXT,
    stored_as TEXT
);
"""


def _iso(value: dt.datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("ledger times must be timezone-aware")
    return value.astimezone(dt.UTC).isoformat()


def _time(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class Content:
    id: int
    target: str
    sha256: str
    state: ContentState
    file_name: str
    original_path: Path
    original: Snapshot
    work_path: Path
    dest_path: Path | None
    claimed_at: dt.datetime
    settled_at: dt.datetime | None
    accepted: int
    rejected: int
    import_id: int | None
    receipt_path: str | None


class Ledger:
    """The ledger file. One connection, used from one thread (the watcher's import loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        ensure_private_dir(path.parent)
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        # As the import journal: a committed transaction survives SIGKILL.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        path.chmod(0o600)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @staticmethod
    def _content(r: sqlite3.Row) -> Content:
        return Content(
            id=r["id"],
            target=r["target"],
            sha256=r["sha256"],
            state=r["state"],
            file_name=stored_name(r["file_name"]),
            original_path=Path(stored_name(r["original_path"])),
            original=Snapshot(r["original_size"], r["original_mtime_ns"]),
            work_path=Path(stored_name(r["work_path"])),
            dest_path=Path(stored_name(r["dest_path"])) if r["dest_path"] else None,
            claimed_at=_time(r["claimed_at"]),  # type: ignore[arg-type]
            settled_at=_time(r["settled_at"]),
            accepted=r["accepted"],
            rejected=r["rejected"],
            import_id=r["import_id"],
            receipt_path=_name(r["receipt_path"]),
        )

    # ---- contents ------------------------------------------------------------------------------

    def lookup(self, target: str, sha256: str) -> Content | None:
        r = self._db.execute(
            "SELECT * FROM contents WHERE target = ? AND sha256 = ?", (target, sha256)
        ).fetchone()
        return self._content(r) if r else None

    def get(self, content_id: int) -> Content:
        r = self._db.execute("SELECT * FROM contents WHERE id = ?", (content_id,)).fetchone()
        if r is None:
            raise KeyError(content_id)
        return self._content(r)

    def claims(self) -> list[Content]:
        """Contents claimed but not settled (an import a crash or a stop interrupted), oldest
        first: they are finished before anything new is taken."""
        rows = self._db.execute("SELECT * FROM contents WHERE state = 'claimed' ORDER BY id")
        return [self._content(r) for r in rows]

    def claim(
        self,
        *,
        target: str,
        sha256: str,
        original: Path,
        snap: Snapshot,
        work: Path,
        now: dt.datetime,
    ) -> Content:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO contents (target, sha256, state, file_name, original_path,"
                " original_size, original_mtime_ns, work_path, claimed_at)"
                " VALUES (?, ?, 'claimed', ?, ?, ?, ?, ?, ?)",
                (
                    target,
                    sha256,
                    storable_name(original.name),
                    storable_name(str(original)),
                    snap.size,
                    snap.mtime_ns,
                    storable_name(str(work)),
                    _iso(now),
                ),
            )
        return self.get(int(cur.lastrowid or 0))

    def reclaim(
        self, content_id: int, *, original: Path, snap: Snapshot, work: Path, now: dt.datetime
    ) -> Content:
        """A content that failed, dropped again: claimed afresh (the user fixed what made it fail,
        such as the folder's meter links or a template; the journal skips what is stored)."""
        with self._tx() as db:
            db.execute(
                "UPDATE contents SET state = 'claimed', file_name = ?, original_path = ?,"
                " original_size = ?, original_mtime_ns = ?, work_path = ?, dest_path = NULL,"
                " claimed_at = ?, settled_at = NULL, receipt_path = NULL WHERE id = ?",
                (
                    storable_name(original.name),
                    storable_name(str(original)),
                    snap.size,
                    snap.mtime_ns,
                    storable_name(str(work)),
                    _iso(now),
                    content_id,
                ),
            )
        return self.get(content_id)

    def update_claim(
        self, content_id: int, *, target: str, original: Path, snap: Snapshot
    ) -> Content:
        """A claimed content met again: under another file name, or for another target."""
        with self._tx() as db:
            db.execute(
                "UPDATE contents SET target = ?, file_name = ?, original_path = ?,"
                " original_size = ?, original_mtime_ns = ? WHERE id = ?",
                (
                    target,
                    storable_name(original.name),
                    storable_name(str(original)),
                    snap.size,
                    snap.mtime_ns,
                    content_id,
                ),
            )
        return self.get(content_id)

    def retarget(self, content_id: int, target: str) -> Content:
        with self._tx() as db:
            db.execute("UPDATE contents SET target = ? WHERE id = ?", (target, content_id))
        return self.get(content_id)

    def drop_claim(self, content_id: int) -> None:
        """Forget a claim whose private copy is gone (the original is then taken afresh)."""
        with self._tx() as db:
            db.execute("DELETE FROM contents WHERE id = ? AND state = 'claimed'", (content_id,))

    def set_destination(self, content_id: int, dest: Path) -> Content:
        """Record where the file goes before moving anything, so a crash while settling settles
        it at the same place on the next start (never twice)."""
        with self._tx() as db:
            db.execute(
                "UPDATE contents SET dest_path = ? WHERE id = ?",
                (storable_name(str(dest)), content_id),
            )
        return self.get(content_id)

    def settle(
        self,
        content_id: int,
        *,
        fate: Literal["processed", "failed"],
        accepted: int,
        rejected: int,
        import_id: int | None,
        receipt_path: str,
        now: dt.datetime,
    ) -> LedgerEntry:
        content = self.get(content_id)
        with self._tx() as db:
            db.execute(
                "UPDATE contents SET state = ?, settled_at = ?, accepted = ?, rejected = ?,"
                " import_id = ?, receipt_path = ? WHERE id = ?",
                (
                    fate,
                    _iso(now),
                    accepted,
                    rejected,
                    import_id,
                    storable_name(receipt_path),
                    content_id,
                ),
            )
            self._record(
                db,
                content.sha256,
                content.file_name,
                fate,
                now,
                accepted,
                rejected,
                receipt_path,
                str(content.dest_path) if content.dest_path else None,
            )
        return LedgerEntry(
            content.file_name, content.sha256, fate, now, accepted, rejected, receipt_path
        )

    # ---- files ---------------------------------------------------------------------------------

    @staticmethod
    def _record(
        db: sqlite3.Connection,
        sha256: str,
        file_name: str,
        fate: Fate,
        now: dt.datetime,
        accepted: int,
        rejected: int,
        receipt_path: str | None,
        stored_as: str | None,
    ) -> None:
        db.execute(
            "INSERT INTO files (sha256, file_name, fate, at, accepted, rejected, receipt_path,"
            " stored_as) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sha256,
                storable_name(file_name),
                fate,
                _iso(now),
                accepted,
                rejected,
                _storable(receipt_path),
                _storable(stored_as),
            ),
        )

    def record_skipped(
        self, *, sha256: str, file_name: str, receipt_path: str, stored_as: str, now: dt.datetime
    ) -> LedgerEntry:
        """A file whose content was settled before: nothing sent, the file set aside."""
        with self._tx() as db:
            self._record(db, sha256, file_name, "skipped", now, 0, 0, receipt_path, stored_as)
        return LedgerEntry(file_name, sha256, "skipped", now, 0, 0, receipt_path)

    def recent(self, limit: int = RECENT_LIMIT) -> list[LedgerEntry]:
        """The last files settled, newest first."""
        rows = self._db.execute("SELECT * FROM files ORDER BY id DESC LIMIT ?", (limit,))
        return [
            LedgerEntry(
                stored_name(r["file_name"]),
                r["sha256"],
                r["fate"],
                _time(r["at"]),  # type: ignore[arg-type]
                r["accepted"],
                r["rejected"],
                _name(r["receipt_path"]),
            )
            for r in rows
        ]

    def history(self) -> list[tuple[str, str, Fate, str | None]]:
        """(file name, sha256, fate, stored as) of every file settled, oldest first."""
        rows = self._db.execute("SELECT * FROM files ORDER BY id")
        return [
            (stored_name(r["file_name"]), r["sha256"], r["fate"], _name(r["stored_as"]))
            for r in rows
        ]


def _storable(name: str | None) -> str | bytes | None:
    return storable_name(name) if name is not None else None


def _name(value: str | bytes | None) -> str | None:
    return stored_name(value) if value is not None else None
