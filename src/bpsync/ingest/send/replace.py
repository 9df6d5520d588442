"""Corrected bills (issue 30): rows that replace stored readings, journaled and applied.

Without `--update` a correction or rebill row is journaled `skipped` (code `correction` or
`rebill`): nothing changes on the service, and the summary says how to apply them. With it the
rows are journaled `waiting`, with every stored reading they replace in the trail
(send/trail.py), in the same transaction as the rest of the import. Before the import's readings
are sent, each group of replacements is applied in start order:

1. the old reading is marked `deleting` (committed), then DELETEd (404: an earlier run deleted
   it and lost the answer, which is the same), then marked `deleted`;
2. once every old reading of the group is gone, its rows become `pending` and go with the
   import's other readings, batched as any import (the submitter, its journal and reconciling).

A kill at any point leaves the journal saying what to do next: `deleting` is deleted again,
`deleted` groups release their rows, rows sent are reconciled. So the service ends with either the
old readings or the new ones, never neither (rows are never dropped once the old are gone) and
never both (rows are sent only after their group's deletes). A reading the service refuses to
delete (403 `building_locked`) rejects its group's rows with the service's reason; if another
reading of that group had been deleted already (the lock moved during the import), it is put back
with its old figures. A group whose new readings start inside the building's locked period is
refused before anything is deleted: the service deletes readings that end after the lock date but
refuses new ones that start on or before it (decisions D23), so deleting first left neither."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bpsync.client import errors as E
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.send.import_records import JournalRow, NewRow
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.plan_calls import MAX_UPLOAD, Call, MeterPlan, Plan, Upload, chunks
from bpsync.ingest.send.trail import PlannedReplacement, Replaced, Trail

UPDATE_HINT = "--update"


@dataclass
class ReplacementRows:
    """A checked file's replacements as journal rows, and the trail records to write with them."""

    rows: list[NewRow]
    planned: list[PlannedReplacement]
    listed: list[dict[str, Any]]  # for the dry run and --json: old and new figures


def replacement_rows(
    result: Any, building_of: Mapping[str, str], first_seq: int, update: bool
) -> ReplacementRows:
    """Rows for `result.replacements` (a ValidationResult), numbered from `first_seq` as
    `Journal.create_import` numbers them."""
    rows: list[NewRow] = []
    planned: list[PlannedReplacement] = []
    listed: list[dict[str, Any]] = []
    for grp, rep in enumerate(result.replacements):
        new = result.replacing(rep)
        seqs = tuple(range(first_seq + len(rows), first_seq + len(rows) + len(new)))
        meter_id = new[0].meter_id
        building = building_of.get(meter_id or "", "")
        reason = f"{rep.kind}: replaces {len(rep.old)} stored reading(s); " + (
            "applied" if update else f"not applied without {UPDATE_HINT}"
        )
        for c in new:
            rows.append(
                NewRow(
                    c.row,
                    "waiting" if update else "skipped",
                    c.meter_id,
                    building,
                    c.meter_key,
                    c.start,
                    c.end,
                    c.consumption,
                    c.payload(),
                    code=rep.kind,
                    reason=reason,
                )
            )
        olds = [s.as_dict() for s in rep.old]
        listed.append(
            {
                "kind": rep.kind,
                "meter": rep.meter,
                "meter_id": meter_id,
                "rows": [c.row for c in new],
                "old": olds,
                "new": [c.payload() for c in new],
            }
        )
        if update and meter_id:
            planned += [
                PlannedReplacement(grp, rep.kind, meter_id, building, rep.meter, old, seqs)
                for old in olds
            ]
    return ReplacementRows(rows, planned, listed)


@dataclass
class Applied:
    groups: int = 0
    deleted: int = 0
    refused: int = 0  # groups the service would not replace (locked)


async def apply_replacements(
    client: AsyncServiceClient,
    journal: Journal,
    import_id: int,
    note: Callable[[str], None] = lambda _m: None,
) -> Applied:
    """Delete the stored readings of every group whose rows still wait, then release the rows
    (see the module docstring). Safe to run again after a kill at any point."""
    trail = Trail(journal)
    waiting = {r.seq: r for r in journal.rows(import_id, "waiting")}
    locks: dict[str, dt.date | None] = {}  # building → locked through, read once per run
    out = Applied()
    for olds in trail.groups(import_id).values():
        seqs = [s for s in olds[0].new_seqs if s in waiting]
        if not seqs:
            continue  # released or refused by an earlier run
        out.groups += 1
        gone: set[int] = set()  # the trail ids of the group's readings deleted, now or before
        building = olds[0].building_id
        if building not in locks:
            locks[building] = (await client.buildings.get_lock(building)).locked_through
        new = [waiting[s] for s in seqs]
        refused = await _into_lock(client, trail, olds, new, locks[building], gone)
        if refused is None:
            refused = await _delete_group(client, trail, olds, gone)
        if refused is None:
            out.deleted += len(gone)
            trail.release(import_id, seqs)
            continue
        out.refused += 1
        await _restore(client, trail, [o for o in olds if o.id in gone], refused)
        trail.refuse(import_id, seqs, refused[0], refused[1])
        note(f"not replaced: {refused[1]}")
    return out


