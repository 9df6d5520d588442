"""The watcher's rules, as pure functions and one small state machine (no I/O, no clock of its own):
which names to ignore, when a file is stable, how long to back off, what an error means for a
file, how files in `processed/` and `failed/` are named, and what a receipt holds.

Events from the operating system are hints, not truth: `StabilityTracker` only says a file is ready
when its size and modification time have stayed the same for `stable_seconds` of the caller's
clock, whatever events did or did not arrive."""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bpsync.client import errors as E
from bpsync.config import ConfigError
from bpsync.ingest import IngestError, reject_report_path
from bpsync.watch.log import escape_controls

# Office lock files (`~$book.xlsx`), LibreOffice locks (`.~lock.book.xlsx#`), partial downloads
# and temporary files, dotfiles (rsync's and editors' temporary names), and the two files Windows
# Explorer drops into folders by itself.
DEFAULT_IGNORE: tuple[str, ...] = (
    "~$*",
    ".~lock*",
    "*.tmp",
    "*.part",
    "*.crdownload",
    ".*",
    "Thumbs.db",
    "desktop.ini",
)

RECEIPT_VERSION = 1


def is_ignored(name: str, patterns: Iterable[str] = DEFAULT_IGNORE) -> bool:
    """True for names the watcher never touches (case-insensitive shell patterns)."""
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns)


# --- stability -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What `stat` says about a file: it is unchanged while both stay the same."""

    size: int
    mtime_ns: int


@dataclass
class _Tracked:
    seq: int
    snap: Snapshot
    since: float  # the clock reading when this snapshot was first seen


class StabilityTracker:
    """Files seen in the folder, each with the time its current size and mtime were first seen.

    `observe` is fed every stat the watcher takes (events and rescans alike); `ready` lists the
    files whose snapshot has not changed for `stable_seconds`, in arrival order (the order in
    which each file was first seen). A file that changes is simply timed again."""

    def __init__(self, stable_seconds: float) -> None:
        if stable_seconds < 0:
            raise ValueError("stable_seconds must not be negative")
        self.stable_seconds = stable_seconds
        self._files: dict[Path, _Tracked] = {}
        self._taken: dict[Path, int] = {}  # arrival numbers of files handed over
        self._seq = 0

    def observe(self, path: Path, snap: Snapshot | None, now: float) -> None:
        """Record one stat of `path` taken at `now`; None means the file is gone."""
        if snap is None:
            self._files.pop(path, None)
            self._taken.pop(path, None)
            return
        tracked = self._files.get(path)
        if tracked is None:
            # A file handed over and given back (it changed after all) keeps its place.
            seq = self._taken.pop(path, None)
            if seq is None:
                self._seq += 1
                seq = self._seq
            self._files[path] = _Tracked(seq, snap, now)
        elif tracked.snap != snap:
            tracked.snap = snap
            tracked.since = now

    def ready(self, now: float) -> list[tuple[Path, Snapshot]]:
        """Files stable for at least `stable_seconds` at `now`, oldest arrival first. An empty
        file is a placeholder a copy has only just created (no bill export is empty): it waits
        for content instead of being failed."""
        items = sorted(self._files.items(), key=lambda kv: kv[1].seq)
        return [
            (path, t.snap)
            for path, t in items
            if t.snap.size > 0 and now - t.since >= self.stable_seconds
        ]

    def take(self, path: Path) -> None:
        """Stop tracking `path` (it was handed to the import queue)."""
        tracked = self._files.pop(path, None)
        if tracked is not None:
            self._taken[path] = tracked.seq

    def seen(self, path: Path) -> Snapshot | None:
        """The snapshot last recorded for `path` (None when not tracked)."""
        tracked = self._files.get(path)
        return tracked.snap if tracked else None

    def paths(self) -> list[Path]:
        return [p for p, _ in sorted(self._files.items(), key=lambda kv: kv[1].seq)]

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, path: object) -> bool:
        return path in self._files


# --- backoff ---------------------------------------------------------------------------------


def backoff_delay(attempt: int, base: float, cap: float, rand: Callable[[], float]) -> float:
    """The wait before retry number `attempt` (0-based) while the service is unavailable.

    "Equal jitter": half of min(cap, base·2^attempt) plus a random share of the other half, so
    watchers that lost the service together do not come back together, and none retries at
    once."""
    ceiling = min(cap, base * 2 ** min(attempt, 32))
    return ceiling / 2 + rand() * ceiling / 2


# --- what an error means ---------------------------------------------------------------------

PauseCode = Literal[
    "unreachable",
    "credentials",
    "permission",
    "rate_limited",
    "service_error",
    "busy",
    "local_io",
    "config",
]


