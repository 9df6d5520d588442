"""The service's answer to one call, as each row's outcome for the journal: accepted with the
reading's id, rejected with the service's code and reason, or "already there" when an overlap
refusal is for a reading stored with the same dates and quantity (looked up, so the row is
skipped, not an error)."""

from __future__ import annotations

from dataclasses import dataclass

from bpsync.client import errors as E
from bpsync.client.models import UploadResult
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.send.import_records import JournalRow, Outcome
from bpsync.ingest.send.progress import SubmitStats
from bpsync.ingest.send.reconcile import match_stored, stored_over


@dataclass
class Answers:
    """Sends one call and reads its answer; counts the look-ups overlap refusals need."""

    client: AsyncServiceClient
    stats: SubmitStats

    async def single(self, building: str, meter: str, row: JournalRow) -> list[Outcome]:
        try:
            reading = await self.client.readings.create(building, meter, row.payload)
        except E.OverlapError as exc:
            return await self.overlaps(building, meter, [row], {row.seq: str(exc.message)})
        except E.NotFoundError as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, f"meter not found: {exc.message}")]
        except (E.ValidationError, E.ConflictError, E.LockedError, E.BadRequestError) as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, exc.message)]
        except E.PayloadTooLargeError as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, exc.message)]
        return [Outcome(row.seq, "accepted", reading.id)]

    async def batch(self, building: str, meter: str, rows: list[JournalRow]) -> list[Outcome]:
        try:
            result = await self.client.readings.create_batch(
                building, meter, [r.payload or {} for r in rows]
            )
        except E.NotFoundError as exc:
            reason = f"meter not found: {exc.message}"
            return [Outcome(r.seq, "rejected", None, exc.code, reason) for r in rows]
        except (E.ValidationError, E.BadRequestError, E.PayloadTooLargeError) as exc:
            return [Outcome(r.seq, "rejected", None, exc.code, exc.message) for r in rows]
        errors = {e.index: e for e in result.errors}
        accepted_rows = [r for i, r in enumerate(rows) if i not in errors]
        by_period = {(x.start_date, x.end_date): x.id for x in result.readings}
        outcomes = []
        for r in accepted_rows:
            rid = by_period.get((r.start, r.end))  # type: ignore[arg-type]
            outcomes.append(Outcome(r.seq, "accepted", rid))
        overlaps: dict[int, str] = {}
        overlap_rows = []
        for i, e in errors.items():
            r = rows[i]
            if e.code == "reading_overlap" and e.conflicting_index is None:
                overlaps[r.seq] = e.message
                overlap_rows.append(r)
            else:
                outcomes.append(Outcome(r.seq, "rejected", None, e.code, e.message))
        if overlap_rows:
            outcomes += await self.overlaps(building, meter, overlap_rows, overlaps)
        return outcomes

    async def upload(self, rows: list[JournalRow], result: UploadResult) -> list[Outcome]:
        errors = {e.index: e for e in result.errors}
        accepted = [r for i, r in enumerate(rows) if i not in errors]
        # The stored readings come back in upload order: one for each row not refused.
        outcomes = [
            Outcome(r.seq, "accepted", x.id)
            for r, x in zip(accepted, result.readings, strict=False)
        ]
        overlaps: dict[tuple[str, str], list[JournalRow]] = {}
        reasons: dict[int, str] = {}
        for i, e in sorted(errors.items()):
            r = rows[i]
            if e.code == "reading_overlap" and e.conflicting_index is None:
                overlaps.setdefault((r.building_id or "", r.meter_id or ""), []).append(r)
                reasons[r.seq] = e.message
            elif e.code == "not_found":
                outcomes.append(
                    Outcome(r.seq, "rejected", None, e.code, f"meter not found: {e.message}")
                )
            else:
                outcomes.append(Outcome(r.seq, "rejected", None, e.code, e.message))
        for (building, meter), group in overlaps.items():
            outcomes += await self.overlaps(building, meter, group, reasons)
        return outcomes

    async def overlaps(
        self, building: str, meter: str, rows: list[JournalRow], reasons: dict[int, str]
    ) -> list[Outcome]:
        """Overlap refusals: "already there" when the same reading is stored, else rejected."""
        self.stats.reconcile_requests += 1
        stored = await stored_over(self.client, building, meter, rows)
        found = match_stored(rows, stored)
        return [
            Outcome(seq, "skipped", rid, "already_stored", "already stored with the same values")
            if rid
            else Outcome(seq, "rejected", None, "reading_overlap", reasons[seq])
            for seq, rid in found.items()
        ]
