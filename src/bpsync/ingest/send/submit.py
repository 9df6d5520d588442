"""Submit: send the planned calls through the client, paced by its buckets, journaled around every
request, and stop cleanly on Ctrl-C.

Each request is journaled before it is sent and its answer after (`journal`). The client paces
every call from the rate-limit headers, so a 429 is rare; on top of that the submitter leaves a
`headroom` share of each bucket to other traffic of the same key (the watcher, the terminal app).
Meters are worked on concurrently, each meter's readings in start order (the service computes
anomaly flags from earlier readings, so order matters); meters with batches get their own lane so a
wait for the bulk bucket never holds up single calls. Uploads (many meters in one CSV request) go
one after another in a lane of their own; a service without the upload endpoint gets those
readings as batches instead.

A write whose outcome is unknown (a timeout after sending, a dropped connection, a 5xx: the
client's `AmbiguousWriteError`) is reconciled at once (`reconcile`): the meter's readings over the
request's dates are listed, the ones found are accepted with their ids, and only the others are sent again. An
overlap refusal for a reading already stored with the same dates and quantity is "already there"
(skipped), not an error. Ctrl-C lets the requests in flight finish and be journaled, then stops;
a second Ctrl-C cancels them (the next run reconciles them)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

from bpsync.client import errors as E
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.send.answers import Answers
from bpsync.ingest.send.import_records import JournalRow, Outcome
from bpsync.ingest.send.interrupt import Interrupts
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.pacing import Pacer
from bpsync.ingest.send.plan_calls import MAX_BATCH, Call, MeterPlan, Plan
from bpsync.ingest.send.progress import NoProgress, Progress, SubmitStats, SubmitStopped
from bpsync.ingest.send.reconcile import by_meter, found_stored

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


@dataclass
class Submitter:
    """Sends one import's planned calls: lanes of meters and uploads, each request journaled
    before it is sent and its answer after; paced by `Pacer`, answers read by `Answers`."""

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

    def __post_init__(self) -> None:
        self.pacer = Pacer(self.client, self.plan.limits, self.headroom, self.stop)
        self.answers = Answers(self.client, self.stats)

    @property
    def replanned(self) -> str | None:
        """Why the run stopped for a new plan (the service's limits differ from the plan's)."""
        return self.pacer.replanned

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
                await self.pacer.check_assumptions()

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
            await self.pacer.check_assumptions()

    async def _send_upload(self, rows: list[JournalRow]) -> None:
        if not self._has_upload:
            return await self._as_batches(rows)
        for _attempt in range(MAX_AMBIGUOUS_RETRIES + 1):
            await self.pacer.gate(self.pacer.kinds(True))
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
            self._finish(request_id, await self.answers.upload(rows, result))
            return None
        raise SubmitStopped("the service kept failing without saying whether readings were stored")

    async def _as_batches(self, rows: list[JournalRow]) -> None:
        """An upload's rows meter by meter, as batches of at most 500 (or single calls)."""
        for (_, meter), group in by_meter(rows).items():
            for offset in range(0, len(group), MAX_BATCH):
                piece = group[offset : offset + MAX_BATCH]
                kind = "batch" if len(piece) > 1 else "single"
                await self._send(Call(meter, kind, 0, len(piece)), piece)

    async def _send(self, call: Call, rows: list[JournalRow]) -> None:
        meter = call.meter
        building = rows[0].building_id or ""
        for _attempt in range(MAX_AMBIGUOUS_RETRIES + 1):
            batch = call.kind == "batch" and len(rows) > 1
            if not batch and len(rows) > 1:
                for row in rows:  # what is left of a batch after an unknown outcome
                    await self._send(Call(meter, "single", 0, 1), [row])
                return
            await self.pacer.gate(self.pacer.kinds(batch))
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
                    self.answers.batch(building, meter, rows)
                    if batch
                    else self.answers.single(building, meter, rows[0])
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
            found = await found_stored(self.client, rows)
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
