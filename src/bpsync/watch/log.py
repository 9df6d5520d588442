"""The watcher's log: one human line per event by default, or one JSON object per line
(`--log-json`) for journald, Loki, CloudWatch and friends. Thread-safe; lines go to stderr.

Lines carry file names, counts, reasons and paths. Reasons come from the client's exceptions,
whose messages never contain a credential (client/errors.py)."""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal, TextIO

Level = Literal["debug", "info", "warning", "error"]
_RANK = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class WatchLog:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        json_lines: bool = False,
        verbose: bool = False,
        now: Callable[[], dt.datetime] = _utc_now,
    ) -> None:
        self.stream = stream
        self.json_lines = json_lines
        self.min_rank = _RANK["debug" if verbose else "info"]
        self.now = now
        self._lock = threading.Lock()

    def log(self, level: Level, event: str, message: str, **fields: Any) -> None:
        if _RANK[level] < self.min_rank:
            return
        when = self.now()
        if self.json_lines:
            record = {
                "time": when.astimezone(dt.UTC)
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
                "level": level,
                "event": event,
                "message": message,
                **{k: _plain(v) for k, v in fields.items() if v is not None},
            }
            line = json.dumps(record, ensure_ascii=False)
        else:
            stamp = when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            label = "" if level == "info" else f"{level.upper()} "
            line = f"{stamp} {label}{message}"
        stream = self.stream or sys.stderr
        with self._lock:
            stream.write(line + "\n")
            stream.flush()

    def debug(self, event: str, message: str, **fields: Any) -> None:
        self.log("debug", event, message, **fields)

    def info(self, event: str, message: str, **fields: Any) -> None:
        self.log("info", event, message, **fields)

    def warning(self, event: str, message: str, **fields: Any) -> None:
        self.log("warning", event, message, **fields)

    def error(self, event: str, message: str, **fields: Any) -> None:
        self.log("error", event, message, **fields)


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)
