"""Submit: send the planned calls through the client, paced by its buckets, journaled around every
request, and stop cleanly on Ctrl-C.

Each request is journaled before it is sent and its answer after (journal.py). The client paces
every call from the rate-limit headers, so a 429 is rare; on top of that the submitter leaves a
`headroom` share of each bucket to other traffic of the same key (the watcher, the terminal app).
Meters are worked on concurrently, each meter's readings in start order (the service computes
anomaly flags from earlier readings, so order matters); meters with batches get their own lane so a
wait for the bulk bucket never holds up single calls. Uploads (many meters in one CSV request) go
one after another in a lane of their own; a service without the upload endpoint gets those
readings as batches instead.

A write whose outcome is unknown (a timeout after sending, a dropped connection, a 5xx: the
client's `AmbiguousWriteError`) is reconciled at once: the meter's readings over the request's dates
are listed, the ones found are accepted with their ids, and only the others are sent again. An
overlap refusal for a reading already stored with the same dates and quantity is "already there"
(skipped), not an error. Ctrl-C lets the requests in flight finish and be journaled, then stops;
a second Ctrl-C cancels them (the next run reconciles them)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from bpsync.client import errors as E
from bpsync.client.models import UploadResult
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.interrupt import Interrupts
from bpsync.ingest.journal import InFlight, Journal, JournalRow, Outcome
from bpsync.ingest.meters import fetch_readings
from bpsync.ingest.plan import MAX_BATCH, Call, MeterPlan, Plan
from bpsync.ingest.validate import StoredReading

# Failures after which the request was certainly not applied (refused before doing anything, or
# it never arrived): its rows go back to pending and the import stops.
NOT_APPLIED = (
    E.APIConnectionError,
    E.RateLimitError,
    E.AuthenticationError,
    E.PermissionDeniedError,
    E.CredentialsError,
    E.OAuthError,
    E.ServerError,
)
# The journal's meter and building of an upload, whose rows name their own.
UPLOAD_METER = "*"
# An unknown outcome is reconciled and the rest re-sent at most this many times.
MAX_AMBIGUOUS_RETRIES = 3
BATCH_LANE_WORKERS = 2


class Progress(Protocol):
    def start(self, total: int, description: str) -> None: ...

    def advance(self, accepted: int, rejected: int, skipped: int) -> None: ...

    def close(self) -> None: ...


class NoProgress:
    def start(self, total: int, description: str) -> None:
        pass

    def advance(self, accepted: int, rejected: int, skipped: int) -> None:
        pass

    def close(self) -> None:
        pass


class RichProgress:
    """A progress bar on stderr: done/total, accepted · rejected · already there, rate, ETA."""

    def __init__(self, console: object | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RProgress

        self._bar = RProgress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[accepted]} ok[/] · [red]{task.fields[rejected]} "
                "rejected[/] · {task.fields[skipped]} already there"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._task: int | None = None
        self._counts = [0, 0, 0]

    def start(self, total: int, description: str) -> None:
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, accepted=0, rejected=0, skipped=0)

    def advance(self, accepted: int, rejected: int, skipped: int) -> None:
        if self._task is None:
            return
        for i, n in enumerate((accepted, rejected, skipped)):
            self._counts[i] += n
        a, r, s = self._counts
        self._bar.update(
            self._task,  # type: ignore[arg-type]
            advance=accepted + rejected + skipped,
            accepted=a,
            rejected=r,
            skipped=s,
        )

    def close(self) -> None:
        self._bar.stop()


class SubmitStopped(Exception):
    """The import stopped before every row was sent (Ctrl-C, or the service became unreachable,
    refused the credentials, or asked to wait longer than the client will). Rows not yet answered
    stay pending in the journal; `--resume` continues."""

    def __init__(self, reason: str, cause: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause


@dataclass
class SubmitStats:
    accepted: int = 0
    rejected: int = 0
    already_there: int = 0
    requests: int = 0
    upload_calls: int = 0
    batch_calls: int = 0
    single_calls: int = 0
    reconciled: int = 0  # requests whose outcome was unknown and were looked up
    seconds: float = 0.0
    stopped: str | None = None
    reconcile_requests: int = 0

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


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


async def _stored_over(
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


async def _found_stored(
    client: AsyncServiceClient, rows: Sequence[JournalRow]
) -> dict[int, str | None]:
    """seq → id of the same reading stored on the service (None: not there), meter by meter."""
    found: dict[int, str | None] = {}
    for (building, meter), group in by_meter(rows).items():
        try:
            stored = await _stored_over(client, building, meter, group)
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
    found = await _found_stored(client, flight.rows)
    outcomes = [
        Outcome(seq, "accepted", rid, "reconciled") if rid else Outcome(seq, "pending")
        for seq, rid in found.items()
    ]
    journal.finish_request(flight.import_id, flight.id, outcomes, status="reconciled")
    return sum(1 for rid in found.values() if rid)


@dataclass
class Submitter:
    client: AsyncServiceClient
    journal: Journal
    import_id: int
    target: str
    rows: Mapping[str, Sequence[JournalRow]]  # meter id → pending rows, sorted by start
    plan: Plan
    progress: Progress = field(default_factory=NoProgress)
    concurrency: int = 4
    headroom: float = 0.10
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    stats: SubmitStats = field(default_factory=SubmitStats)
    interrupts: Interrupts | None = None  # the entry point's stop requests (Ctrl-C)
    _fatal: BaseException | None = None
    _has_upload: bool = True  # until the service answers the upload with 404
    replanned: str | None = None  # why the run stopped for a new plan (the limits differ)
    _settled: bool = False  # every bucket the plan assumed has been checked against the service

    # ---- running -------------------------------------------------------------------------------

    async def run(self) -> SubmitStats:
        started = time.monotonic()
        total = sum(len(v) for v in self.rows.values())
        self.progress.start(total, "sending")
        tasks: list[asyncio.Task[None]] = []

        def on_request(count: int) -> None:
            self.stop.set()
            if count > 1:  # a second request: do not wait for the requests in flight
                for t in tasks:
                    t.cancel()

        listening = self.interrupts.listen(on_request) if self.interrupts else nullcontext()
        with listening:
            try:
                batch_lane = asyncio.Queue[MeterPlan]()
                single_lane = asyncio.Queue[MeterPlan]()
                for mp in self.plan.meters:
                    (batch_lane if mp.batches else single_lane).put_nowait(mp)
                workers = [(batch_lane, min(BATCH_LANE_WORKERS, self.concurrency))]
                workers.append((single_lane, self.concurrency))
                for queue, n in workers:
                    tasks.extend(asyncio.create_task(self._worker(queue)) for _ in range(n))
                if self.plan.uploads:
                    tasks.append(asyncio.create_task(self._upload_lane()))
                await asyncio.gather(*tasks)
            except asyncio.CancelledError:
                self.stats.stopped = "interrupted"
                raise
            finally:
                for t in tasks:
                    t.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*tasks, return_exceptions=True)
                self.progress.close()
                self.stats.seconds = time.monotonic() - started
        if self._fatal is not None:
            self.stats.stopped = str(self._fatal)
            raise SubmitStopped(str(self._fatal), self._fatal)
        if self.stop.is_set():
            self.stats.stopped = "re-plan" if self.replanned else "interrupted"
        return self.stats

    async def _check_assumptions(self) -> None:
        """After a call: when the service's headers show limits other than the plan assumed (a
        first import, before anything was learned, or changed limits), stop at the next call
        boundary so the importer plans the rest again. Checked until every bucket the plan
        counts on has been learned."""
        limiter = self.client.limiter
        if limiter is None or self._settled or self.replanned:
            return
        snapshot = await asyncio.to_thread(limiter.snapshot)
        assumed = self.plan.limits
        pending = False
        for budget in (assumed.principal, assumed.bulk):
            b = snapshot.get(budget.kind)
            if b is None:
                pending = True
                continue
            if b.limit != budget.limit or abs(b.window - budget.window) > 0.5:
                self.replanned = (
                    f"the service's {budget.kind} limit is {b.limit} per {b.window:.0f} s; the "
                    f"plan assumed {budget.limit} per {budget.window:.0f} s"
                )
                self.stop.set()
                return
        self._settled = not pending

    async def _worker(self, queue: asyncio.Queue[MeterPlan]) -> None:
        while not self.stop.is_set() and self._fatal is None:
            try:
                mp = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            rows = self.rows[mp.meter]
            for call in (piece for c in mp.calls for piece in c.pieces()):
                if self.stop.is_set() or self._fatal is not None:
                    return
                try:
                    await self._send(call, list(rows[call.offset : call.offset + call.size]))
                except SubmitStopped as exc:
                    self._fatal = exc
                    self.stop.set()
                    return
                await self._check_assumptions()

    async def _upload_lane(self) -> None:
        """The uploads, one after another (a meter's pieces follow each other across them)."""
        for upload in self.plan.uploads:
            if self.stop.is_set() or self._fatal is not None:
                return
            rows = [
                row
                for part in upload.parts
                for row in self.rows[part.meter][part.offset : part.offset + part.size]
            ]
            try:
                await self._send_upload(rows)
            except SubmitStopped as exc:
                self._fatal = exc
                self.stop.set()
                return
            await self._check_assumptions()

    async def _send_upload(self, rows: list[JournalRow]) -> None:
        if not self._has_upload:
            return await self._as_batches(rows)
        for _attempt in range(MAX_AMBIGUOUS_RETRIES + 1):
            await self._gate(self._kinds(True))
            request_id = self.journal.begin_request(
                self.import_id, self.target, "upload", UPLOAD_METER, UPLOAD_METER, rows
            )
            self.stats.requests += 1
            self.stats.upload_calls += 1
            try:
                result = await self.client.readings.upload(
                    [(r.meter_id or "", r.payload or {}) for r in rows]
                )
            except E.NotFoundError:
                # A service without the upload (the route answers 404): nothing was stored.
                self._finish(request_id, [Outcome(r.seq, "pending") for r in rows], "failed")
                self._has_upload = False
                return await self._as_batches(rows)
            except E.AmbiguousWriteError:
                rows = await self._reconcile(request_id, rows)
                if not rows:
                    return None
                continue
            except (E.ValidationError, E.BadRequestError, E.PayloadTooLargeError) as exc:
                outcomes = [Outcome(r.seq, "rejected", None, exc.code, exc.message) for r in rows]
                self._finish(request_id, outcomes)
                return None
            except NOT_APPLIED as exc:
                self._finish(request_id, [Outcome(r.seq, "pending") for r in rows], "failed")
                raise SubmitStopped(_why_stopped(exc), exc) from exc
            self._finish(request_id, await self._upload_outcomes(rows, result))
            return None
        raise SubmitStopped("the service kept failing without saying whether readings were stored")

    async def _upload_outcomes(self, rows: list[JournalRow], result: UploadResult) -> list[Outcome]:
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
            outcomes += await self._overlaps(building, meter, group, reasons)
        return outcomes

    async def _as_batches(self, rows: list[JournalRow]) -> None:
        """An upload's rows meter by meter, as batches of at most 500 (or single calls)."""
        for (_, meter), group in by_meter(rows).items():
            for offset in range(0, len(group), MAX_BATCH):
                piece = group[offset : offset + MAX_BATCH]
                kind = "batch" if len(piece) > 1 else "single"
                await self._send(Call(meter, kind, 0, len(piece)), piece)

    # ---- one call ------------------------------------------------------------------------------

    async def _gate(self, kinds: list[str]) -> None:
        """Leave `headroom` of each learned bucket to other traffic: wait for the next window
        when this import has used its share of the current one."""
        limiter = self.client.limiter
        if limiter is None or self.headroom <= 0:
            return
        while True:
            snapshot = await asyncio.to_thread(limiter.snapshot)
            now = limiter.clock()
            wait = 0.0
            for kind in kinds:
                b = snapshot.get(kind)
                if b is None:
                    continue
                reserve = b.limit - max(1, math.floor(b.limit * (1 - self.headroom)))
                if b.remaining <= reserve:
                    wait = max(wait, b.reset - now + 0.02)
            if wait <= 0:
                return
            await self.client.base.sleep(wait)

    def _kinds(self, batch: bool) -> list[str]:
        kind = self.client.credentials.kind
        return [kind, "bulk"] if batch else [kind]

    async def _send(self, call: Call, rows: list[JournalRow]) -> None:
        meter = call.meter
        building = rows[0].building_id or ""
        for _attempt in range(MAX_AMBIGUOUS_RETRIES + 1):
            batch = call.kind == "batch" and len(rows) > 1
            if not batch and len(rows) > 1:
                for row in rows:  # what is left of a batch after an unknown outcome
                    await self._send(Call(meter, "single", 0, 1), [row])
                return
            await self._gate(self._kinds(batch))
            request_id = self.journal.begin_request(
                self.import_id, self.target, "batch" if batch else "single", meter, building, rows
            )
            self.stats.requests += 1
            if batch:
                self.stats.batch_calls += 1
            else:
                self.stats.single_calls += 1
            try:
                outcomes = await (
                    self._send_batch(building, meter, rows)
                    if batch
                    else self._send_single(building, meter, rows[0])
                )
            except E.AmbiguousWriteError:
                rows = await self._reconcile(request_id, rows)
                if not rows:
                    return
                continue
            except NOT_APPLIED as exc:
                self._finish(request_id, [Outcome(r.seq, "pending") for r in rows], "failed")
                raise SubmitStopped(_why_stopped(exc), exc) from exc
            self._finish(request_id, outcomes)
            return
        # Still unknown after several tries: leave the rest pending for the next run.
        raise SubmitStopped("the service kept failing without saying whether readings were stored")

    async def _reconcile(self, request_id: int, rows: list[JournalRow]) -> list[JournalRow]:
        """An unknown outcome: look for the rows on the service (meter by meter); the ones
        found are accepted with their ids, the rest are returned to be sent again."""
        self.stats.reconciled += 1
        try:
            found = await _found_stored(self.client, rows)
        except E.BPSyncError as exc:
            # Leave the request in flight: the next run reconciles it.
            raise SubmitStopped(f"could not check an unanswered request: {exc}") from exc
        outcomes = [
            Outcome(seq, "accepted", rid, "reconciled") if rid else Outcome(seq, "pending")
            for seq, rid in found.items()
        ]
        self._finish(request_id, outcomes, "reconciled")
        return [r for r in rows if not found[r.seq]]

    def _finish(self, request_id: int, outcomes: list[Outcome], status: str = "answered") -> None:
        self.journal.finish_request(self.import_id, request_id, outcomes, status)
        accepted = sum(1 for o in outcomes if o.status == "accepted")
        rejected = sum(1 for o in outcomes if o.status == "rejected")
        skipped = sum(1 for o in outcomes if o.status == "skipped")
        self.stats.accepted += accepted
        self.stats.rejected += rejected
        self.stats.already_there += skipped
        self.progress.advance(accepted, rejected, skipped)

    async def _send_single(self, building: str, meter: str, row: JournalRow) -> list[Outcome]:
        try:
            reading = await self.client.readings.create(building, meter, row.payload)
        except E.OverlapError as exc:
            return await self._overlaps(building, meter, [row], {row.seq: str(exc.message)})
        except E.NotFoundError as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, f"meter not found: {exc.message}")]
        except (E.ValidationError, E.ConflictError, E.LockedError, E.BadRequestError) as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, exc.message)]
        except E.PayloadTooLargeError as exc:
            return [Outcome(row.seq, "rejected", None, exc.code, exc.message)]
        return [Outcome(row.seq, "accepted", reading.id)]

    async def _send_batch(self, building: str, meter: str, rows: list[JournalRow]) -> list[Outcome]:
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
            outcomes += await self._overlaps(building, meter, overlap_rows, overlaps)
        return outcomes

    async def _overlaps(
        self, building: str, meter: str, rows: list[JournalRow], reasons: dict[int, str]
    ) -> list[Outcome]:
        """Overlap refusals: "already there" when the same reading is stored, else rejected."""
        self.stats.reconcile_requests += 1
        stored = await _stored_over(self.client, building, meter, rows)
        found = match_stored(rows, stored)
        return [
            Outcome(seq, "skipped", rid, "already_stored", "already stored with the same values")
            if rid
            else Outcome(seq, "rejected", None, "reading_overlap", reasons[seq])
            for seq, rid in found.items()
        ]


def _why_stopped(exc: BaseException) -> str:
    if isinstance(exc, E.RateLimitError):
        wait = f" ({exc.retry_after:.0f} s)" if exc.retry_after else ""
        return f"the service asked to wait longer than bpsync will{wait}"
    if isinstance(exc, E.APIConnectionError):
        return f"the service is unreachable ({exc})"
    if isinstance(exc, E.AuthenticationError | E.CredentialsError | E.OAuthError):
        return f"the credentials were refused ({exc})"
    if isinstance(exc, E.PermissionDeniedError):
        return f"permission denied ({exc})"
    return str(exc)


def group_pending(rows: Iterable[JournalRow]) -> dict[str, list[JournalRow]]:
    """meter id → rows sorted by start date (the order the service must see them in)."""
    out: dict[str, list[JournalRow]] = {}
    for r in rows:
        if r.meter_id is None:
            continue
        out.setdefault(r.meter_id, []).append(r)
    for rows_ in out.values():
        rows_.sort(key=lambda r: (r.start, r.seq))
    return out
