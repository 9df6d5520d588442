"""Finding files: what the folder observer hints (created, modified, closed, moved in), a full
rescan at start and every `rescan_seconds`, and one line per symbolic link skipped. The observer
runs on watchdog's threads and only records paths; everything else runs in the watcher's loop.
Which of the files found are ready (held still for `stable_seconds`) is `StabilityTracker`'s
call (rules.py); the watcher hands those to the import queue."""

from __future__ import annotations

import contextlib
import math
import os
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from bpsync.watch import files
from bpsync.watch.log import WatchLog
from bpsync.watch.rules import is_ignored

OBSERVER_RETRY_SECONDS = 5.0


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


class FolderScanner:
    """The candidate files of one watched folder, from hints and rescans."""

    def __init__(
        self,
        config: Any,  # WatchConfig: folder, ignore, poll, poll_interval, once, rescan_seconds
        log: WatchLog,
        *,
        wake: Callable[[], None],
        publish: Callable[..., None],
    ) -> None:
        self.config = config
        self.log = log
        self.wake = wake  # called from the observer's thread: must be thread-safe
        self.publish = publish
        self.hints: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.next_rescan = -math.inf
        self._observer: BaseObserver | None = None
        self._observer_retry_at = 0.0
        self._folder_error: str | None = None
        self._links_reported: set[Path] = set()

    # ---- candidates ------------------------------------------------------------------------

    def candidates(self, now: float) -> list[Path]:
        """Files to look at on this tick: a rescan's when one is due, then the hints."""
        found: list[Path] = []
        if now >= self.next_rescan:
            found += self.rescan()
            self.next_rescan = math.inf if self.config.once else now + self.config.rescan_seconds
        return found + self.drain_hints()

    def push_hint(self, raw: str) -> None:
        self.hints.put(raw)
        self.wake()

    def drain_hints(self) -> list[Path]:
        out: list[Path] = []
        while True:
            try:
                raw = self.hints.get_nowait()
            except queue.Empty:
                return out
            path = self.own(raw)
            if path is not None:
                out.append(path)

    def own(self, raw: str) -> Path | None:
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

    def rescan(self) -> list[Path]:
        try:
            found = files.scan(self.config.folder, self.config.ignore)
        except OSError as exc:
            message = f"cannot read the watched folder ({exc}); retrying"
            if message != self._folder_error:
                self.log.error("folder_error", message, folder=str(self.config.folder))
                self.publish(last_error=message)
            self._folder_error = message
            return []
        if self._folder_error:
            self.log.info("folder_ok", "the watched folder can be read again")
            self._folder_error = None
        with contextlib.suppress(OSError):
            for link in files.symlinks(self.config.folder, self.config.ignore):
                self.skip_link(link)
        return found

    def skip_link(self, path: Path) -> None:
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

    # ---- observer --------------------------------------------------------------------------

    def start_observer(self) -> bool:
        handler = _Hints(self.push_hint)
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

    def observer_alive(self) -> bool:
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        return all(e.is_alive() for e in observer.emitters)

    def check_observer(self) -> None:
        """Restart an observer that died (and rescan: events may have been lost meanwhile)."""
        if self.config.once or self.observer_alive():
            return
        if self._observer is not None:
            self.log.warning("observer_restart", "the folder observer stopped; restarting it")
            with contextlib.suppress(Exception):
                self._observer.stop()
            self._observer = None
        elif time.monotonic() < self._observer_retry_at:
            return
        if self.start_observer():
            self.log.info("observer_started", "watching the folder again; rescanning it")
            self.next_rescan = -math.inf

    def stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        if observer is None:
            return
        with contextlib.suppress(Exception):
            observer.stop()
            observer.join(timeout=5)
