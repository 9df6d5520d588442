"""The watcher's log: one human line per event by default, or one JSON object per line
(`--log-json`) for journald, Loki, CloudWatch and friends. Thread-safe; lines go to stderr.

Lines carry file names, counts, reasons and paths. Reasons come from the client's exceptions,
whose messages never contain a credential (client/errors.py). A file name is chosen by whoever
drops the file, so control characters are escaped in every line (`escape_controls`): a name with
a newline cannot forge a second log line, nor an ESC sequence repaint a terminal."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal, TextIO

Level = Literal["debug", "info", "warning", "error"]
_RANK = {"debug": 10, "info": 20, "warning": 30, "error": 40}


# C0 and C1 controls, DEL, the Unicode line/paragraph separators and the bidirectional overrides
# that can make a name display as something else; and lone surrogates, which stand for the bytes
# of a file name that is not UTF-8 (os.fsdecode) and which no UTF-8 stream can write.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_controls(text: str) -> str:
    """`text` with every control character written as an escape (`\\n`, `\\x1b`, `\\u2028`)."""

    def one(m: re.Match[str]) -> str:
        c = m.group()
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
            f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        )

    return _CONTROLS.sub(one, text)


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
            # json escapes C0 controls; the rest (C1, U+2028, bidi) are escaped here too
            line = _CONTROLS.sub(
                lambda m: f"\\u{ord(m.group()):04x}", json.dumps(record, ensure_ascii=False)
            )
        else:
            stamp = when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            label = "" if level == "info" else f"{level.upper()} "
            line = f"{stamp} {label}{escape_controls(message)}"
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
