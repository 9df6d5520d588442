"""The trail of replaced readings (issue 30): every stored reading an `import --update` replaces,
kept in the journal's `replaced` table with who, when, the file, its old figures and the rows that
replace it. A replacement is recorded when the import is journaled (before anything is sent), and
each old reading is marked `deleting` before its DELETE goes out and `deleted` after the answer,
so a resumed import knows exactly where it stopped (send/replace.py)."""

from __future__ import annotations

import getpass
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bpsync.ingest.send.import_records import now

if TYPE_CHECKING:  # the journal hands itself over (Journal.replacements): no import cycle
    from bpsync.ingest.send.journal import Journal

# planned → deleting → deleted; refused (not replaced because of a locked period: the service
# would not delete it, or its group's new readings start inside the lock); restored (deleted,
# then put back because its group was refused).
STATUSES = ("planned", "deleting", "deleted", "refused", "restored")


def who_am_i(profile: str) -> str:
    """Who replaced a reading: the OS user and the bpsync profile (never a credential)."""
    try:
        user = getpass.getuser()
    except Exception:  # no login name in this environment (a container without passwd entry)
        user = "unknown"
    return f"{user} (profile {profile})"


@dataclass(frozen=True)
class PlannedReplacement:
    """One stored reading to replace, as recorded when the import is journaled."""

    grp: int
    kind: str
    meter_id: str
    building_id: str
    meter_key: str | None
    old: dict[str, Any]  # the stored reading's id, period and figures
    new_seqs: tuple[int, ...]  # the journal rows replacing it


@dataclass(frozen=True)
class Replaced:
    """A row of the trail."""

    id: int
    import_id: int
    grp: int
    kind: str
    meter_id: str
    building_id: str
    meter_key: str | None
    reading_id: str
    old: dict[str, Any]
    new_seqs: tuple[int, ...]
    status: str
    reason: str | None
    who: str
    file_name: str
    recorded_at: str
    deleted_at: str | None


def _replaced(r: sqlite3.Row) -> Replaced:
    return Replaced(
        r["id"],
        r["import_id"],
        r["grp"],
        r["kind"],
        r["meter_id"],
        r["building_id"],
        r["meter_key"],
        r["reading_id"],
        json.loads(r["old"]),
        tuple(json.loads(r["new_seqs"])),
        r["status"],
        r["reason"],
        r["who"],
        r["file_name"],
        r["recorded_at"],
        r["deleted_at"],
    )


def record_planned(
    db: sqlite3.Connection,
    import_id: int,
    planned: Sequence[PlannedReplacement],
    who: str,
    file_name: str,
) -> None:
    """Write the replacements of a new import (inside `Journal.create_import`'s transaction)."""
    at = now()
    db.executemany(
        "INSERT INTO replaced (import_id, grp, kind, meter_id, building_id, meter_key, reading_id,"
        " old, new_seqs, status, who, file_name, recorded_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'planned', ?, ?, ?)",
        (
            (
                import_id,
                p.grp,
                p.kind,
                p.meter_id,
                p.building_id,
                p.meter_key,
                p.old["id"],
                json.dumps(p.old),
                json.dumps(list(p.new_seqs)),
                who,
                file_name,
                at,
            )
            for p in planned
        ),
    )


class Trail:
    """The `replaced` table of a journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def groups(self, import_id: int) -> dict[int, list[Replaced]]:
        """grp → its stored readings, by start date."""
        out: dict[int, list[Replaced]] = {}
        for r in self.journal.connection.execute(
            "SELECT * FROM replaced WHERE import_id = ? ORDER BY grp, id", (import_id,)
        ):
            out.setdefault(r["grp"], []).append(_replaced(r))
        for olds in out.values():
            olds.sort(key=lambda o: o.old["start_date"])
        return out

    def mark(self, replaced_id: int, status: str, reason: str | None = None) -> None:
        """Committed at once: `deleting` before the DELETE is sent, `deleted` after."""
        assert status in STATUSES
        with self.journal.transaction() as db:
            db.execute(
                "UPDATE replaced SET status = ?, reason = COALESCE(?, reason),"
                " deleted_at = CASE WHEN ? = 'deleted' THEN ? ELSE deleted_at END WHERE id = ?",
                (status, reason, status, now(), replaced_id),
            )

    def release(self, import_id: int, seqs: Sequence[int]) -> None:
        """The group's old readings are gone: its rows may be sent."""
        with self.journal.transaction() as db:
            db.executemany(
                "UPDATE rows SET status = 'pending' WHERE import_id = ? AND seq = ?"
                " AND status = 'waiting'",
                ((import_id, seq) for seq in seqs),
            )

    def refuse(self, import_id: int, seqs: Sequence[int], code: str, reason: str) -> None:
        """The group cannot be replaced: its rows are rejected with the service's reason."""
        with self.journal.transaction() as db:
            db.executemany(
                "UPDATE rows SET status = 'rejected', code = ?, reason = ?"
                " WHERE import_id = ? AND seq = ? AND status = 'waiting'",
                ((code, reason, import_id, seq) for seq in seqs),
            )

    def for_meter(self, meter_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Every replacement of these meters, newest first: who, when, the file, the old
        reading and the rows that replaced it (their figures and fate)."""
        if not meter_ids:
            return []
        marks = ",".join("?" for _ in meter_ids)
        db = self.journal.connection
        out = []
        for r in db.execute(
            f"SELECT * FROM replaced WHERE meter_id IN ({marks}) ORDER BY id DESC",
            tuple(meter_ids),
        ):
            item = _replaced(r)
            new = []
            for seq in item.new_seqs:
                row = db.execute(
                    "SELECT * FROM rows WHERE import_id = ? AND seq = ?", (item.import_id, seq)
                ).fetchone()
                if row is None:
                    continue
                payload = json.loads(row["payload"]) if row["payload"] else {}
                new.append(
                    {
                        "row": row["source_row"],
                        "status": row["status"],
                        "reading_id": row["reading_id"],
                        **payload,
                    }
                )
            out.append(
                {
                    "when": item.deleted_at or item.recorded_at,
                    "who": item.who,
                    "file": item.file_name,
                    "import_id": item.import_id,
                    "kind": item.kind,
                    "status": item.status,
                    "reason": item.reason,
                    "meter_id": item.meter_id,
                    "meter": item.meter_key,
                    "old": item.old,
                    "new": new,
                }
            )
        return out

    def counts(self, import_id: int) -> dict[str, int]:
        """Rows accepted as corrections and as rebills, stored readings deleted, rows refused."""
        db = self.journal.connection
        out = {"corrections": 0, "rebills": 0, "replaced": 0, "refused": 0}
        seen: set[int] = set()
        for item in self.groups(import_id).values():
            out["replaced"] += sum(1 for o in item if o.status == "deleted")
            for seq in item[0].new_seqs:
                if seq in seen:
                    continue
                seen.add(seq)
                row = db.execute(
                    "SELECT status FROM rows WHERE import_id = ? AND seq = ?", (import_id, seq)
                ).fetchone()
                if row is None:
                    continue
                if row["status"] == "accepted":
                    out["corrections" if item[0].kind == "correction" else "rebills"] += 1
                elif row["status"] == "rejected":
                    out["refused"] += 1
        return out
