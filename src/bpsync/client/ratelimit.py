"""Client-side pacing: one bucket per limit class, learned from the service's headers.

The service answers every request with `X-RateLimit-Limit/Remaining/Reset/Window` for the bucket
named in `X-RateLimit-Bucket` (`key`, `user`, `bulk`, `reports`). The client keeps its own count of
each bucket, takes a token from every bucket a request will spend before sending it, and waits for
the window to reset when one is empty, so 429s are rare. The server's numbers correct the local
count; nothing is hard-coded (the window comes from the header).

`X-RateLimit-Reset` is a time on the server's clock. How long the window has left is measured on
that clock too (the reset minus the response's `Date`, which the server stamps from the same
clock) and laid onto the local clock, so a client whose clock is off from the server's (minutes,
or a test service's fake clock a week behind) still waits exactly as long as the window has left.

Processes of the same profile (the watcher and the terminal app) share the buckets through a small
JSON file guarded by a file lock in the user state dir. The rules are pure functions over plain
data (`plan`, `observe`); `RateLimiter` adds the store and the clock."""

from __future__ import annotations

import email.utils
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

_BULK = re.compile(r"^/v1/buildings/[^/]+/meters/[^/]+/readings/batch/?$|^/v1/readings/upload/?$")
_REPORTS = re.compile(r"^/v1/reports/?$")
# While a bucket is unknown, one request at a time goes out to learn it; after this long without an
# answer another may try. A probe records its process id, so a probe left by a process that died
# (killed mid-request) is ignored at once instead of holding others back for the full time.
PROBE_SECONDS = 5.0
# Waiting a hair past the reset avoids arriving a moment before the server's window rolls over.
RESET_MARGIN = 0.02
# `Date` has whole seconds, rounded down, and is stamped before the response travels: a local clock
# that agrees with the server's reads between this much behind and a little ahead of it.
CLOCKS_AGREE = (-2.0, 1.0)


def limit_classes(method: str, path: str, principal_kind: str) -> list[str]:
    """The buckets a request spends: the principal's (`key` or `user`), plus `bulk` for batch
    submissions and `reports` for report generation (the service's documented classes)."""
    kinds = [principal_kind]
    if method.upper() == "POST":
        if _BULK.match(path):
            kinds.append("bulk")
        if _REPORTS.match(path):
            kinds.append("reports")
    return kinds


@dataclass(frozen=True)
class Bucket:
    limit: int
    remaining: int
    reset: float  # local Unix time the window ends
    window: float
    # The same moment on the server's clock (its X-RateLimit-Reset): names the window exactly,
    # whatever the two clocks say. None when not learned from headers (a 429 without them).
    server_reset: float | None = None

    def rolled(self, now: float) -> Bucket:
        """The bucket as of `now`: fixed windows roll over whole, back to the full limit."""
        if now < self.reset or self.window <= 0:
            return self
        passed = math.floor((now - self.reset) / self.window) + 1
        server_reset = self.server_reset
        if server_reset is not None:
            server_reset += passed * self.window
        return replace(
            self,
            remaining=self.limit,
            reset=self.reset + passed * self.window,
            server_reset=server_reset,
        )


@dataclass(frozen=True)
class Observation:
    """What one response said about one bucket."""

    kind: str
    limit: int
    remaining: int
    reset: float  # server Unix time
    window: float
    server_now: float | None = None  # the response's Date: server Unix time, whole seconds


def server_date(headers: Mapping[str, str]) -> float | None:
    """The response's `Date` header as Unix time (None when absent or not an HTTP-date)."""
    value = headers.get("date")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        return None
    return when.timestamp()


def parse_headers(headers: Mapping[str, str], default_kind: str) -> Observation | None:
    try:
        limit = int(headers["x-ratelimit-limit"])
        remaining = int(headers["x-ratelimit-remaining"])
        reset = float(headers["x-ratelimit-reset"])
        window = float(headers.get("x-ratelimit-window") or 0)
    except (KeyError, ValueError):
        return None
    if limit <= 0 or window <= 0 or remaining < 0:
        return None
    kind = headers.get("x-ratelimit-bucket") or default_kind
    return Observation(kind, limit, remaining, reset, window, server_date(headers))


State = dict[str, dict[str, Any]]  # kind -> Bucket fields, or {"probe_until": t} while unknown


def _entry(bucket: Bucket) -> dict[str, Any]:
    """A bucket as stored: its fields, without a server reset it does not know."""
    entry = asdict(bucket)
    if entry["server_reset"] is None:
        del entry["server_reset"]
    return entry


