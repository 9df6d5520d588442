"""Plan: group readings by meter, sort by start date, and choose the calls that end the import
soonest: CSV uploads of up to 5,000 readings of many meters (decisions C1), batches of at most 500
of one meter, and single calls.

Every call spends the principal's bucket (per API key 1,000, or per OAuth user 300, per window);
a batch call also spends the bulk bucket (10 per window). A file of 1,000 meters x 12 monthly bills
is 1,000 small batches, 100 minutes at 10 a minute, but about 12 minutes as 12,000 single calls
under 1,000 a minute. The planner sorts chunks by size, largest first, and batches the prefix that
minimises the estimate (the largest groups save the most calls per bulk token); small chunks go as
single calls. A share of every bucket (`headroom`) is left for other traffic of the same key.

With the upload (the default), the largest meters go into uploads, sent one after another (each
meter's readings stay in start order across them) on bulk tokens, while the smallest go as single
calls at the same time on the principal's tokens; of the splits about as fast as the fastest
(within 10 % or half a second) the one spending the smallest share of the rate-limit buckets is
taken, and kept when it beats the batch plan, or matches it while spending a smaller share. Call
costs are measured (`MEASURED`): a meter's year in an upload costs the service far less than its
single calls, and calls in flight barely overlap on it, so a 200 x 12 file is one upload; single
calls stay for a file of a few readings and for readings that would need another upload alone.

Pure: limits come in as plain data (`limits_from_state` reads the client's learned buckets, else the
spec's defaults), nothing here sends or sleeps."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

MAX_BATCH = 500
MAX_UPLOAD = 5000
DEFAULT_HEADROOM = 0.10
# The spec's limits (per window of 60 s) for the buckets an import spends.
SPEC_LIMITS: dict[str, int] = {"key": 1000, "user": 300, "bulk": 10}
SPEC_WINDOW = 60.0

CallKind = Literal["batch", "single", "upload"]

# What each call costs on the service (seconds), measured by bench/bench_upload_cost.py on
# 27 November 2026 (served bpservice, SQLite, loopback, 2 vCPUs shared with other work; two
# runs, medians of 3 per shape): a single reading 18-24 ms alone and 16-18 ms a call with four in
# flight (so calls in flight gain 1.0-1.5x, not 4x: the service's writes take turns on one SQLite
# file); a batch 6-28 ms + 0.23-0.34 ms a reading; an upload 50-150 ms + 18 ms a meter +
# 0.36-0.48 ms a reading (2,400 readings of 200 meters: 4.8 s). The guesses before (a single
# 30 ms with four in flight four times as fast, an upload 50 ms a meter + 0.5 ms a reading)
# sent 768 of a 200 x 12 file's readings as single calls beside one upload.
MEASURED = "bench/bench_upload_cost.py, 27 November 2026"


@dataclass(frozen=True)
class BucketBudget:
    """One bucket as the planner sees it: `limit` per `window` seconds, and (when the client has
    learned it) what is left in the current window and when that window ends."""

    kind: str
    limit: int
    window: float
    remaining: int | None = None
    reset_in: float | None = None
    learned: bool = False

    def per_window(self, headroom: float) -> int:
        """Calls this import may make per window: the limit less the headroom (at least one)."""
        return max(1, math.floor(self.limit * (1.0 - headroom)))

    def reserve(self, headroom: float) -> int:
        return self.limit - self.per_window(headroom)

    def seconds_until(self, n: int, headroom: float) -> float:
        """How long until the n-th call may start (0 when it fits in what is left now).

        Fixed windows: what is left of the current window first, then `per_window` calls at the
        start of each following window."""
        if n <= 0:
            return 0.0
        now_left, first_reset = self.left_now(headroom)
        if n <= now_left:
            return 0.0
        return first_reset + self.window * ((n - now_left - 1) // self.per_window(headroom))

    def left_now(self, headroom: float) -> tuple[int, float]:
        """(calls this import may still make in the current window, seconds until it ends)."""
        if self.remaining is None:
            return self.per_window(headroom), self.window
        now_left = max(0, self.remaining - self.reserve(headroom))
        return now_left, self.window if self.reset_in is None else max(0.0, self.reset_in)


@dataclass(frozen=True)
class Limits:
    """Everything the estimate depends on. Latencies are per call on the wire, measured on a
    served bpservice (see `MEASURED`); `concurrency` is how many calls are in flight at once, and
    `service_speedup` the most that calls in flight gain over calls one after another on the
    service (its writes take turns on one SQLite file: four singles in flight cost 16-18 ms a
    call against 18-24 ms alone)."""

    principal: BucketBudget
    bulk: BucketBudget
    headroom: float = DEFAULT_HEADROOM
    concurrency: int = 4
    single_seconds: float = 0.02
    batch_seconds: float = 0.02
    batch_seconds_per_reading: float = 0.0003
    upload_seconds: float = 0.1
    upload_seconds_per_meter: float = 0.018
    upload_seconds_per_reading: float = 0.0004
    service_speedup: float = 1.2

    def batch_latency(self, size: int) -> float:
        return self.batch_seconds + self.batch_seconds_per_reading * size

    def upload_latency(self, size: int, meters: int, uploads: int = 1) -> float:
        """`uploads` uploads holding `size` readings of `meters` meters (a meter cut across two
        uploads counts in both): the service's checks, events and benchmark recalculation are
        per meter, so an upload costs per meter as well as per reading."""
        return (
            self.upload_seconds * uploads
            + self.upload_seconds_per_meter * max(1, meters)
            + self.upload_seconds_per_reading * size
        )

    @property
    def parallel(self) -> float:
        """How many times faster calls in flight end than one after another."""
        return max(1.0, min(float(self.concurrency), self.service_speedup))


def default_limits(
    principal_kind: str = "key", *, headroom: float = DEFAULT_HEADROOM, **kwargs: float
) -> Limits:
    """The spec's limits with full windows ahead (nothing learned yet)."""
    principal = BucketBudget(principal_kind, SPEC_LIMITS.get(principal_kind, 1000), SPEC_WINDOW)
    bulk = BucketBudget("bulk", SPEC_LIMITS["bulk"], SPEC_WINDOW)
    return Limits(principal, bulk, headroom, **kwargs)  # type: ignore[arg-type]