async def _into_lock(
    client: AsyncServiceClient,
    trail: Trail,
    olds: list[Replaced],
    rows: Sequence[JournalRow],
    locked_through: dt.date | None,
    gone: set[int],
) -> tuple[str, str] | None:
    """Refuse a group whose new readings start inside the building's locked period before any of
    its old readings is deleted (decisions D23: a reading ending after the lock may be deleted,
    one starting on or before it may not be submitted; deleting first would leave neither).
    Returns (code, reason) in the service's words, else None; `gone` gets the readings of the
    group an earlier run deleted, to be put back."""
    if locked_through is None:
        return None
    early = sorted((r.start, r.end) for r in rows if r.start and r.start <= locked_through)
    if not early:
        return None
    start, end = early[0]
    stored = ", ".join(f"{o.reading_id} ({o.old['start_date']}..{o.old['end_date']})" for o in olds)
    reason = (
        f"stored reading{'s' if len(olds) > 1 else ''} {stored} "
        f"{'were' if len(olds) > 1 else 'was'} not replaced: the new reading "
        f"{start}..{end} reaches into the locked period. The building's readings are "
        f"locked through {locked_through}; a reading starting {start} falls in the locked "
        "period."
    )
    for old in olds:
        if old.status == "deleting":
            # A kill after this DELETE went out, and the lock moved since: finish it, so the
            # reading is known to be gone and is put back below with its old figures.
            try:
                await client.readings.delete(
                    old.building_id, old.meter_id, old.reading_id, defer_recalculation=True
                )
            except E.NotFoundError:
                pass
            except (E.LockedError, E.PermissionDeniedError):
                trail.mark(old.id, "refused", reason)  # still stored: the lock covers it
                continue
            trail.mark(old.id, "deleted")
            gone.add(old.id)
        elif old.status == "deleted":
            gone.add(old.id)
        elif old.status == "planned":
            trail.mark(old.id, "refused", reason)
    return "building_locked", reason


async def _delete_group(
    client: AsyncServiceClient, trail: Trail, olds: list[Replaced], gone: set[int]
) -> tuple[str, str] | None:
    """Delete the group's old readings in start order (a lock covers the earliest first, so a
    refusal comes before any delete). Returns (code, reason) of a refusal, else None."""
    for old in olds:
        if old.status == "deleted":
            gone.add(old.id)
            continue
        if old.status == "refused":
            return "building_locked", old.reason or "the service refused to delete it"
        trail.mark(old.id, "deleting")  # committed before the request goes out
        try:
            await client.readings.delete(
                old.building_id, old.meter_id, old.reading_id, defer_recalculation=True
            )
        except E.NotFoundError:
            pass  # already gone: an earlier run's DELETE whose answer was lost
        except (E.LockedError, E.PermissionDeniedError) as exc:
            code = exc.code or "building_locked"
            reason = (
                f"stored reading {old.reading_id} ({old.old['start_date']}..{old.old['end_date']}) "
                f"was not replaced: {exc.message}"
            )
            trail.mark(old.id, "refused", reason)
            return code, reason
        trail.mark(old.id, "deleted")
        gone.add(old.id)
    return None


async def _restore(
    client: AsyncServiceClient, trail: Trail, olds: list[Replaced], refused: tuple[str, str]
) -> None:
    """Put back the group's readings already deleted (their old figures), so a refused group
    leaves the old readings stored, never neither."""
    for old in olds:
        body = {
            k: old.old[k]
            for k in ("start_date", "end_date", "consumption", "cost", "cost_currency", "demand_kw")
            if old.old.get(k) is not None
        }
        body["start_date"] = dt.date.fromisoformat(body["start_date"])
        body["end_date"] = dt.date.fromisoformat(body["end_date"])
        try:
            await client.readings.create(old.building_id, old.meter_id, body)
        except E.LockedError as exc:
            # The lock moved over the old reading's start while it was deleted (a kill, then a
            # lock, then --resume): the service takes neither back. The trail keeps its figures.
            trail.mark(old.id, "deleted", f"could not be put back: {exc.message}")
            continue
        trail.mark(old.id, "restored", f"put back: {refused[1]}")


def replacing_plan(plan: Plan, sizes: Mapping[str, int], uploads: bool) -> Plan:
    """An import that replaces readings sends each meter's readings in as few writes as it can:
    CSV uploads of every meter (or, without them, a batch per 500 readings of a meter), never
    single calls. The service recalculates a building's benchmark once per write (its deletes
    defer theirs), so the recalculations stay one per write, not one per reading replaced."""
    order = [m for m, n in sizes.items() if n > 0]
    if uploads:
        out: list[Upload] = []
        parts: list[Call] = []
        space = MAX_UPLOAD
        for m in order:
            offset = 0
            while offset < sizes[m]:
                take = min(space, sizes[m] - offset)
                parts.append(Call(m, "upload", offset, take))
                offset, space = offset + take, space - take
                if space == 0:
                    out.append(Upload(tuple(parts)))
                    parts, space = [], MAX_UPLOAD
        if parts:
            out.append(Upload(tuple(parts)))
        return replace(plan, meters=[], uploads=out)
    meters = [
        MeterPlan(m, sizes[m], tuple(Call(m, "batch", o, n) for o, n in chunks(sizes[m])))
        for m in order
    ]
    return replace(plan, meters=meters, uploads=[])