@dataclass(frozen=True)
class Verdict:
    """`pause`: the file is fine, the service or this machine is not; keep the file, wait, retry.
    `fail`: the file itself cannot be imported; it goes to `failed/` with the explanation."""

    action: Literal["pause", "fail"]
    code: str
    reason: str
    wait: float | None = None  # a wait the service asked for (429 Retry-After)
    reconnect: bool = False  # build a new client before retrying (credentials may have changed)


class ImportInterrupted(Exception):
    """An import stopped before every row was sent, while the service answers again (a 5xx, or
    a wait longer than the client accepts): retried later, never a reason to fail the file."""


def classify(exc: BaseException) -> Verdict:
    """What an exception raised while importing one file means for that file."""
    if isinstance(exc, IngestError):
        if exc.code == "import_busy":
            return Verdict("pause", "busy", str(exc))
        return Verdict("fail", exc.code, str(exc))
    if isinstance(exc, E.APIConnectionError):
        return Verdict("pause", "unreachable", f"the service is unreachable ({exc})")
    if isinstance(exc, E.RateLimitError):
        return Verdict("pause", "rate_limited", f"rate limited ({exc})", wait=exc.retry_after)
    if isinstance(exc, E.AuthenticationError | E.CredentialsError | E.OAuthError):
        return Verdict(
            "pause",
            "credentials",
            f"the credentials were refused or are missing ({exc}); run `bpsync login`",
            reconnect=True,
        )
    if isinstance(exc, E.PermissionDeniedError | E.LockedError):
        return Verdict(
            "pause",
            "permission",
            f"permission denied ({exc}); the key needs meters:read, meters:write and "
            "properties:read",
            reconnect=True,
        )
    if isinstance(exc, E.ServerError | E.AmbiguousWriteError | ImportInterrupted):
        return Verdict("pause", "service_error", f"the service failed ({exc})")
    if isinstance(exc, ConfigError):
        return Verdict("pause", "config", f"configuration problem ({exc})", reconnect=True)
    if isinstance(exc, E.APIStatusError):
        # Any other refusal while looking up meters or readings is about this file's content.
        return Verdict("fail", exc.code or "refused", str(exc))
    if isinstance(exc, OSError):
        return Verdict("pause", "local_io", f"cannot read or write local files ({exc})")
    return Verdict("fail", "unexpected_error", f"unexpected error ({type(exc).__name__}: {exc})")


# --- names and folders -----------------------------------------------------------------------


def month_folder(when: dt.datetime) -> str:
    """`processed/` is split by the month (local time) a file was settled: `2026-11`."""
    return when.astimezone().strftime("%Y-%m")


def receipt_name(name: str) -> str:
    return f"{name}.receipt.json"


def explanation_name(name: str) -> str:
    return f"{name}.error.txt"


def reject_report_name(name: str) -> str:
    """The importer's naming (`bills.xlsx` → `bills.rejects.xlsx`, else `<stem>.rejects.csv`)."""
    return reject_report_path(Path(name)).name


def companions(name: str) -> tuple[str, ...]:
    """Every name a settled file may bring along into its folder."""
    return (name, receipt_name(name), explanation_name(name), reject_report_name(name))


def unique_name(name: str, taken: Callable[[str], bool]) -> str:
    """`name`, or `name (2).ext`, `name (3).ext`… : the first whose companions are all free, so
    nothing already in a destination folder is ever replaced."""
    path = Path(name)
    n = 1
    candidate = name
    while any(taken(c) for c in companions(candidate)):
        n += 1
        candidate = f"{path.stem} ({n}){path.suffix}"
    return candidate


# --- receipts --------------------------------------------------------------------------------

ReceiptStatus = Literal["processed", "failed", "duplicate"]


@dataclass
class ReceiptInput:
    """Everything a receipt says; `make_receipt` turns it into the JSON document."""

    status: ReceiptStatus
    file: str
    stored_as: str
    sha256: str
    size_bytes: int
    profile: str
    environment: str | None
    service: str | None
    finished_at: dt.datetime
    claimed_at: dt.datetime | None = None
    template: str | None = None
    import_id: int | None = None
    import_status: str | None = None
    accepted: int = 0
    rejected_rows: int = 0
    skipped: int = 0
    warnings: int = 0
    accepted_ids: Sequence[str] = ()
    reject_report: str | None = None
    reject_reports: Sequence[str] = ()  # every report: one per sheet of a multi-sheet workbook
    error: dict[str, str] | None = None
    duplicate_of: dict[str, Any] | None = None
    message: str | None = None
    problems: Sequence[dict[str, Any]] = field(default_factory=list)
    accounting: dict[str, Any] = field(default_factory=dict)


