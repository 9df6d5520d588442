"""Fixed-window rate limiting with independent buckets (spec, Limits).

A request takes one unit from every bucket that applies to it: its principal's bucket (per API key or
per OAuth user) and, for bulk or report-generation endpoints, that class's bucket too. Windows are
aligned to multiples of the window length, so X-RateLimit-Reset is the same for every caller.
Counts live in this process's memory (see docs/decisions.md)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from bpservice.settings import Clock, RateLimits


@dataclass(frozen=True)
class BucketKey:
    kind: str  # "key", "user", "anonymous", "bulk", "reports"
    identity: str


@dataclass(frozen=True)
class BucketState:
    kind: str
    limit: int
    remaining: int
    reset: int  # Unix time the window ends
    window: int

    def retry_after(self, now: float) -> int:
        return max(1, math.ceil(self.reset - now))


class RateLimiter:
    def __init__(self, limits: RateLimits, clock: Clock) -> None:
        self.limits = limits
        self.clock = clock
        self._counts: dict[BucketKey, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def limit_for(self, kind: str) -> int:
        return {
            "key": self.limits.per_key,
            "anonymous": self.limits.per_key,
            "user": self.limits.per_user,
            "bulk": self.limits.bulk,
            "reports": self.limits.reports,
        }[kind]

    def _now(self) -> float:
        return self.clock().timestamp()

    def _window_start(self, now: float) -> int:
        window = self.limits.window_seconds
        return int(now // window) * window

    def _used(self, key: BucketKey, window_start: int) -> int:
        started, used = self._counts.get(key, (window_start, 0))
        return used if started == window_start else 0

    def _state(self, key: BucketKey, window_start: int) -> BucketState:
        limit = self.limit_for(key.kind)
        window = self.limits.window_seconds
        used = self._used(key, window_start)
        return BucketState(key.kind, limit, max(0, limit - used), window_start + window, window)

    def acquire(self, keys: list[BucketKey]) -> tuple[bool, list[BucketState]]:
        """Take one unit from every bucket if all have room; otherwise take nothing."""
        now = self._now()
        start = self._window_start(now)
        with self._lock:
            states = [self._state(k, start) for k in keys]
            if any(s.remaining <= 0 for s in states):
                return False, states
            for key in keys:
                self._counts[key] = (start, self._used(key, start) + 1)
            return True, [self._state(k, start) for k in keys]

    def release(self, keys: list[BucketKey]) -> list[BucketState]:
        """Give back a unit taken for a request that did not count (a 304)."""
        start = self._window_start(self._now())
        with self._lock:
            for key in keys:
                used = self._used(key, start)
                if used > 0:
                    self._counts[key] = (start, used - 1)
            return [self._state(k, start) for k in keys]

    def states(self, keys: list[BucketKey]) -> list[BucketState]:
        start = self._window_start(self._now())
        with self._lock:
            return [self._state(k, start) for k in keys]

    def prune(self) -> None:
        """Forget buckets from past windows (called now and then to bound memory)."""
        start = self._window_start(self._now())
        with self._lock:
            self._counts = {k: v for k, v in self._counts.items() if v[0] == start}


def tightest(states: list[BucketState]) -> BucketState:
    """The bucket the headers describe: the one with the fewest requests left (most specific on ties)."""
    return min(reversed(states), key=lambda s: (s.remaining, s.limit))


def rate_headers(state: BucketState) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(state.limit),
        "X-RateLimit-Remaining": str(state.remaining),
        "X-RateLimit-Reset": str(state.reset),
        "X-RateLimit-Window": str(state.window),
        "X-RateLimit-Bucket": state.kind,
    }
