"""The sign-in throttle: failed sign-ins slow down, they never lock anyone out.

Failures are counted per account (organisation + email) and per client address. After a few free
failures, each further attempt on that key must wait a delay that doubles with every failure, up to
a cap; the counts are forgotten 15 minutes after the last failure, and a successful sign-in clears
its account's count. So guessing one password stays slow (2^n), spraying one password over many
accounts from one address is slowed by the address key, and a stranger typing wrong passwords can
delay the real user by at most the account cap (a minute), never lock them out for 15 minutes.

Counts live in memory (one instance) or in Redis next to the rate limits (decisions IN5)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

FORGET_AFTER = 15 * 60  # seconds without a failure after which a key starts afresh


@dataclass(frozen=True)
class Policy:
    free: int  # failures before any delay
    cap: float  # longest delay, seconds

    def delay(self, failures: int) -> float:
        if failures < self.free:
            return 0.0
        return float(min(self.cap, 2 ** (failures - self.free)))


ACCOUNT = Policy(free=5, cap=60)
ADDRESS = Policy(free=20, cap=300)


class MemoryCounts:
    def __init__(self) -> None:
        self._rows: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, now: float) -> tuple[int, float]:
        with self._lock:
            count, last = self._rows.get(key, (0, 0.0))
            return (0, 0.0) if now - last >= FORGET_AFTER else (count, last)

    def add(self, key: str, now: float) -> None:
        with self._lock:
            count, last = self._rows.get(key, (0, 0.0))
            count = 0 if now - last >= FORGET_AFTER else count
            self._rows[key] = (count + 1, now)
            if len(self._rows) > 100_000:  # bound memory: drop forgotten keys
                self._rows = {k: v for k, v in self._rows.items() if now - v[1] < FORGET_AFTER}

    def clear(self, key: str) -> None:
        with self._lock:
            self._rows.pop(key, None)


_ADD = """
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'last', ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return n
"""


class RedisCounts:
    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._add = client.register_script(_ADD)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:signin:{key}"

    def get(self, key: str, now: float) -> tuple[int, float]:
        count, last = self.client.hmget(self._key(key), "n", "last")
        if count is None:
            return 0, 0.0
        return int(count), float(last)

    def add(self, key: str, now: float) -> None:
        self._add(keys=[self._key(key)], args=[repr(now), FORGET_AFTER])

    def clear(self, key: str) -> None:
        self.client.delete(self._key(key))


class SignInThrottle:
    def __init__(self, counts: MemoryCounts | RedisCounts) -> None:
        self.counts = counts

    @staticmethod
    def _keys(org_id: str, email: str, address: str) -> list[tuple[str, Policy]]:
        return [(f"acct:{org_id}:{email}", ACCOUNT), (f"addr:{address}", ADDRESS)]

    def wait(self, org_id: str, email: str, address: str, now: float) -> float:
        """Seconds before this sign-in may be tried; 0 = now."""
        longest = 0.0
        for key, policy in self._keys(org_id, email, address):
            count, last = self.counts.get(key, now)
            longest = max(longest, last + policy.delay(count) - now if count else 0.0)
        return longest

    def failed(self, org_id: str, email: str, address: str, now: float) -> None:
        for key, _policy in self._keys(org_id, email, address):
            self.counts.add(key, now)

    def succeeded(self, org_id: str, email: str) -> None:
        self.counts.clear(f"acct:{org_id}:{email}")


def make_throttle(redis_client: Any | None, prefix: str) -> SignInThrottle:
    if redis_client is not None:
        return SignInThrottle(RedisCounts(redis_client, prefix))
    return SignInThrottle(MemoryCounts())