def _bucket(entry: dict[str, Any] | None) -> Bucket | None:
    if not entry or "limit" not in entry:
        return None
    server_reset = entry.get("server_reset")
    return Bucket(
        int(entry["limit"]),
        int(entry["remaining"]),
        float(entry["reset"]),
        float(entry["window"]),
        float(server_reset) if server_reset is not None else None,
    )


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (True when it cannot be told)."""
    if pid == os.getpid():
        return True
    if os.name == "nt" or pid <= 0:
        return True  # os.kill(pid, 0) is not a probe on Windows; fall back to the time limit
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists but belongs to someone else
        return True
    return True


def _probing(entry: dict[str, Any] | None, now: float, alive: Callable[[int], bool]) -> float:
    """Seconds left of another request's probe of an unknown bucket (0: none, or abandoned)."""
    if not entry:
        return 0.0
    left = float(entry.get("probe_until", 0)) - now
    owner = entry.get("pid")
    if left > 0 and isinstance(owner, int) and not alive(owner):
        return 0.0  # its process died before the answer came back
    return max(0.0, left)


def plan(
    state: State,
    kinds: list[str],
    now: float,
    jitter: float = 0.0,
    *,
    owner: int | None = None,
    alive: Callable[[int], bool] = process_alive,
) -> tuple[float, State]:
    """Take one token from every bucket in `kinds`, or none: returns (seconds to wait, new state).

    A wait of 0 means go (the tokens are taken); otherwise nothing is taken and the caller sleeps
    and plans again. `jitter` in [0, 1) spreads waiters so they do not all wake at once. A probe
    this call starts records `owner` (the process id), so others can ignore it if that process
    is gone (`alive`)."""
    new = {k: dict(v) for k, v in state.items()}
    wait = 0.0
    for kind in kinds:
        entry = new.get(kind)
        bucket = _bucket(entry)
        if bucket is None:
            probing = _probing(entry, now, alive)
            if probing > 0:  # someone is already learning this bucket
                wait = max(wait, min(0.05, probing))
            continue
        bucket = bucket.rolled(now)
        new[kind] = _entry(bucket)
        if bucket.remaining <= 0:
            spread = jitter * min(0.25, bucket.window * 0.05)
            wait = max(wait, bucket.reset - now + RESET_MARGIN + spread)
    if wait > 0:
        return wait, state
    for kind in kinds:
        bucket = _bucket(new.get(kind))
        if bucket is None:
            new[kind] = {"probe_until": now + PROBE_SECONDS}
            if owner is not None:
                new[kind]["pid"] = owner
        else:
            new[kind] = _entry(replace(bucket, remaining=bucket.remaining - 1))
    return 0.0, new


def local_reset(observation: Observation, now: float) -> float:
    """The server's reset on the local clock.

    When the response's `Date` shows the clocks disagree, the time left is the reset minus that
    Date (both the server's clock), counted from `now`: the skew drops out. (Date has whole
    seconds, so the time left may read up to a second long, never short.) When they agree, or
    there is no usable Date, the reset is read on the local clock as it is, to the millisecond
    (one up to a window past is a late answer: the bucket rolls on from it). A reset that still
    lies further off means the clocks disagree by an unknown
    amount: the whole window is assumed, which at worst waits longer than needed but never sends
    into a window the server has not yet ended."""
    reset, window = observation.reset, observation.window
    if observation.server_now is not None:
        skew = observation.server_now - now
        left = reset - observation.server_now
        if not CLOCKS_AGREE[0] < skew < CLOCKS_AGREE[1] and 0 < left <= window + 1:
            return now + min(left, window)
    if now - window < reset <= now + window:
        # A reset just past is a late answer about a window that has ended: `rolled` moves on.
        return reset
    return now + window


def observe(state: State, observation: Observation, now: float, taken: list[str]) -> State:
    """Fold a response's headers into the state. Within the same window the lower count wins (our
    in-flight requests are not in the server's number yet); a new window takes the server's. The
    window is told by the server's own reset (the same for every response of one window), else by
    the local resets lying within a second of each other."""
    new = {k: dict(v) for k, v in state.items()}
    reset = local_reset(observation, now)
    current = _bucket(new.get(observation.kind))
    remaining = observation.remaining
    if current is not None:
        current = current.rolled(now)
        if current.server_reset is not None and observation.reset < current.server_reset:
            # A late answer about an earlier window: it says nothing about the current one.
            return forget_probes(new, [k for k in taken if k != observation.kind])
        if current.server_reset is not None:
            same = current.server_reset == observation.reset
        else:
            same = abs(current.reset - reset) < min(1.0, observation.window / 2)
        if same:
            remaining = min(remaining, current.remaining)
    new[observation.kind] = _entry(
        Bucket(observation.limit, remaining, reset, observation.window, observation.reset)
    )
    # Buckets this request spent but the headers did not describe stay unknown: clear their probe
    # so the next request can learn them.
    for kind in taken:
        if kind != observation.kind and _bucket(new.get(kind)) is None:
            new.pop(kind, None)
    return new