def limits_from_state(
    buckets: Mapping[str, object],
    now: float,
    principal_kind: str = "key",
    *,
    headroom: float = DEFAULT_HEADROOM,
    **kwargs: float,
) -> Limits:
    """Limits from the client's learned buckets (`RateLimiter.snapshot()`: kind → Bucket with
    limit, remaining, reset, window), else the spec's defaults. An unlearned bulk bucket is
    assumed to have the spec's limit over the principal bucket's window (the service uses one
    window length for every bucket)."""

    def budget(kind: str, default_window: float) -> BucketBudget:
        b = buckets.get(kind)
        if b is not None:
            return BucketBudget(
                kind,
                int(b.limit),  # type: ignore[attr-defined]
                float(b.window),  # type: ignore[attr-defined]
                int(b.remaining),  # type: ignore[attr-defined]
                max(0.0, float(b.reset) - now),  # type: ignore[attr-defined]
                learned=True,
            )
        return BucketBudget(kind, SPEC_LIMITS.get(kind, 1000), default_window)

    principal = budget(principal_kind, SPEC_WINDOW)
    bulk = budget("bulk", principal.window if principal.learned else SPEC_WINDOW)
    return Limits(principal, bulk, headroom, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Call:
    """One request: `offset`/`size` index into the meter's readings (sorted by start). A
    "single" call of `size` n stands for n single calls, one per reading (`pieces`): a plan of
    100,000 singles holds a few thousand of these rather than 100,000 objects."""

    meter: str
    kind: CallKind
    offset: int
    size: int

    def pieces(self) -> Iterator[Call]:
        """The requests this call is: itself, or one single call per reading of a run."""
        if self.kind != "single" or self.size == 1:
            yield self
            return
        for i in range(self.size):
            yield Call(self.meter, "single", self.offset + i, 1)


@dataclass(frozen=True)
class Upload:
    """One CSV upload: consecutive pieces of one or more meters' readings (kind "upload")."""

    parts: tuple[Call, ...]

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)


@dataclass(frozen=True)
class MeterPlan:
    meter: str
    count: int
    calls: tuple[Call, ...]

    # Counted once: a plan's totals ask each of its thousands of meters several times.
    @functools.cached_property
    def batches(self) -> int:
        return sum(1 for c in self.calls if c.kind == "batch")

    @functools.cached_property
    def singles(self) -> int:
        return sum(c.size for c in self.calls if c.kind == "single")


@dataclass(frozen=True)
class Estimate:
    seconds: float
    bound: Literal["principal", "bulk", "latency", "none"]
    principal_calls: int
    bulk_calls: int


