"""The watcher core: a scheduler thread that turns hints into ready files, and an import thread
that settles them one at a time, with a queue between them.

- **Scheduler** (the thread that calls `Watcher.run`, normally the main thread): drains the hints
  the watchdog observer pushes (created, modified, moved-in, closed), rescans the folder at start
  and every `rescan_seconds`, stats every candidate and feeds `StabilityTracker`; a file whose size
  and mtime held still for `stable_seconds` of the injected clock, and that can be opened, is
  handed to the import queue in arrival order. It restarts a dead observer, writes the status
  file (on change and every heartbeat) and notices stop requests. It never waits on the network.
- **Import loop** (its own thread and asyncio loop, which also keeps the import engine's Ctrl-C
  handler out of the way: signals belong to the scheduler): for each file, copy it to a private
  work folder while hashing it, look the hash up in the ledger (content settled before: set the
  file aside as a duplicate), claim it, run the import function on the copy, then move the file
  to `processed/YYYY-MM/` with a receipt, or to `failed/` with the reject report or an
  explanation. Claims left by a crash are finished first, on the next start; the import journal
  makes that resume exact.
- An unreachable service, refused credentials, rate limits and 5xx pause the loop with backoff
  (the injected sleep): the file stays where it is and is retried, never failed or moved.

A stop request lets the file in flight finish (at most `stop_grace` seconds), then exits; a second
request cancels it at once. Either way nothing is lost: the journal reconciles requests that were
in flight, and the claim is finished at the next start."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from filelock import FileLock, Timeout
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from bpsync.config import validate_name
from bpsync.ingest.results import group_problems
from bpsync.paths import ensure_private_dir, state_dir
from bpsync.watch import files
from bpsync.watch.ledger import Content, Ledger
from bpsync.watch.log import WatchLog
from bpsync.watch.rules import (
    DEFAULT_IGNORE,
    ReceiptInput,
    Snapshot,
    StabilityTracker,
    Verdict,
    backoff_delay,
    classify,
    explanation_name,
    explanation_text,
    is_ignored,
    make_receipt,
    month_folder,
    receipt_name,
    reject_report_name,
    result_sentence,
    unique_name,
)
from bpsync.watch.service import Connection, FileImporter, FileOutcome
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
OBSERVER_RETRY_SECONDS = 5.0
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


class _Hints(FileSystemEventHandler):
    """Runs on the observer's thread: it only records paths (never blocks, never does I/O)."""

    def __init__(self, push: Callable[[str], None]) -> None:
        self.push = push

    def on_created(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self.push(os.fsdecode(event.src_path))

    def on_modified(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self.push(os.fsdecode(event.src_path))

    def on_closed(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self.push(os.fsdecode(event.src_path))

    def on_moved(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self.push(os.fsdecode(event.dest_path))


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

        self._hints: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # guards _handed, _pending and status
        self._handed: set[Path] = set()
        self._pending = 0
        self._stop_requests = 0  # incremented by stop(), also from a signal handler
        self._cancel_sent = False
        self._import_ready = threading.Event()
        self._import_done = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._jobs: asyncio.Queue[Job] | None = None
        self._stop_async: asyncio.Event | None = None
        self._current: asyncio.Task[None] | None = None
        self._current_name: str | None = None
        self._ledger: Ledger | None = None
        self._observer: BaseObserver | None = None
        self._observer_retry_at = 0.0
        self._next_rescan = 0.0
        self._folder_error: str | None = None
        self._links_reported: set[Path] = set()
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
        cancels it. Only increments a counter, so it is safe in a signal handler."""
        self._stop_requests += 1

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
            return self._run()
        finally:
            lock.release()

    # ---- scheduler -------------------------------------------------------------------------

    def _run(self) -> RunResult:
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
        thread = threading.Thread(
            target=self._import_thread, name="bpsync-watch-import", daemon=True
        )
        thread.start()
        self._import_ready.wait()
        if not cfg.once:
            self._start_observer()
        self._next_rescan = self.clock()
        # --once does not wait for ever on a file that keeps changing or stays locked: what is
        # not ready by then is left for the next run.
        once_deadline = self._next_rescan + cfg.stable_seconds + ONCE_EXTRA_WAIT
        try:
            while self._stop_requests == 0 and not self._import_done.is_set():
                self._tick()
                if cfg.once and self._idle():
                    break
                if cfg.once and self._only_unready_left() and self.clock() > once_deadline:
                    names = ", ".join(p.name for p in self.tracker.paths())
                    self.log.warning(
                        "left",
                        f"not complete or not readable yet, left for the next run: {names}",
                    )
                    break
                self._wake.wait(cfg.tick_seconds)
                self._wake.clear()
        finally:
            self._shutdown(thread)
        return self.result

    def _only_unready_left(self) -> bool:
        with self._lock:
            return self._pending == 0 and self._hints.empty()

    def _idle(self) -> bool:
        with self._lock:
            return len(self.tracker) == 0 and self._pending == 0 and self._hints.empty()

    def _tick(self) -> None:
        cfg = self.config
        now = self.clock()  # read before any stat: a stat taken later never counts as older
        self._check_observer()
        candidates: list[Path] = []
        if now >= self._next_rescan:
            candidates += self._rescan()
            self._next_rescan = math.inf if cfg.once else now + cfg.rescan_seconds
        candidates += self._drain_hints()
        candidates += self.tracker.paths()
        seen: set[Path] = set()
        for path in candidates:
            if path in seen:
                continue
            seen.add(path)
            with self._lock:
                if path in self._handed:
                    continue
            if path.is_symlink():
                self._skip_link(path)
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

    def _own(self, raw: str) -> Path | None:
        """The watched folder's path for a hinted file, or None for anything else."""
        path = Path(raw)
        folder = self.config.folder
        if path.parent != folder:
            try:
                if path.parent.resolve() != folder:
                    return None
            except OSError:
                return None
            path = folder / path.name
        if is_ignored(path.name, self.config.ignore):
            return None
        return path

    def _drain_hints(self) -> list[Path]:
        out: list[Path] = []
        while True:
            try:
                raw = self._hints.get_nowait()
            except queue.Empty:
                return out
            path = self._own(raw)
            if path is not None:
                out.append(path)

    def _push_hint(self, raw: str) -> None:
        self._hints.put(raw)
        self._wake.set()

    def _rescan(self) -> list[Path]:
        try:
            found = files.scan(self.config.folder, self.config.ignore)
        except OSError as exc:
            message = f"cannot read the watched folder ({exc}); retrying"
            if message != self._folder_error:
                self.log.error("folder_error", message, folder=str(self.config.folder))
                self._publish(last_error=message)
            self._folder_error = message
            return []
        if self._folder_error:
            self.log.info("folder_ok", "the watched folder can be read again")
            self._folder_error = None
        with contextlib.suppress(OSError):
            for link in files.symlinks(self.config.folder, self.config.ignore):
                self._skip_link(link)
        return found

    def _skip_link(self, path: Path) -> None:
        """Say once per link that it is skipped: links are never followed, so a file from
        outside the folder is never imported, and a link that just sits there is not silent."""
        if path in self._links_reported:
            return
        self._links_reported.add(path)
        self.log.warning(
            "skipped_link",
            f"skipped {path.name}: a symbolic link (links are not followed; copy the file "
            "into the folder to import it)",
            file=path.name,
        )

    def _hand(self, job: Job) -> None:
        assert self._loop is not None and self._jobs is not None
        with self._lock:
            self._handed.add(job.path)
            self._pending += 1
            self._status_dirty = True
        try:
            self._loop.call_soon_threadsafe(self._jobs.put_nowait, job)
        except RuntimeError:  # the import loop is gone; the run ends on this tick
            with self._lock:
                self._handed.discard(job.path)
                self._pending -= 1
            return
        self.log.debug("queued", f"{job.path.name} is complete: queued", file=job.path.name)

    # ---- observer --------------------------------------------------------------------------

    def _start_observer(self) -> bool:
        handler = _Hints(self._push_hint)
        kinds: list[Literal["native", "polling"]] = (
            ["polling"] if self.config.poll else ["native", "polling"]
        )
        for kind in kinds:
            observer: BaseObserver = (
                PollingObserver(timeout=self.config.poll_interval)
                if kind == "polling"
                else Observer()
            )
            try:
                observer.schedule(handler, str(self.config.folder), recursive=False)
                observer.start()
            except (OSError, RuntimeError) as exc:
                self.log.warning(
                    "observer_error",
                    f"cannot watch {self.config.folder} with the {kind} observer ({exc})"
                    + ("; falling back to polling" if kind == "native" else ""),
                )
                continue
            self._observer = observer
            return True
        self._observer = None
        self._observer_retry_at = time.monotonic() + OBSERVER_RETRY_SECONDS
        return False

    def _observer_alive(self) -> bool:
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        return all(e.is_alive() for e in observer.emitters)

    def _check_observer(self) -> None:
        if self.config.once or self._observer_alive():
            return
        if self._observer is not None:
            self.log.warning("observer_restart", "the folder observer stopped; restarting it")
            with contextlib.suppress(Exception):
                self._observer.stop()
            self._observer = None
        elif time.monotonic() < self._observer_retry_at:
            return
        if self._start_observer():
            self.log.info("observer_started", "watching the folder again; rescanning it")
            self._next_rescan = -math.inf  # events may have been lost meanwhile

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        if observer is None:
            return
        with contextlib.suppress(Exception):
            observer.stop()
            observer.join(timeout=5)

    # ---- status ----------------------------------------------------------------------------

    def _publish(self, entry: LedgerEntry | None = None, **changes: object) -> None:
        """Update the status (from either thread); the scheduler writes it."""
        with self._lock:
            if entry is not None:
                self.status.recent.insert(0, entry)
                del self.status.recent[RECENT_LIMIT:]
            for key, value in changes.items():
                setattr(self.status, key, value)
            self._status_dirty = True
        self._wake.set()

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

    def _shutdown(self, thread: threading.Thread) -> None:
        self._stop_observer()
        loop, stop_async = self._loop, self._stop_async
        if self._stop_requests and self._current_name:
            self.log.info(
                "stopping",
                f"stopping: finishing {self._current_name} first (a second stop request "
                "cancels it; it then resumes at the next start)",
            )
        elif self._stop_requests:
            self.log.info("stopping", "stopping")
        if loop is not None and stop_async is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop_async.set)
        deadline = time.monotonic() + self.config.stop_grace
        while thread.is_alive():
            if self._stop_requests >= 2 or time.monotonic() > deadline:
                self._cancel_current()
            thread.join(timeout=min(0.1, self.config.tick_seconds))
            self._write_status()
        self._write_status(force=True)
        self.log.info(
            "stopped",
            f"stopped: {self.result.processed} processed, {self.result.failed} failed, "
            f"{self.result.skipped} skipped",
            processed=self.result.processed,
            failed=self.result.failed,
            skipped=self.result.skipped,
        )

    def _cancel_current(self) -> None:
        if self._cancel_sent or self._loop is None:
            return
        self._cancel_sent = True

        def cancel() -> None:
            if self._current is not None and not self._current.done():
                self.result.interrupted = True
                self._current.cancel()

        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(cancel)

    # ---- import loop -----------------------------------------------------------------------

    def _import_thread(self) -> None:
        try:
            asyncio.run(self._import_main())
        except BaseException as exc:
            self.result.error = f"{type(exc).__name__}: {exc}"
            self.log.error(
                "crashed", f"the import loop stopped on an unexpected error: {self.result.error}"
            )
        finally:
            self._import_ready.set()
            self._import_done.set()
            self._wake.set()

    async def _import_main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._jobs = asyncio.Queue()
        self._stop_async = asyncio.Event()
        self._ledger = Ledger(self.config.ledger_path)
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
            self._import_ready.set()
            await self._consume()
        finally:
            with contextlib.suppress(Exception):
                await self.importer.aclose()
            self._ledger.close()

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
            self._push_hint(str(job.path))
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
        await self._retrying(name, lambda: self._settle(content, outcome, conn))

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
                await self._set_aside(job.path, snap, sha, existing, conn)
                return None
            work = self.config.work_dir / sha[:16] / job.path.name
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

    async def _set_aside(
        self, path: Path, snap: Snapshot, sha: str, first: Content, conn: Connection
    ) -> None:
        """Content settled before: nothing is sent; the file goes to processed/ with a receipt
        that names the first time."""
        assert self._ledger is not None
        now = self.now()
        folder = self.config.processed_dir / month_folder(now)
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / unique_name(path.name, lambda n: (folder / n).exists())
        when = first.settled_at.isoformat() if first.settled_at else "earlier"
        receipt = folder / receipt_name(dest.name)
        files.write_json(
            receipt,
            make_receipt(
                ReceiptInput(
                    status="duplicate",
                    file=path.name,
                    stored_as=str(dest),
                    sha256=sha,
                    size_bytes=snap.size,
                    profile=self.config.profile,
                    environment=conn.environment,
                    service=conn.service,
                    finished_at=now,
                    import_id=first.import_id,
                    duplicate_of={
                        "file": first.file_name,
                        "fate": first.state,
                        "settled_at": when,
                        "stored_as": str(first.dest_path) if first.dest_path else None,
                        "receipt": first.receipt_path,
                    },
                    message=(
                        f"The same content was imported before as {first.file_name} "
                        f"({first.state}, {when}): nothing was sent."
                    ),
                )
            ),
        )
        await asyncio.to_thread(files.move_file, path, dest)
        entry = self._ledger.record_skipped(
            sha256=sha,
            file_name=path.name,
            receipt_path=str(receipt),
            stored_as=str(dest),
            now=now,
        )
        self.result.skipped += 1
        self.log.info(
            "skipped",
            f"skipped {path.name}: same content as {first.file_name} ({first.state} {when}); "
            f"nothing sent → {dest}",
            file=path.name,
            fate="skipped",
            duplicate_of=first.file_name,
            stored_as=str(dest),
        )
        self._publish(entry, last_file=path.name, last_result="skipped: already imported")

    # ---- settling --------------------------------------------------------------------------

    async def _settle(
        self, content: Content, outcome: FileOutcome | Verdict, conn: Connection
    ) -> None:
        assert self._ledger is not None
        ledger = self._ledger
        now = self.now()
        failed = isinstance(outcome, Verdict) or outcome.rejected > 0
        fate: Literal["processed", "failed"] = "failed" if failed else "processed"
        content = ledger.get(content.id)
        if content.dest_path is None:
            folder = (
                self.config.failed_dir if failed else self.config.processed_dir / month_folder(now)
            )
            folder.mkdir(parents=True, exist_ok=True)
            name = unique_name(content.file_name, lambda n: (folder / n).exists())
            content = ledger.set_destination(content.id, folder / name)
        assert content.dest_path is not None
        dest = content.dest_path
        dest.parent.mkdir(parents=True, exist_ok=True)

        report: Path | None = None
        receipt = ReceiptInput(
            status=fate,
            file=content.file_name,
            stored_as=str(dest),
            sha256=content.sha256,
            size_bytes=content.original.size,
            profile=self.config.profile,
            environment=conn.environment,
            service=conn.service,
            finished_at=now,
            claimed_at=content.claimed_at,
        )
        if isinstance(outcome, Verdict):
            receipt.error = {"code": outcome.code, "message": outcome.reason}
            receipt.message = "The file could not be imported: nothing from it was sent."
            explanation = dest.parent / explanation_name(dest.name)
            files.write_atomic(
                explanation,
                explanation_text(
                    file=content.file_name,
                    sha256=content.sha256,
                    when=now,
                    profile=self.config.profile,
                    reason=outcome.reason,
                    code=outcome.code,
                ),
            )
            accepted = rejected = 0
            import_id = None
        else:
            if outcome.rejected:
                source = outcome.reject_report or content.work_path.with_name(
                    reject_report_name(content.work_path.name)
                )
                target = dest.with_name(reject_report_name(dest.name))
                if source.is_file() and not target.exists():
                    await asyncio.to_thread(files.move_file, source, target)
                report = target if target.exists() else None
            accepted, rejected, import_id = outcome.accepted, outcome.rejected, outcome.import_id
            receipt.template = outcome.template
            receipt.import_id = outcome.import_id
            receipt.import_status = outcome.status
            receipt.accepted = outcome.accepted
            receipt.rejected_rows = outcome.rejected
            receipt.skipped = outcome.skipped
            receipt.warnings = outcome.warnings
            receipt.accepted_ids = outcome.accepted_ids
            receipt.reject_report = str(report) if report else None
            receipt.problems = outcome.problems
            receipt.message = (
                f"{outcome.rejected} row(s) were rejected (see the reject report); the "
                f"{outcome.accepted} accepted reading(s) stay stored."
                if outcome.rejected
                else outcome.message
            )
        receipt_path = dest.parent / receipt_name(dest.name)
        files.write_json(receipt_path, make_receipt(receipt))
        if not dest.exists():
            original = content.original_path
            current = await asyncio.to_thread(files.snapshot, original)
            # The original leaves the folder when it still is what was imported; otherwise the
            # private copy (the bytes imported) is stored and the original is looked at again.
            source = original if current == content.original else content.work_path
            await asyncio.to_thread(files.move_file, source, dest)
        files.remove_tree(content.work_path.parent)
        entry = ledger.settle(
            content.id,
            fate=fate,
            accepted=accepted,
            rejected=rejected,
            import_id=import_id,
            receipt_path=str(receipt_path),
            now=now,
        )
        if fate == "processed":
            self.result.processed += 1
            sentence = result_sentence(accepted, 0, receipt.skipped)
            self.log.info(
                "processed",
                f"processed {content.file_name}: {sentence} → {dest}",
                file=content.file_name,
                fate=fate,
                accepted=accepted,
                skipped=receipt.skipped,
                stored_as=str(dest),
                receipt=str(receipt_path),
            )
            self._publish(entry, last_file=content.file_name, last_result=sentence)
        elif isinstance(outcome, Verdict):
            self.result.failed += 1
            self.log.warning(
                "failed",
                f"failed {content.file_name}: {outcome.reason} → {dest}",
                file=content.file_name,
                fate=fate,
                code=outcome.code,
                stored_as=str(dest),
                receipt=str(receipt_path),
            )
            self._publish(
                entry,
                last_file=content.file_name,
                last_result=f"failed: {outcome.code}",
                last_error=outcome.reason,
            )
        else:
            self.result.failed += 1
            sentence = result_sentence(accepted, rejected, receipt.skipped)
            self.log.warning(
                "rejected",
                f"failed {content.file_name}: {sentence}; the accepted readings stay stored; "
                f"{_commonest_problem(receipt.problems)}"
                f"reject report {report or 'not written'} → {dest}",
                file=content.file_name,
                fate=fate,
                accepted=accepted,
                rejected=rejected,
                stored_as=str(dest),
                reject_report=str(report) if report else None,
                receipt=str(receipt_path),
            )
            self._publish(entry, last_file=content.file_name, last_result=sentence)


def _commonest_problem(problems: Sequence[dict[str, Any]] | None) -> str:
    """ "36 rows: … is not in the meter map; " — what most rejected rows share, for the log."""
    groups = [g for g in group_problems(problems or ()) if g.severity == "error"]
    if not groups:
        return ""
    top = max(groups, key=lambda g: len(g.rows))
    return f"{len(top.rows)} row(s): {top.shape}; "
