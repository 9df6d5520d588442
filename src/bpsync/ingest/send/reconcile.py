"""What the service stored of a request whose answer is unknown: the meter's readings over the
request's dates are listed, and a row is "there" when a stored reading has its dates and
quantity. A previous run's requests still in flight are settled this way before anything new is
sent (dlt's rule: finish pending work first); the submitter does the same at once for a write
whose outcome it could not learn."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from bpsync.client import errors as E
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.checks.collected import StoredReading
from bpsync.ingest.lookup.fetch import fetch_readings
from bpsync.ingest.send.import_records import InFlight, JournalRow, Outcome
from bpsync.ingest.send.journal import Journal


def _same(stored: StoredReading, row: JournalRow) -> bool:
    return (
        stored.start == row.start
        and stored.end == row.end
        and row.consumption is not None
        and math.isclose(stored.consumption, row.consumption, rel_tol=1e-9, abs_tol=1e-9)
    )


def match_stored(
    rows: Sequence[JournalRow], stored: Iterable[StoredReading]
) -> dict[int, str | None]:
    """seq → id of the stored reading with the same dates and quantity (None when not found)."""
    by_period = {(s.start, s.end): s for s in stored}
    out: dict[int, str | None] = {}
    for r in rows:
        s = by_period.get((r.start, r.end))  # type: ignore[arg-type]
        out[r.seq] = s.id if s is not None and _same(s, r) else None
    return out


async def stored_over(
    client: AsyncServiceClient, building_id: str, meter_id: str, rows: Sequence[JournalRow]
) -> list[StoredReading]:
    start = min(r.start for r in rows if r.start)
    end = max(r.end for r in rows if r.end)
    return await fetch_readings(client, building_id, meter_id, start, end)


def by_meter(rows: Sequence[JournalRow]) -> dict[tuple[str, str], list[JournalRow]]:
    """(building id, meter id) → its rows: an upload's rows belong to several meters."""
    out: dict[tuple[str, str], list[JournalRow]] = {}
    for r in rows:
        out.setdefault((r.building_id or "", r.meter_id or ""), []).append(r)
    return out


async def found_stored(
    client: AsyncServiceClient, rows: Sequence[JournalRow]
) -> dict[int, str | None]:
    """seq → id of the same reading stored on the service (None: not there), meter by meter."""
    found: dict[int, str | None] = {}
    for (building, meter), group in by_meter(rows).items():
        try:
            stored = await stored_over(client, building, meter, group)
        except E.NotFoundError:
            stored = []  # the meter is gone: nothing was stored; resending will say so
        found.update(match_stored(group, stored))
    return found


async def reconcile_in_flight(
    client: AsyncServiceClient, journal: Journal, target: str
) -> tuple[int, int]:
    """Settle every request a previous run sent without journaling the answer: readings the
    service holds (same dates and quantity) are accepted with their ids, the rest go back to
    pending. Returns (requests reconciled, rows found stored)."""
    found_total = 0
    flights = journal.in_flight(target)
    for flight in flights:
        found_total += await _settle(client, journal, flight)
    return len(flights), found_total


async def _settle(client: AsyncServiceClient, journal: Journal, flight: InFlight) -> int:
    if not flight.rows:
        journal.finish_request(flight.import_id, flight.id, [], status="reconciled")
        return 0
    found = await found_stored(client, flight.rows)
    outcomes = [
        Outcome(seq, "accepted", rid, "reconciled") if rid else Outcome(seq, "pending")
        for seq, rid in found.items()
    ]
    journal.finish_request(flight.import_id, flight.id, outcomes, status="reconciled")
    return sum(1 for rid in found.values() if rid)