@dataclass
class Plan:
    meters: list[MeterPlan]
    limits: Limits
    estimate: Estimate
    extra_calls: int = 0
    alternatives: dict[str, float] = field(default_factory=dict)
    uploads: list[Upload] = field(default_factory=list)  # sent one after another

    @property
    def readings(self) -> int:
        return sum(m.count for m in self.meters) + sum(u.size for u in self.uploads)

    @property
    def meter_count(self) -> int:
        return len(
            {m.meter for m in self.meters} | {p.meter for u in self.uploads for p in u.parts}
        )

    @property
    def batches(self) -> int:
        return sum(m.batches for m in self.meters)

    @property
    def singles(self) -> int:
        return sum(m.singles for m in self.meters)

    @property
    def calls(self) -> int:
        return self.batches + self.singles + len(self.uploads)

    def as_dict(self) -> dict[str, object]:
        return {
            "readings": self.readings,
            "meters": self.meter_count,
            "upload_calls": len(self.uploads),
            "batch_calls": self.batches,
            "single_calls": self.singles,
            "estimated_seconds": round(self.estimate.seconds, 1),
            "bound_by": self.estimate.bound,
            "limits": {
                "principal": {
                    "kind": self.limits.principal.kind,
                    "limit": self.limits.principal.limit,
                    "window": self.limits.principal.window,
                    "learned": self.limits.principal.learned,
                },
                "bulk": {
                    "limit": self.limits.bulk.limit,
                    "window": self.limits.bulk.window,
                    "learned": self.limits.bulk.learned,
                },
                "headroom": self.limits.headroom,
            },
            "alternatives_seconds": {k: round(v, 1) for k, v in self.alternatives.items()},
        }


def chunks(count: int, size: int = MAX_BATCH) -> list[tuple[int, int]]:
    """(offset, size) pieces of at most `size`, in order."""
    return [(o, min(size, count - o)) for o in range(0, count, size)]


def estimate(
    limits: Limits,
    *,
    singles: int,
    batch_sizes: Sequence[int],
    extra_calls: int = 0,
    longest_chain: float = 0.0,
) -> Estimate:
    """Seconds to send `singles` single calls and batches of `batch_sizes` (plus `extra_calls`
    other calls on the principal bucket): the later of when the last token of each bucket is
    available and the time the calls take on the wire (`Limits.parallel` at once), plus one call's
    latency."""
    wire = sum(limits.batch_latency(s) for s in batch_sizes)
    return _estimate(
        limits,
        singles,
        len(batch_sizes),
        wire,
        max(batch_sizes, default=0),
        extra_calls,
        longest_chain,
    )


def _estimate(
    limits: Limits,
    singles: int,
    batches: int,
    batch_wire: float,
    largest_batch: int,
    extra_calls: int,
    longest_chain: float,
) -> Estimate:
    principal_calls = singles + batches + extra_calls
    if principal_calls == 0:
        return Estimate(0.0, "none", 0, 0)
    h = limits.headroom
    wire = singles * limits.single_seconds + batch_wire
    options = {
        "principal": limits.principal.seconds_until(principal_calls, h),
        "bulk": limits.bulk.seconds_until(batches, h),
        "latency": max(wire / limits.parallel, longest_chain),
    }
    bound = max(options, key=lambda k: options[k])
    last = limits.batch_latency(largest_batch) if batches else limits.single_seconds
    seconds = options[bound] + (last if bound != "latency" else 0.0)
    return Estimate(seconds, bound, principal_calls, batches)  # type: ignore[arg-type]


