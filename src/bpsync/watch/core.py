"""The watcher: one asyncio program with two tasks and a queue between them.

- **Scheduling** (`_schedule`): each tick (at most `tick_seconds` apart, sooner when the observer
  hints) takes the candidate files `FolderScanner` finds (schedule.py: observer hints, rescans),
  stats them in a worker thread (a network share may be slow: the loop never waits on it) and
  feeds `StabilityTracker`; a file whose size and mtime held still for `stable_seconds` of the
  injected clock, and that can be opened, is queued in arrival order. It restarts a dead
  observer, writes the status file (on change and every heartbeat) and notices stop requests.
- **Importing** (`_consume`): for each file, copy it to a private work folder while hashing it,
  look the hash up in the ledger (content processed before: set aside as a duplicate), claim it,
  run the import function on the copy, then settle it (settle.py: `processed/YYYY-MM/` with a
  receipt, or `failed/` with the reject report or an explanation). Claims left by a crash are
  finished first, on the next start; the import journal makes that resume exact.
- An unreachable service, refused credentials, rate limits and 5xx pause the import with backoff
  (the injected sleep): the file stays where it is and is retried, never failed or moved.

Signals belong to the entry point (`bpsync watch` turns SIGTERM/SIGINT into `stop()`): a first
stop request lets the file in flight finish (at most `stop_grace` seconds), a second cancels it
at once. Either way nothing is lost: the journal reconciles requests that were in flight, and the
claim is finished at the next start."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math
import os
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout

from bpsync.config import validate_name
from bpsync.paths import ensure_private_dir, state_dir
from bpsync.watch import files
from bpsync.watch.ledger import Content, Ledger
from bpsync.watch.log import WatchLog
from bpsync.watch.rules import (
    DEFAULT_IGNORE,
    Snapshot,
    StabilityTracker,
    Verdict,
    backoff_delay,
    classify,
)
from bpsync.watch.schedule import FolderScanner
from bpsync.watch.service import Connection, FileImporter, FileOutcome
from bpsync.watch.settle import Settler
from bpsync.watch.status import (
    HEARTBEAT_SECONDS,
    RECENT_LIMIT,
    LedgerEntry,
    WatchStatus,
    status_path,
    write_status,
)

T = TypeVar("T")
STATUS_MIN_INTERVAL = 0.2  # seconds between two status writes caused by changes
ONCE_EXTRA_WAIT = 60.0  # --once: seconds beyond stable_seconds to wait for files being written


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class WatchConfig:
    """Where and how to watch. Relative `processed_dir`/`failed_dir` are inside `folder`."""

    folder: Path
    profile: str
    processed_dir: Path = Path("processed")
    failed_dir: Path = Path("failed")
    stable_seconds: float = 5.0
    rescan_seconds: float = 60.0
    poll: bool = False
    poll_interval: float = 1.0
    once: bool = False
    ignore: tuple[str, ...] = DEFAULT_IGNORE
    tick_seconds: float = 0.25
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    backoff_base: float = 2.0
    backoff_cap: float = 300.0
    stop_grace: float = 60.0

    def __post_init__(self) -> None:
        validate_name(self.profile)
        self.folder = Path(self.folder).expanduser().resolve()
        self.processed_dir = (self.folder / Path(self.processed_dir).expanduser()).resolve()
        self.failed_dir = (self.folder / Path(self.failed_dir).expanduser()).resolve()
        if self.folder in (self.processed_dir, self.failed_dir):
            raise ValueError("processed and failed files need a folder other than the watched one")
        if self.stable_seconds < 0 or self.rescan_seconds <= 0:
            raise ValueError("stable_seconds must be >= 0 and rescan_seconds > 0")

    @property
    def state_folder(self) -> Path:
        """`<state dir>/watch`: the status file, the ledger and the private work folder."""
        return status_path(self.profile).parent

    @property
    def ledger_path(self) -> Path:
        return self.state_folder / f"{self.profile}.ledger.sqlite"

    @property
    def work_dir(self) -> Path:
        return self.state_folder / f"{self.profile}.work"

    @property
    def status_file(self) -> Path:
        return status_path(self.profile)

    @property
    def lock_path(self) -> Path:
        return state_dir() / "locks" / f"watch-{self.profile}.lock"


class WatcherBusyError(RuntimeError):
    """Another `bpsync watch` runs for this profile (the status file and ledger are per profile)."""


@dataclass
class RunResult:
    processed: int = 0
    failed: int = 0
    skipped: int = 0
    errored: int = 0  # files a local error (disk full, permissions) left for a later run
    stopped: Verdict | None = None  # --once: the pause that ended the run
    error: str | None = None  # the import loop died (a bug): said, never hidden
    interrupted: bool = False  # a stop request cancelled a file in flight


def private_name(name: str) -> str:
    """The private copy's name: the file's own, or, for a name that is not UTF-8 on disk
    (surrogate escapes from os.fsdecode), its bytes written as escapes (`bills-\\xff.csv`): the
    readers and the journal need text, and the file is settled under its own name anyway."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def summary_line(result: RunResult) -> str:
    """The run in one line; a file a local error left in the folder is counted too (it is neither
    processed nor failed, and "0 failed" alone would hide it)."""
    line = (
        f"stopped: {result.processed} processed, {result.failed} failed, {result.skipped} skipped"
    )
    if result.errored:
        line += (
            f", {result.errored} could not be handled (left in the folder and tried again later)"
        )
    return line