def exhausted(state: State, kind: str, retry_after: float, now: float) -> State:
    """After a 429: the bucket is empty until `retry_after` seconds from now (relative, so it does
    not depend on the two clocks agreeing)."""
    new = {k: dict(v) for k, v in state.items()}
    current = _bucket(new.get(kind))
    limit = current.limit if current else 1
    window = current.window if current else max(retry_after, 1.0)
    # The window the refusal was in keeps its name on the server's clock (the 429's own headers,
    # folded in just before, usually gave it).
    server_reset = current.rolled(now).server_reset if current else None
    new[kind] = _entry(Bucket(limit, 0, now + max(retry_after, 0.0), window, server_reset))
    return new


def returned(state: State, kinds: list[str], now: float) -> State:
    """Give back the tokens of a request that did not count (a 304)."""
    new = {k: dict(v) for k, v in state.items()}
    for kind in kinds:
        bucket = _bucket(new.get(kind))
        if bucket is not None and now < bucket.reset:
            new[kind] = _entry(replace(bucket, remaining=min(bucket.limit, bucket.remaining + 1)))
    return new


def forget_probes(state: State, kinds: list[str]) -> State:
    """A request that got no answer teaches nothing: let another request probe."""
    return {k: v for k, v in state.items() if not (k in kinds and _bucket(v) is None)}


class StateStore(Protocol):
    def transaction(self) -> Any: ...


class MemoryStore:
    """Buckets for one process only."""

    def __init__(self) -> None:
        self._state: State = {}
        self._lock = threading.Lock()

    @contextmanager
    def transaction(self) -> Iterator[list[State]]:
        with self._lock:
            box = [self._state]
            yield box
            self._state = box[0]


class FileStore:
    """Buckets shared by every process of one profile and identity: a JSON file under a file lock.
    The file holds counts and times only, never a credential."""

    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = FileLock(str(path) + ".lock", timeout=timeout, thread_local=False)
        self._thread_lock = threading.Lock()

    def _read(self) -> State:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @contextmanager
    def transaction(self) -> Iterator[list[State]]:
        with self._thread_lock, self._lock:
            before = self._read()
            box = [before]
            yield box
            if box[0] != before:
                tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(box[0]), encoding="utf-8")
                os.replace(tmp, self.path)


class RateLimiter:
    """Pacing for one credential. `clock` is Unix seconds (injectable for tests)."""

    def __init__(
        self,
        store: StateStore | None = None,
        *,
        clock: Callable[[], float],
        rand: Callable[[], float],
    ) -> None:
        self.store = store or MemoryStore()
        self.clock = clock
        self.rand = rand

    def try_acquire(self, kinds: list[str]) -> float:
        """0 when the tokens were taken, else the seconds to wait before trying again."""
        with self.store.transaction() as box:
            wait, box[0] = plan(box[0], kinds, self.clock(), self.rand(), owner=os.getpid())
        return wait

    def update(self, headers: Mapping[str, str], taken: list[str], status: int) -> None:
        now = self.clock()
        observation = parse_headers(headers, taken[0] if taken else "key")
        with self.store.transaction() as box:
            state = box[0]
            if status == 304:
                state = returned(state, taken, now)
            if observation is not None:
                state = observe(state, observation, now, taken)
            else:
                state = forget_probes(state, taken)
            box[0] = state

    def rate_limited(self, kind: str, retry_after: float) -> None:
        with self.store.transaction() as box:
            box[0] = exhausted(box[0], kind, retry_after, self.clock())

    def failed(self, taken: list[str]) -> None:
        with self.store.transaction() as box:
            box[0] = forget_probes(box[0], taken)

    def snapshot(self) -> dict[str, Bucket]:
        """The known buckets as of now (for `bpsync status`)."""
        now = self.clock()
        with self.store.transaction() as box:
            state = box[0]
        return {k: b.rolled(now) for k, v in state.items() if (b := _bucket(v)) is not None}