def _seconds_until(bucket: BucketBudget, n: np.ndarray, headroom: float) -> np.ndarray:
    """`bucket.seconds_until` of each count in `n`, the same arithmetic on arrays."""
    import numpy as np  # here, not at import: the CLI names DEFAULT_HEADROOM at start-up

    now_left, first_reset = bucket.left_now(headroom)
    per = bucket.per_window(headroom)
    later = first_reset + bucket.window * ((np.maximum(n - now_left, 1) - 1) // per)
    return np.where(n <= now_left, 0.0, later)


def _prefix_estimates(
    limits: Limits,
    singles: np.ndarray,
    batches: np.ndarray,
    batch_wire: np.ndarray,
    largest_batch: np.ndarray,
    extra_calls: int,
    longest_chain: np.ndarray,
) -> tuple[list[float], list[int]]:
    """(seconds to the microsecond, principal calls) of `_estimate(limits, singles[k],
    batches[k], ...)` for every k: the same arithmetic on arrays (a file of 4,000 meters has
    4,000 prefixes to weigh)."""
    import numpy as np  # here, not at import: the CLI names DEFAULT_HEADROOM at start-up

    h = limits.headroom
    principal_calls = singles + batches + extra_calls
    wire = singles * limits.single_seconds + batch_wire
    principal = _seconds_until(limits.principal, principal_calls, h)
    bulk = _seconds_until(limits.bulk, batches, h)
    latency = np.maximum(wire / limits.parallel, longest_chain)
    last = np.where(
        batches > 0,
        limits.batch_seconds + limits.batch_seconds_per_reading * largest_batch,
        limits.single_seconds,
    )
    # `max` over (principal, bulk, latency) keeps the first of equal bounds.
    seconds = np.where(
        (principal >= bulk) & (principal >= latency),
        principal + last,
        np.where(bulk >= latency, bulk + last, latency),
    )
    seconds = np.where(principal_calls == 0, 0.0, seconds)
    rounded = [round(x, 6) for x in seconds.tolist()]  # Python's rounding, as `_estimate`'s key
    return rounded, principal_calls.tolist()


def _best_prefix(
    limits: Limits,
    singles: np.ndarray,
    batches: np.ndarray,
    batch_wire: np.ndarray,
    largest_batch: np.ndarray,
    extra_calls: int,
    longest_chain: np.ndarray,
) -> int:
    """The k whose estimate is least by (seconds to the microsecond, principal calls), the first
    of equals: the batch planner's search over every prefix."""
    rounded, calls = _prefix_estimates(
        limits, singles, batches, batch_wire, largest_batch, extra_calls, longest_chain
    )
    return min(range(len(rounded)), key=lambda k: (rounded[k], calls[k]))


def slack(seconds: float) -> float:
    """How much slower a plan may be and still count as about as fast: 10 % or half a second."""
    return max(0.5, 0.1 * seconds)


def leanest(
    seconds: Sequence[float], calls: Sequence[int], bulk: Sequence[int], limits: Limits
) -> int:
    """Among options about as fast as the fastest (within `slack`), the one spending the smallest
    share of the buckets (`share`), then the faster, then fewer calls, then the first."""
    best = min(seconds, default=0.0)
    near = [k for k in range(len(seconds)) if seconds[k] <= best + slack(best)]
    return min(near, key=lambda k: (share(limits, bulk[k], calls[k]), seconds[k], calls[k], k))


def share(limits: Limits, bulk_calls: int, calls: int) -> float:
    """The share of the buckets `calls` calls spend, `bulk_calls` of them bulk calls: bulk calls
    over the bulk limit, plus every call over the principal's limit (a bulk token is a tenth of
    a minute's bulk budget, a call a thousandth of the key's)."""
    return bulk_calls / limits.bulk.limit + calls / limits.principal.limit


def make_plan(
    groups: Mapping[str, int], limits: Limits, *, extra_calls: int = 0, uploads: bool = True
) -> Plan:
    """The plan for `groups` (meter → number of readings, in the order meters should go): the
    batch plan (`batch_plan`), or with `uploads` the upload plan when its estimate is lower."""
    plan = batch_plan(groups, limits, extra_calls=extra_calls)
    if not uploads:
        return plan
    mixed = upload_plan(groups, limits, extra_calls=extra_calls)
    plan.alternatives["uploads_and_singles"] = mixed.estimate.seconds
    mixed.alternatives = dict(plan.alternatives)
    # Faster wins; about as fast (within `slack`) while spending a smaller share of the buckets
    # wins too: what it does not spend is left to the watcher, the app and the next import.
    faster = mixed.estimate.seconds < plan.estimate.seconds
    leaner = mixed.estimate.seconds <= plan.estimate.seconds + slack(
        plan.estimate.seconds
    ) and _share(mixed) < _share(plan)
    return mixed if faster or leaner else plan


def _share(plan: Plan) -> float:
    """The share of the buckets a plan spends (`share`)."""
    return share(plan.limits, plan.batches + len(plan.uploads), plan.calls)


def upload_plan(groups: Mapping[str, int], limits: Limits, *, extra_calls: int = 0) -> Plan:
    """The largest meters in uploads (sequential, bulk tokens), the rest as single calls
    (concurrent, principal tokens). Of the splits about as fast as the fastest (`slack`), the one
    spending the smallest share of the buckets (`leanest`): with the measured costs an upload
    carries a meter's readings for less than its single calls would cost the service, so only
    readings that would need another upload (a bulk token) for themselves, or a file of a few
    readings, go as single calls."""
    import numpy as np  # here, not at import: the CLI names DEFAULT_HEADROOM at start-up

    order = sorted((m for m, n in groups.items() if n > 0), key=lambda m: -groups[m])
    total = sum(groups[m] for m in order)
    # Prefix k puts the k largest meters in uploads.
    in_uploads = np.concatenate(([0], np.cumsum([groups[m] for m in order], dtype=np.int64)))
    k = np.arange(len(order) + 1, dtype=np.int64)
    pieces = -(-in_uploads // MAX_UPLOAD)  # uploads of at most MAX_UPLOAD, counted
    chain = np.where(
        k > 0,
        limits.upload_seconds * pieces
        + limits.upload_seconds_per_meter * np.maximum(1, k + pieces - 1)
        + limits.upload_seconds_per_reading * in_uploads,
        0.0,
    )  # `upload_latency` of each prefix's uploads (a meter cut in two counts in both)
    largest = np.minimum(in_uploads, MAX_UPLOAD)
    seconds, calls = _prefix_estimates(
        limits, total - in_uploads, pieces, chain, largest, extra_calls, chain
    )
    best_k = leanest(seconds, calls, pieces.tolist(), limits)
    lane = order[:best_k]
    uploads: list[Upload] = []
    parts: list[Call] = []
    space = MAX_UPLOAD
    for m in lane:
        offset = 0
        while offset < groups[m]:
            take = min(space, groups[m] - offset)
            parts.append(Call(m, "upload", offset, take))
            offset += take
            space -= take
            if space == 0:
                uploads.append(Upload(tuple(parts)))
                parts, space = [], MAX_UPLOAD
    if parts:
        uploads.append(Upload(tuple(parts)))
    in_lane = set(lane)  # once: a set per meter made this quadratic
    meters = [
        MeterPlan(m, groups[m], tuple(Call(m, "single", o, n) for o, n in chunks(groups[m])))
        for m in groups
        if groups[m] > 0 and m not in in_lane
    ]
    sizes = [u.size for u in uploads]
    chain = sum(limits.upload_latency(u.size, len(u.parts)) for u in uploads)  # as `chain` above
    singles = sum(mp.count for mp in meters)
    final = _estimate(limits, singles, len(sizes), chain, max(sizes, default=0), extra_calls, chain)
    return Plan(meters, limits, final, extra_calls, {}, uploads)


def batch_plan(groups: Mapping[str, int], limits: Limits, *, extra_calls: int = 0) -> Plan:
    """Batches and single calls only (a service without the upload).

    Chunks of one reading always go as a single call (a batch would spend a bulk token for
    nothing). The others are sorted by size, largest first, and the prefix to batch is the one
    with the smallest estimate; ties go to fewer calls."""
    import numpy as np  # here, not at import: the CLI names DEFAULT_HEADROOM at start-up

    meter_chunks = {m: chunks(n) for m, n in groups.items() if n > 0}
    candidates = sorted(
        ((size, m, off) for m, cs in meter_chunks.items() for off, size in cs if size >= 2),
        key=lambda c: -c[0],
    )
    total = sum(groups.values())
    # Prefix k batches the k largest chunks: its sums are running sums over the sorted sizes.
    sizes = np.array([c[0] for c in candidates], dtype=np.int64)
    batched = np.concatenate(([0], np.cumsum(sizes)))
    wire = np.concatenate(
        ([0.0], np.cumsum(limits.batch_seconds + limits.batch_seconds_per_reading * sizes))
    )
    largest = np.concatenate(([0], np.maximum.accumulate(sizes)))
    k = np.arange(len(sizes) + 1, dtype=np.int64)
    best_k = _best_prefix(limits, total - batched, k, wire, largest, extra_calls, np.zeros(len(k)))
    chosen = {(m, off) for _, m, off in candidates[:best_k]}
    meters: list[MeterPlan] = []
    for m, cs in meter_chunks.items():
        calls: list[Call] = []
        for off, size in cs:
            if (m, off) in chosen:
                calls.append(Call(m, "batch", off, size))
            else:
                calls.append(Call(m, "single", off, size))
        meters.append(MeterPlan(m, groups[m], tuple(calls)))
    chain = max(
        (
            sum(
                limits.batch_latency(c.size)
                if c.kind == "batch"
                else limits.single_seconds * c.size
                for c in mp.calls
            )
            for mp in meters
        ),
        default=0.0,
    )
    batch_sizes = [c.size for mp in meters for c in mp.calls if c.kind == "batch"]
    singles = sum(mp.singles for mp in meters)
    final = estimate(
        limits,
        singles=singles,
        batch_sizes=batch_sizes,
        extra_calls=extra_calls,
        longest_chain=chain,
    )
    all_batch = [s for cs in meter_chunks.values() for _, s in cs]
    alternatives = {
        "all_batches": estimate(limits, singles=0, batch_sizes=all_batch).seconds,
        "all_singles": estimate(limits, singles=total, batch_sizes=[]).seconds,
    }
    return Plan(meters, limits, final, extra_calls, alternatives)
