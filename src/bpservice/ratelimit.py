"""Fixed-window rate limiting with independent buckets (spec, Limits).

A request takes one unit from every bucket that applies to it: its principal's bucket (per API key or
per OAuth user) and, for bulk or report-generation endpoints, that class's bucket too. Windows are
aligned to multiples of the window length, so X-RateLimit-Reset is the same for every caller.

Counts live in this process's memory by default (one instance), or in Redis (`--redis-url`) so
that N instances share every limit. The Redis store runs one short Lua script per take, so the
check of every bucket and the increment of every bucket are one atomic step: all buckets or none,
exactly as in memory (decisions IN4). A refund names the window it refunds, so a 304 that straddles
a window boundary never gives back a unit of the next window."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from bpservice.settings import Clock, RateLimits, Settings


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

    @property
    def window_start(self) -> int:
        return self.reset - self.window


# How long an issued ETag is remembered (for 304s with an empty bucket), and how many at most in
# one process's memory (about 100 bytes each).
TAG_TTL_SECONDS = 86_400
MAX_MEMORY_TAGS = 100_000


class RateLimiter:
    remote = False  # True when every call is a network round trip (Redis)

    def __init__(self, limits: RateLimits, clock: Clock) -> None:
        self.limits = limits
        self.clock = clock
        self._counts: dict[BucketKey, tuple[int, int]] = {}
        self._lock = threading.Lock()
        # Issued ETags (hashed with caller and URL) -> when they are forgotten, oldest first.
        self._tags: OrderedDict[str, float] = OrderedDict()

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

    def release(self, keys: list[BucketKey], window_start: int | None = None) -> list[BucketState]:
        """Give back a unit taken for a request that did not count (a 304), in the window it was
        taken from (`window_start`, from the acquired states); nothing if that window is over."""
        start = self._window_start(self._now())
        with self._lock:
            if window_start is None or window_start == start:
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

    # Issued ETags: a conditional GET that arrives with the bucket empty runs its handler only if
    # it presents a tag the service gave that caller for that URL (decisions D30), so a made-up
    # tag cannot buy handler work with an empty bucket.

    def remember_tag(self, name: str) -> None:
        with self._lock:
            self._tags[name] = self._now() + TAG_TTL_SECONDS
            self._tags.move_to_end(name)
            while len(self._tags) > MAX_MEMORY_TAGS:
                self._tags.popitem(last=False)

    def known_tag(self, names: list[str]) -> bool:
        now = self._now()
        with self._lock:
            return any(self._tags.get(name, 0) > now for name in names)

    def forget_tags(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self._tags.pop(name, None)


# KEYS: one counter per bucket, named with the window start. ARGV[1]: seconds the counters live;
# ARGV[2..]: each bucket's limit. Returns {granted (0/1), used_1, …, used_n}.
_ACQUIRE = """
local used = {}
for i = 1, #KEYS do used[i] = tonumber(redis.call('GET', KEYS[i]) or '0') end
for i = 1, #KEYS do
  if used[i] >= tonumber(ARGV[i + 1]) then
    table.insert(used, 1, 0)
    return used
  end
end
for i = 1, #KEYS do
  used[i] = redis.call('INCR', KEYS[i])
  if used[i] == 1 then redis.call('EXPIRE', KEYS[i], tonumber(ARGV[1])) end
end
table.insert(used, 1, 1)
return used
"""
# Refund one unit to every bucket that has one; returns the counts after.
_RELEASE = """
local used = {}
for i = 1, #KEYS do
  local n = tonumber(redis.call('GET', KEYS[i]) or '0')
  if n > 0 then n = redis.call('DECR', KEYS[i]) end
  used[i] = n
end
return used
"""


class LimiterUnavailable(Exception):
    """The shared rate-limit store could not be reached; requests are refused, not let through."""


def _guarded(method: Any) -> Any:
    def call(self: Any, *args: Any) -> Any:
        import redis

        try:
            return method(self, *args)
        except redis.RedisError as exc:
            raise LimiterUnavailable(str(exc)) from exc

    return call


class RedisRateLimiter(RateLimiter):
    """The same buckets and windows, counted in Redis so every instance shares them. The window
    comes from this service's clock (instances keep their clocks in sync, as NTP does), so every
    instance names the same counter for the same window."""

    remote = True

    def __init__(self, limits: RateLimits, clock: Clock, client: Any, prefix: str) -> None:
        super().__init__(limits, clock)
        self.client = client
        self.prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)

    def _redis_key(self, key: BucketKey, start: int) -> str:
        # One hash tag, so every bucket of a request lives in one Redis Cluster slot.
        return f"{{{self.prefix}:rl}}:{key.kind}:{key.identity}:{start}"

    def _states_from(self, keys: list[BucketKey], start: int, used: list[int]) -> list[BucketState]:
        window = self.limits.window_seconds
        return [
            BucketState(
                k.kind,
                self.limit_for(k.kind),
                max(0, self.limit_for(k.kind) - u),
                start + window,
                window,
            )
            for k, u in zip(keys, used, strict=True)
        ]

    @_guarded
    def acquire(self, keys: list[BucketKey]) -> tuple[bool, list[BucketState]]:
        start = self._window_start(self._now())
        names = [self._redis_key(k, start) for k in keys]
        limits = [self.limit_for(k.kind) for k in keys]
        reply = self._acquire(keys=names, args=[self.limits.window_seconds * 2, *limits])
        granted, used = bool(int(reply[0])), [int(u) for u in reply[1:]]
        return granted, self._states_from(keys, start, used)

    @_guarded
    def release(self, keys: list[BucketKey], window_start: int | None = None) -> list[BucketState]:
        start = self._window_start(self._now())
        if window_start is not None and window_start != start:
            return self.states(keys)
        reply = self._release(keys=[self._redis_key(k, start) for k in keys])
        return self._states_from(keys, start, [int(u) for u in reply])

    @_guarded
    def states(self, keys: list[BucketKey]) -> list[BucketState]:
        start = self._window_start(self._now())
        values = self.client.mget([self._redis_key(k, start) for k in keys]) if keys else []
        return self._states_from(keys, start, [int(v or 0) for v in values])

    def prune(self) -> None:
        """Nothing to do: Redis expires past windows' counters itself."""

    def _tag_key(self, name: str) -> str:
        return f"{{{self.prefix}:rl}}:etag:{name}"

    @_guarded
    def remember_tag(self, name: str) -> None:
        self.client.set(self._tag_key(name), b"1", ex=TAG_TTL_SECONDS)

    @_guarded
    def known_tag(self, names: list[str]) -> bool:
        return bool(names) and int(self.client.exists(*[self._tag_key(n) for n in names])) > 0

    @_guarded
    def forget_tags(self, names: list[str]) -> None:
        if names:
            self.client.delete(*[self._tag_key(n) for n in names])


def redis_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def make_limiter(settings: Settings, client: Any | None = None) -> RateLimiter:
    if client is not None:
        return RedisRateLimiter(settings.rate_limits, settings.clock, client, settings.redis_prefix)
    return RateLimiter(settings.rate_limits, settings.clock)


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