def _iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def make_receipt(r: ReceiptInput) -> dict[str, Any]:
    """The receipt written beside a settled file (JSON; paths, counts, ids and times only)."""
    return {
        "receipt_version": RECEIPT_VERSION,
        "status": r.status,
        "file": r.file,
        "stored_as": r.stored_as,
        "sha256": r.sha256,
        "size_bytes": r.size_bytes,
        "profile": r.profile,
        "environment": r.environment,
        "service": r.service,
        "template": r.template,
        "import_id": r.import_id,
        "import_status": r.import_status,
        "counts": {
            "accepted": r.accepted,
            "rejected_rows": r.rejected_rows,
            "skipped": r.skipped,
            "warnings": r.warnings,
        },
        # rows read = with readings + refused + skipped by reason (+ nothing to import)
        "accounting": dict(r.accounting),
        "accepted_ids": list(r.accepted_ids),
        "reject_report": r.reject_report,
        "reject_reports": list(r.reject_reports) or ([r.reject_report] if r.reject_report else []),
        "error": r.error,
        "duplicate_of": r.duplicate_of,
        "message": r.message,
        "problems": list(r.problems),
        "claimed_at": _iso(r.claimed_at),
        "finished_at": _iso(r.finished_at),
    }


EXPLANATION_REASON_CHARS = 1000


def explanation_text(
    *, file: str, sha256: str, when: dt.datetime, profile: str, reason: str, code: str
) -> str:
    """The human explanation written beside a file that could not be imported at all. The reason
    may quote the file's cells, so it is capped and its control characters escaped."""
    if len(reason) > EXPLANATION_REASON_CHARS:
        reason = reason[:EXPLANATION_REASON_CHARS] + " … (shortened)"
    reason, file = escape_controls(reason), escape_controls(file)
    hint = (
        "Save a template for its columns (`bpsync templates suggest FILE --save NAME`) and start "
        "the watcher with --template NAME, or export the file in a layout a template knows"
        if code == "no_template"
        else "Fix the file"
    )
    return (
        f"bpsync watch could not import {file}.\n\n"
        f"Why: {reason}\n\n"
        f"Nothing from this file was sent to the service. {hint}, then drop the corrected file "
        "into the watched folder again (a file with different content is a new import).\n\n"
        f"File: {file}\nSHA-256: {sha256}\nProfile: {profile}\nError code: {code}\n"
        f"When: {_iso(when)}\n"
    )


def result_sentence(accepted: int, rejected: int, skipped: int) -> str:
    """The status file's `last_result`: "accepted 120, rejected 2"."""
    text = f"accepted {accepted}, rejected {rejected}"
    return text + (f", already there {skipped}" if skipped else "")


# --- per-folder rules (issue 11 item 7) ------------------------------------------------------

FOLDER_RULES_FILE = ".bpsync-folder.toml"  # a dotfile: DEFAULT_IGNORE keeps it out of imports


@dataclass(frozen=True)
class FolderRules:
    """What a watched folder says about the files dropped into it: the meter every file belongs to
    (a folder per account for single-meter utility exports) and the template to use."""

    meter: str | None = None
    template: str | None = None
    # `[meters]`: external reference → meter id, for a watcher whose machine has no meter map
    # of its own (a service account under systemd); these win over the profile's map.
    meter_links: dict[str, str] = field(default_factory=dict)
    # `update = true`: files dropped here apply corrections and rebills of stored readings
    # (`bpsync import --update`, docs/corrections.md); off by default.
    update: bool = False
    # `date_order = "DMY"` or `"MDY"`: how dates such as 03/04 read where nothing in a file
    # proves the order (`bpsync import --date-order`).
    date_order: str | None = None


def read_folder_rules(folder: Path) -> FolderRules:
    """`<folder>/.bpsync-folder.toml` (keys `meter`, `template`, `update`, `date_order`, table
    `[meters]`), or no rules
    when it is absent. Raises ConfigError naming the file and the key for anything else."""
    import tomllib

    path = folder / FOLDER_RULES_FILE
    if not path.is_file():
        return FolderRules()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from None
    unknown = sorted(set(data) - {"meter", "template", "meters", "update", "date_order"})
    if unknown:
        known = "meter, template, update, date_order, [meters]"
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {known})")
    values = {}
    for key in ("meter", "template"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{path}: {key} must be a non-empty string")
        values[key] = value.strip() if isinstance(value, str) else None
    links = data.get("meters", {})
    if not isinstance(links, dict):
        raise ConfigError(f'{path}: [meters] must be a table of reference = "meter id"')
    for ref, meter_id in links.items():
        if not isinstance(meter_id, str) or not meter_id.strip():
            raise ConfigError(f"{path}: [meters] {ref!r} must be a meter id (a string)")
    update = data.get("update", False)
    if not isinstance(update, bool):
        raise ConfigError(f"{path}: update must be true or false")
    order = data.get("date_order")
    if order is not None and (not isinstance(order, str) or order.upper() not in ("DMY", "MDY")):
        raise ConfigError(f'{path}: date_order must be "DMY" or "MDY"')
    links = {str(k): v.strip() for k, v in links.items()}
    return FolderRules(
        **values,
        meter_links=links,
        update=update,
        date_order=order.upper() if isinstance(order, str) else None,
    )
