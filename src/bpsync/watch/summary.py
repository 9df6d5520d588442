"""What `bpsync status` says about the profile's watcher, from its status file alone."""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable

from bpsync.watch.status import StatusFileError, WatchStatus, is_stale, read_status


def _pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (the state dir is local). On
    Windows `os.kill` would terminate the process, so there only the heartbeat decides."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _when(value: dt.datetime) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def is_running(
    status: WatchStatus, now: dt.datetime, pid_alive: Callable[[int], bool] = _pid_alive
) -> bool:
    """A fresh heartbeat from a process that still exists."""
    return not is_stale(status, now) and pid_alive(status.pid)


def watch_status_lines(
    profile: str,
    *,
    now: dt.datetime | None = None,
    pid_alive: Callable[[int], bool] = _pid_alive,
) -> list[tuple[str, str]]:
    """(label, value) rows about the profile's watcher, for `bpsync status` to print."""
    now = now or dt.datetime.now(dt.UTC)
    try:
        status = read_status(profile)
    except StatusFileError as exc:
        return [("watcher", f"status file unreadable: {exc}")]
    if status is None:
        return [("watcher", "never started for this profile (`bpsync watch DIR`)")]
    if is_running(status, now, pid_alive):
        state = "paused" if status.paused_reason else "running"
        rows = [("watcher", f"{state} (pid {status.pid}) on {status.folder}")]
        rows.append(("watch queue", f"{status.queue_length} file(s) waiting"))
    else:
        rows = [
            (
                "watcher",
                f"stopped (last heartbeat {_when(status.heartbeat_at)}) on {status.folder}",
            )
        ]
    if status.paused_reason and is_running(status, now, pid_alive):
        rows.append(("watch paused", status.paused_reason))
    if status.last_file:
        result = f": {status.last_result}" if status.last_result else ""
        rows.append(("watch last file", f"{status.last_file}{result}"))
    if status.last_error:
        rows.append(("watch last error", status.last_error))
    counts = {fate: 0 for fate in ("processed", "failed", "skipped")}
    for entry in status.recent:
        counts[entry.fate] += 1
    if status.recent:
        rows.append(
            (
                "watch recent",
                f"{counts['processed']} processed, {counts['failed']} failed, "
                f"{counts['skipped']} skipped (last {len(status.recent)} files)",
            )
        )
    return rows
