"""A workbook's sheet extents checked on the machine's other core while the import engine loads.

Before calamine parses a sheet, the guard reads the sheet's XML for its extent
(`guard.check_sheet_extent`, issue 33): 0.2 s for a 100,000-row sheet, all of it holding the
interpreter, on the way to the service's answers. `bpsync import` of an .xlsx starts a child
process for it as the command begins (fork: the child has only the command line loaded, and the
guard needs nothing more), while the parent spends half a second loading pandas and pyarrow.
The child writes one line per worksheet: within the limits or not, and whether the sheet may
hold error cells. The parent takes a sheet's verdict only when the child checked that very file
(path, size, modification time) under the same limits and found it within them; anything else
(a refusal, a child that failed, another platform) and the parent checks the sheet itself, as it
always did, so a refused sheet is refused with the guard's own message."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

from bpsync.ingest.problems import IngestError
from bpsync.ingest.readers.guard import WorkbookLimits, check_sheet_extent

_WORKSHEET = re.compile(r"^xl/worksheets/[^/]+\.xml$")
_pending: dict[tuple[Any, ...], tuple[int, int]] = {}  # key → (child pid, read end of its pipe)
_verdicts: dict[tuple[Any, ...], dict[str, list[bool]]] = {}


def start(path: Path) -> bool:
    """Check `path`'s sheets in a child process, if this platform forks and it is an .xlsx
    (by name: anything else is checked as before). True when a child was started."""
    if sys.platform != "linux" or path.suffix.casefold() not in (".xlsx", ".xlsm"):
        return False
    key = _key(path)
    if key is None or key in _pending or key in _verdicts:
        return False
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check, write, leave without running the parent's exit handlers
        code = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "w", encoding="utf-8") as out:
                out.write(json.dumps(check_all(path)))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    _pending[key] = (pid, read_end)
    return True


precheck_sheets = start  # the name `bpsync.ingest` gives it


def verdict(path: Path, member: str) -> tuple[bool, bool] | None:
    """(within the limits, may hold error cells) for the sheet XML `member` of `path`, when a
    child checked this file under the current limits; None otherwise. Waits for the child."""
    key = _key(path)
    if key is None:
        return None
    if key in _pending:
        _verdicts[key] = _collect(*_pending.pop(key))
    found = _verdicts.get(key, {}).get(member)
    return (bool(found[0]), bool(found[1])) if found else None


def check_all(path: Path) -> dict[str, list[bool]]:
    """Every worksheet's [within the limits, may hold error cells]; a refused one [False, True]."""
    out: dict[str, list[bool]] = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            if not _WORKSHEET.match(member):
                continue
            try:
                out[member] = [True, check_sheet_extent(z, member, path.name, member)]
            except IngestError:
                out[member] = [False, True]
    return out


def _collect(pid: int, read_end: int) -> dict[str, list[bool]]:
    """The child's answer ({} when it failed), and the child reaped."""
    try:
        with os.fdopen(read_end, encoding="utf-8") as answer:
            text = answer.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return {}
        found = json.loads(text)
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def _key(path: Path) -> tuple[Any, ...] | None:
    try:
        st = path.stat()
        return (str(path.resolve()), st.st_size, st.st_mtime_ns, WorkbookLimits.from_env())
    except OSError:
        return None


@atexit.register
def _reap() -> None:
    """Children whose answer was never asked for (the command ended first) are not left behind."""
    for pid, read_end in _pending.values():
        with contextlib.suppress(OSError):
            os.close(read_end)
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    _pending.clear()