@dataclass(frozen=True)
class Job:
    path: Path
    snap: Snapshot
    claim_id: int | None = None


class _Stop(Exception):
    """Stop processing: a stop request, or --once meeting an unavailable service."""


class _FileFailed(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


class Watcher:
    def __init__(
        self,
        config: WatchConfig,
        importer: FileImporter,
        *,
        log: WatchLog | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], dt.datetime] = _utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self.importer = importer
        self.log = log or WatchLog(now=now)
        self.clock = clock  # stability and rescans
        self.now = now  # wall time for receipts, ledger and status
        self.sleep = sleep  # backoff while paused
        self.rand = rand
        self.tracker = StabilityTracker(config.stable_seconds)
        self.result = RunResult()
        self.connection: Connection | None = None
        self.scanner = FolderScanner(config, self.log, wake=self._wake, publish=self._publish)
        self.settler: Settler | None = None

        self._lock = threading.Lock()  # guards _handed, _pending and status (ticks run in threads)
        self._handed: set[Path] = set()
        self._pending = 0
        self._stop_requests = 0  # incremented by stop(), also from a signal handler
        self._cancel_sent = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None
        self._jobs: asyncio.Queue[Job] | None = None
        self._stop_async: asyncio.Event | None = None
        self._current: asyncio.Task[None] | None = None
        self._current_name: str | None = None
        self._ledger: Ledger | None = None
        self._status_dirty = True
        self._last_status_write = -math.inf
        self._status_error: str | None = None
        started = now()
        self.status = WatchStatus(
            pid=os.getpid(),
            profile=config.profile,
            folder=str(config.folder),
            started_at=started,
            heartbeat_at=started,
            heartbeat_interval=config.heartbeat_seconds,
        )

    # ---- public ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the watcher to stop: the first request finishes the file in flight, the second
        cancels it. Only increments a counter (and wakes the loop), so it is safe in a signal
        handler and from another thread."""
        self._stop_requests += 1
        self._wake()

    @property
    def queue_length(self) -> int:
        with self._lock:
            return len(self.tracker) + self._pending

    def run(self) -> RunResult:
        """Watch until stopped (or, with `once`, until every file present has been settled)."""
        lock = FileLock(
            str(ensure_private_dir(self.config.lock_path.parent) / self.config.lock_path.name),
            timeout=0,
        )
        try:
            lock.acquire()
        except Timeout:
            raise WatcherBusyError(
                f"another bpsync watch is running for profile {self.config.profile!r}"
            ) from None
        try:
            return asyncio.run(self._main())
        finally:
            lock.release()

    def _wake(self) -> None:
        """Wake the scheduler early (from the loop, the observer's thread or a signal)."""
        loop, woken = self._loop, self._woken
        if loop is None or woken is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: the run is over
            loop.call_soon_threadsafe(woken.set)

    # ---- the program -----------------------------------------------------------------------

    async def _main(self) -> RunResult:
        cfg = self.config
        if not cfg.folder.is_dir():
            raise NotADirectoryError(f"{cfg.folder} is not a folder")
        for folder in (cfg.processed_dir, cfg.failed_dir):
            folder.mkdir(parents=True, exist_ok=True)
        ensure_private_dir(cfg.work_dir)
        mode = "once" if cfg.once else ("polling" if cfg.poll else "watching")
        self.log.info(
            "start",
            f"{mode} {cfg.folder} for profile {cfg.profile}; processed files go to "
            f"{cfg.processed_dir}, failed ones to {cfg.failed_dir}",
            folder=str(cfg.folder),
            profile=cfg.profile,
            mode=mode,
        )
        self._loop = asyncio.get_running_loop()
        self._woken = asyncio.Event()
        self._jobs = asyncio.Queue()
        self._stop_async = asyncio.Event()
        self._ledger = Ledger(cfg.ledger_path)
        self.settler = Settler(cfg, self._ledger, self.log, self.result, self._publish, self.now)
        importing = asyncio.create_task(self._import_loop())
        try:
            if not cfg.once:
                self.scanner.start_observer()
            await self._schedule(importing)
        finally:
            await self._shutdown(importing)
        return self.result

    async def _schedule(self, importing: asyncio.Task[None]) -> None:
        cfg = self.config
        assert self._woken is not None
        self.scanner.next_rescan = self.clock()
        # --once does not wait for ever on a file that keeps changing or stays locked: what is
        # not ready by then is left for the next run.
        once_deadline = self.scanner.next_rescan + cfg.stable_seconds + ONCE_EXTRA_WAIT
        while self._stop_requests == 0 and not importing.done():
            await asyncio.to_thread(self._tick)
            if cfg.once and self._idle():
                break
            if cfg.once and self._only_unready_left() and self.clock() > once_deadline:
                names = ", ".join(p.name for p in self.tracker.paths())
                self.log.warning(
                    "left", f"not complete or not readable yet, left for the next run: {names}"
                )
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), cfg.tick_seconds)
            self._woken.clear()

    def _only_unready_left(self) -> bool:
        with self._lock:
            return self._pending == 0 and self.scanner.hints.empty()

    def _idle(self) -> bool:
        with self._lock:
            return len(self.tracker) == 0 and self._pending == 0 and self.scanner.hints.empty()

    def _tick(self) -> None:
        """One look at the folder (in a worker thread: stats may be slow on a network share)."""
        now = self.clock()  # read before any stat: a stat taken later never counts as older
        self.scanner.check_observer()
        candidates = self.scanner.candidates(now) + self.tracker.paths()
        seen: set[Path] = set()
        for path in candidates:
            if path in seen:
                continue
            seen.add(path)
            with self._lock:
                if path in self._handed:
                    continue
            if path.is_symlink():
                self.scanner.skip_link(path)
                continue
            self.tracker.observe(path, files.snapshot(path), now)
        for path, snap in self.tracker.ready(now):
            if self._stop_requests:
                break
            if not files.can_open(path):
                continue
            self.tracker.take(path)
            self._hand(Job(path, snap))
        self._write_status()

    def _hand(self, job: Job) -> None:
        """Queue a ready file (called from a tick's thread)."""
        assert self._loop is not None and self._jobs is not None
        with self._lock:
            self._handed.add(job.path)
            self._pending += 1
            self._status_dirty = True
        try:
            self._loop.call_soon_threadsafe(self._jobs.put_nowait, job)
        except RuntimeError:  # the loop is closing; the run ends on this tick
            with self._lock:
                self._handed.discard(job.path)
                self._pending -= 1
            return
        self.log.debug("queued", f"{job.path.name} is complete: queued", file=job.path.name)

    # ---- status ----------------------------------------------------------------------------

    def _publish(self, entry: LedgerEntry | None = None, **changes: object) -> None:
        """Update the status (from the loop or a tick's thread); the scheduler writes it."""
        with self._lock:
            if entry is not None:
                self.status.recent.insert(0, entry)
                del self.status.recent[RECENT_LIMIT:]
            for key, value in changes.items():
                setattr(self.status, key, value)
            self._status_dirty = True
        self._wake()

    def _write_status(self, *, force: bool = False) -> None:
        mono = time.monotonic()
        elapsed = mono - self._last_status_write
        with self._lock:
            due = elapsed >= self.config.heartbeat_seconds or (
                self._status_dirty and elapsed >= STATUS_MIN_INTERVAL
            )
            if not (due or force):
                return
            self.status.heartbeat_at = self.now()
            self.status.queue_length = len(self.tracker) + self._pending
            current = replace(self.status, recent=list(self.status.recent))
            self._status_dirty = False
        self._last_status_write = mono
        try:
            write_status(current, self.config.status_file)
        except OSError as exc:
            message = f"cannot write the status file ({exc})"
            if message != self._status_error:
                self.log.error("status_error", message)
            self._status_error = message

    # ---- shutdown --------------------------------------------------------------------------

    async def _shutdown(self, importing: asyncio.Task[None]) -> None:
        self.scanner.stop_observer()
        if self._stop_requests and self._current_name:
            self.log.info(
                "stopping",
                f"stopping: finishing {self._current_name} first (a second stop request "
                "cancels it; it then resumes at the next start)",
            )
        elif self._stop_requests:
            self.log.info("stopping", "stopping")
        if self._stop_async is not None:
            self._stop_async.set()
        deadline = time.monotonic() + self.config.stop_grace
        while not importing.done():
            if self._stop_requests >= 2 or time.monotonic() > deadline:
                self._cancel_current()
            await asyncio.wait({importing}, timeout=min(0.1, self.config.tick_seconds))
            self._write_status()
        self._write_status(force=True)
        self.log.info(
            "stopped",
            summary_line(self.result),
            processed=self.result.processed,
            failed=self.result.failed,
            skipped=self.result.skipped,
            errored=self.result.errored or None,
        )

    def _cancel_current(self) -> None:
        if self._cancel_sent:
            return
        self._cancel_sent = True
        if self._current is not None and not self._current.done():
            self.result.interrupted = True
            self._current.cancel()

    # ---- import loop -----------------------------------------------------------------------

    async def _import_loop(self) -> None:
        """Finish what an earlier run claimed, then import queued files until stopped. An
        unexpected error ends the run and is said (never hidden)."""
        assert self._ledger is not None and self._jobs is not None
        try:
            self._clean_work_dir()
            claims = self._ledger.claims()
            with self._lock:
                for c in claims:
                    self._pending += 1
                    self._handed.add(c.original_path)
                    self._jobs.put_nowait(Job(c.original_path, c.original, c.id))
                self.status.recent = self._ledger.recent()
            if claims:
                self.log.info(
                    "resume",
                    f"finishing {len(claims)} file(s) an earlier run left unfinished",
                    count=len(claims),
                )
            await self._consume()
        except Exception as exc:
            self.result.error = f"{type(exc).__name__}: {exc}"
            self.log.error(
                "crashed", f"the import loop stopped on an unexpected error: {self.result.error}"
            )
        finally:
            with contextlib.suppress(Exception):
                await self.importer.aclose()
            self._ledger.close()
            self._wake()

    def _clean_work_dir(self) -> None:
        """Remove half-written copies of ours (a crash while copying); claims keep theirs."""
        for leftover in self.config.work_dir.glob(".incoming-*"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    async def _consume(self) -> None:
        assert self._jobs is not None and self._stop_async is not None
        while not self._stop_async.is_set():
            getter = asyncio.ensure_future(self._jobs.get())
            stopper = asyncio.ensure_future(self._stop_async.wait())
            await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not getter.done():
                getter.cancel()
                break
            job = getter.result()
            if self._stop_async.is_set():
                break
            task = asyncio.create_task(self._process(job))
            self._current, self._current_name = task, job.path.name
            self._publish(last_file=job.path.name)
            rehint = True
            try:
                await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
                self.log.warning(
                    "cancelled",
                    f"cancelled the import of {job.path.name}; it resumes at the next start "
                    "(requests in flight are checked against the service first)",
                    file=job.path.name,
                )
                break
            except _Stop:
                break
            except Exception as exc:
                # Not the file's content and not the service (those are settled or paused):
                # a local failure while copying or settling. The file stays where it is and is
                # taken again at the next rescan; an unfinished claim at the next start.
                reason = exc.verdict.reason if isinstance(exc, _FileFailed) else repr(exc)
                self.result.errored += 1
                self.log.error(
                    "error",
                    f"could not handle {job.path.name}: {reason}; it is tried again later",
                    file=job.path.name,
                )
                self._publish(last_error=f"{job.path.name}: {reason}")
                rehint = False
            finally:
                self._current, self._current_name = None, None
                self._finish(job, rehint=rehint)

    def _finish(self, job: Job, *, rehint: bool = True) -> None:
        # Whatever is at that path now is looked at afresh (hinted before the job stops counting
        # as pending, so --once never sees an idle moment in between).
        if rehint and not self._stop_requests:
            self.scanner.push_hint(str(job.path))
        with self._lock:
            self._pending -= 1
            self._handed.discard(job.path)
            self._status_dirty = True

    async def _stoppable_sleep(self, seconds: float) -> bool:
        """Sleep with the injected sleep; False when a stop request came first."""
        assert self._stop_async is not None
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        stopper = asyncio.ensure_future(self._stop_async.wait())
        done, pending = await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        return sleeper in done and not self._stop_async.is_set()

    async def _retrying(self, file: str, action: Callable[[], Awaitable[T]]) -> T:
        """Run `action` until it succeeds; pause with backoff on what the service or this machine
        causes, raise `_FileFailed` on what the file causes."""
        attempt = 0
        while True:
            try:
                result = await action()
            except (_Stop, _FileFailed):
                raise
            except Exception as exc:
                verdict = classify(exc)
                if verdict.action == "fail":
                    raise _FileFailed(verdict) from exc
                if self.config.once and verdict.code != "busy":
                    self.result.stopped = verdict
                    self.log.error(
                        "unavailable",
                        f"{verdict.reason}; leaving {file} and the rest for the next run",
                        code=verdict.code,
                        file=file,
                    )
                    self._publish(last_error=verdict.reason)
                    raise _Stop from exc
                delay = (
                    verdict.wait
                    if verdict.wait is not None
                    else backoff_delay(
                        attempt, self.config.backoff_base, self.config.backoff_cap, self.rand
                    )
                )
                self.log.warning(
                    "paused",
                    f"paused: {verdict.reason}; {file} waits, retrying in {delay:.0f} s "
                    f"(attempt {attempt + 1})",
                    code=verdict.code,
                    file=file,
                    retry_in=round(delay, 3),
                    attempt=attempt + 1,
                )
                self._publish(paused_reason=verdict.reason, last_error=verdict.reason)
                if verdict.reconnect:
                    await self.importer.reset()
                attempt += 1
                if not await self._stoppable_sleep(delay):
                    raise _Stop from exc
                continue
            if attempt:
                self.log.info(
                    "resumed", f"working again after {attempt} pause(s): {file}", file=file
                )
                self._publish(paused_reason=None)
            return result

    async def _process(self, job: Job) -> None:
        name = job.path.name
        conn = await self._retrying(name, self.importer.connect)
        if self.connection != conn:
            env = conn.environment or "environment set by the OAuth app"
            env = "PRODUCTION" if env == "production" else env
            self.log.info(
                "connected",
                f"sending to {env} at {conn.service}",
                environment=conn.environment,
                service=conn.service,
            )
            self.connection = conn
        content = await self._retrying(name, lambda: self._take(job, conn))
        if content is None:
            return
        try:
            outcome: FileOutcome | Verdict = await self._retrying(
                name, lambda: self.importer.run(content.work_path)
            )
        except _FileFailed as failed:
            outcome = failed.verdict
        await self._retrying(name, lambda: self.settler.settle(content, outcome, conn))

    # ---- claiming --------------------------------------------------------------------------

    async def _take(self, job: Job, conn: Connection) -> Content | None:
        """The ledger's claim for this job's content, or None when there is nothing to import
        (gone, changed since it was found stable, or a duplicate, set aside here)."""
        assert self._ledger is not None
        ledger = self._ledger
        if job.claim_id is not None:
            content = ledger.get(job.claim_id)
            if content.state != "claimed":
                return None
            if not content.work_path.is_file():
                self.log.warning(
                    "claim_lost",
                    f"the private copy of {content.file_name} is gone; taking the file afresh",
                )
                ledger.drop_claim(content.id)
                return None
            if content.target != conn.target:
                other = ledger.lookup(conn.target, content.sha256)
                if other is not None and other.state != "claimed":
                    ledger.drop_claim(content.id)
                    files.remove_tree(content.work_path.parent)
                    return None  # the original is looked at again: a duplicate then
                content = ledger.retarget(content.id, conn.target)
            return content
        snap = await asyncio.to_thread(files.snapshot, job.path)
        if snap is None or snap != job.snap:
            return None
        tmp = self.config.work_dir / f".incoming-{uuid.uuid4().hex}"
        try:
            sha = await asyncio.to_thread(files.copy_and_hash, job.path, tmp)
            after = await asyncio.to_thread(files.snapshot, job.path)
            if after != snap:
                return None  # still being written after all: tracked again
            existing = ledger.lookup(conn.target, sha)
            if existing is not None and existing.state == "claimed":
                return ledger.update_claim(
                    existing.id, target=conn.target, original=job.path, snap=snap
                )
            if existing is not None and existing.state != "failed":
                await self.settler.set_aside(job.path, snap, sha, existing, conn)
                return None
            work = self.config.work_dir / sha[:16] / private_name(job.path.name)
            work.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, work)
        except FileNotFoundError:
            return None  # moved away meanwhile
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if existing is not None:  # failed before: tried again (W4)
            content = ledger.reclaim(
                existing.id, original=job.path, snap=snap, work=work, now=self.now()
            )
        else:
            content = ledger.claim(
                target=conn.target,
                sha256=sha,
                original=job.path,
                snap=snap,
                work=work,
                now=self.now(),
            )
        self.log.debug(
            "claimed",
            f"importing {job.path.name} (sha256 {sha[:12]}…)",
            file=job.path.name,
            sha256=sha,
        )
        return content
