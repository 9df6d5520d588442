"""The planner: table tests of the choice between batch and single calls, and its estimates."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.client.ratelimit import Bucket
from bpsync.ingest.send.plan_calls import (
    BucketBudget,
    Limits,
    _estimate,
    chunks,
    default_limits,
    limits_from_state,
    make_plan,
    upload_plan,
)


def test_the_issues_example_1000_meters_by_12_bills():
    """100 minutes as batches, about 12 as single calls: the planner takes the fast mix."""
    limits = default_limits(headroom=0.0)
    plan = make_plan({f"m{i}": 12 for i in range(1000)}, limits, uploads=False)
    # all batches: 10 now, then 10 a minute for 990 more → the last starts at minute 99
    assert plan.alternatives["all_batches"] == pytest.approx(99 * 60, abs=1)
    # all singles: 1,000 now, then 1,000 a minute → the last of 12,000 starts at minute 11
    assert plan.alternatives["all_singles"] == pytest.approx(11 * 60, abs=1)
    assert plan.estimate.seconds <= plan.alternatives["all_singles"]
    assert plan.estimate.seconds == pytest.approx(10 * 60, abs=1)
    assert plan.readings == 12_000 and 0 < plan.batches <= 110
    assert plan.singles == 12_000 - 12 * plan.batches


def test_headroom_leaves_a_share_for_other_traffic():
    plan = make_plan(
        {f"m{i}": 12 for i in range(1000)}, default_limits(headroom=0.1), uploads=False
    )
    assert plan.limits.principal.per_window(0.1) == 900
    assert plan.limits.bulk.per_window(0.1) == 9
    assert plan.estimate.seconds == pytest.approx(12 * 60, abs=1)  # ~12 min, not 100


@pytest.mark.parametrize(
    ("groups", "batches", "singles"),
    [
        ({"a": 1}, 0, 1),  # one reading is never a batch
        ({"a": 12}, 1, 0),  # latency-bound: one call beats twelve
        ({"a": 500}, 1, 0),
        ({"a": 501}, 1, 1),  # 500 + a chunk of one, sent single
        ({"a": 1200, "b": 3, "c": 1}, 4, 1),
        ({}, 0, 0),
    ],
)
def test_chunking_and_choice_when_limits_are_far(groups, batches, singles):
    plan = make_plan(groups, default_limits(), uploads=False)
    assert (plan.batches, plan.singles) == (batches, singles)
    for mp in plan.meters:
        covered = sorted((c.offset, c.offset + c.size) for c in mp.calls)
        assert covered[0][0] == 0 and covered[-1][1] == mp.count
        assert all(a[1] == b[0] for a, b in itertools.pairwise(covered))
        assert all(c.size <= 500 for c in mp.calls)


def test_largest_groups_go_to_batches_first():
    """Bulk allows 9 batches this window: the 9 largest meters get them."""
    limits = default_limits(headroom=0.1)
    groups = {f"big{i}": 400 for i in range(9)} | {f"small{i}": 5 for i in range(100)}
    plan = make_plan(groups, limits, uploads=False)
    kinds = {mp.meter: {c.kind for c in mp.calls} for mp in plan.meters}
    assert all(kinds[f"big{i}"] == {"batch"} for i in range(9))
    assert sum(1 for m, k in kinds.items() if m.startswith("small") and k == {"single"}) == 100
    assert plan.estimate.seconds < 60  # everything fits in the current window


def test_learned_state_is_used():
    now = 1000.0
    state = {
        "key": Bucket(limit=100, remaining=10, reset=now + 2, window=5),
        "bulk": Bucket(limit=2, remaining=0, reset=now + 2, window=5),
    }
    limits = limits_from_state(state, now, "key", headroom=0.0)
    assert limits.principal == BucketBudget("key", 100, 5.0, 10, 2.0, learned=True)
    assert limits.bulk.remaining == 0
    # 10 now, then 100 per 5 s: the 111th call waits for the second reset
    assert limits.principal.seconds_until(10, 0.0) == 0.0
    assert limits.principal.seconds_until(11, 0.0) == 2.0
    assert limits.principal.seconds_until(111, 0.0) == 7.0
    # an unlearned bulk bucket gets the spec's 10 over the principal's learned window
    guessed = limits_from_state({"key": state["key"]}, now, "key")
    assert (guessed.bulk.limit, guessed.bulk.window, guessed.bulk.learned) == (10, 5.0, False)
    assert default_limits("user").principal.limit == 300


def test_user_bucket_is_tighter():
    plan_key = make_plan(
        {f"m{i}": 12 for i in range(100)}, default_limits("key", headroom=0), uploads=False
    )
    plan_user = make_plan(
        {f"m{i}": 12 for i in range(100)}, default_limits("user", headroom=0), uploads=False
    )
    assert plan_user.estimate.seconds > plan_key.estimate.seconds


def test_latency_bound_estimate():
    limits = Limits(
        BucketBudget("key", 10**6, 60),
        BucketBudget("bulk", 10**6, 60),
        concurrency=2,
        single_seconds=0.01,
        batch_seconds=0.1,
        batch_seconds_per_reading=0.0,
        service_speedup=4.0,
    )
    plan = make_plan({"a": 2, "b": 2}, limits, uploads=False)
    assert plan.estimate.bound == "latency"
    assert plan.singles == 4 and plan.estimate.seconds == pytest.approx(0.02)


def test_calls_in_flight_gain_only_what_the_service_allows():
    """Measured: four singles in flight cost 16-18 ms a call against 18-24 ms alone (the
    service's writes take turns on one SQLite file), so more calls in flight gain at most 1.2x."""
    far = BucketBudget("key", 10**6, 60), BucketBudget("bulk", 10**6, 60)
    for concurrency, parallel in ((1, 1.0), (2, 1.2), (4, 1.2), (16, 1.2)):
        limits = Limits(*far, concurrency=concurrency, single_seconds=0.024)
        assert limits.parallel == parallel
        plan = make_plan({"a": 1, "b": 1, "c": 1}, limits, uploads=False)
        assert plan.estimate.seconds == pytest.approx(3 * 0.024 / parallel)


def test_chunks():
    assert chunks(0) == []
    assert chunks(1001) == [(0, 500), (500, 500), (1000, 1)]


@given(
    groups=st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=4), st.integers(0, 2_600), max_size=12
    ),
    headroom=st.sampled_from([0.0, 0.1, 0.5]),
)
@settings(max_examples=200, deadline=None)
def test_every_reading_is_in_exactly_one_call_of_at_most_500(groups, headroom):
    """Whatever the mix, each meter's readings are covered once, in order, in calls of <= 500."""
    plan = make_plan(groups, default_limits(headroom=headroom), uploads=False)
    planned = {mp.meter: mp for mp in plan.meters}
    assert set(planned) == {m for m, n in groups.items() if n}
    for meter, count in groups.items():
        if not count:
            continue
        calls = sorted(planned[meter].calls, key=lambda c: c.offset)
        assert all(1 <= c.size <= 500 for c in calls)
        assert calls[0].offset == 0 and calls[-1].offset + calls[-1].size == count
        assert all(a.offset + a.size == b.offset for a, b in itertools.pairwise(calls))
    assert plan.readings == sum(groups.values())


@given(
    groups=st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=4), st.integers(0, 12_000), max_size=12
    ),
    headroom=st.sampled_from([0.0, 0.1, 0.5]),
)
@settings(max_examples=200, deadline=None)
def test_with_uploads_every_reading_is_sent_once_in_order(groups, headroom):
    """Each meter is either in the uploads (its pieces consecutive, in order, across uploads of
    at most 5,000) or sent as single calls, never both; nothing is left out."""
    plan = make_plan(groups, default_limits(headroom=headroom))
    assert all(1 <= u.size <= 5000 for u in plan.uploads)
    pieces: dict[str, list[tuple[int, int]]] = {}
    for u in plan.uploads:
        for p in u.parts:
            assert p.kind == "upload"
            pieces.setdefault(p.meter, []).append((p.offset, p.size))
    for mp in plan.meters:
        assert mp.meter not in pieces
        assert all(c.kind in ("single", "batch") for c in mp.calls)
    for meter, parts in pieces.items():
        assert parts[0][0] == 0 and sum(s for _, s in parts) == groups[meter]
        assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(parts))
    assert plan.readings == sum(groups.values())


def test_uploads_carry_a_many_meter_file_in_few_bulk_calls():
    """The issue's example: 200 meters x 12 months is 200 batches (20 minutes of bulk tokens at
    10 a minute), or one upload of 2,400 readings."""
    groups = {f"m{i}": 12 for i in range(200)}
    batches = make_plan(groups, default_limits(), uploads=False)
    uploads = make_plan(groups, default_limits())
    assert uploads.uploads and uploads.estimate.seconds < batches.estimate.seconds / 10
    assert len(uploads.uploads) == 1 and uploads.as_dict()["upload_calls"] == 1
    assert uploads.readings == 2400 and uploads.as_dict()["meters"] == 200
    assert "uploads_and_singles" in batches.alternatives | uploads.alternatives


@pytest.mark.parametrize("principal", ["key", "user"])
@pytest.mark.parametrize("headroom", [0.0, 0.1])
@pytest.mark.parametrize("concurrency", [1, 4, 8])
def test_a_200_by_12_file_goes_in_uploads_not_hundreds_of_singles(principal, headroom, concurrency):
    """Issue 32 item 1: with the measured costs (an upload carries a meter's year for 23 ms of
    the service's time; its twelve single calls cost 200 ms) the file is one upload, no single
    calls (the guessed costs planned 768)."""
    limits = default_limits(principal, headroom=headroom, concurrency=concurrency)
    plan = make_plan({f"m{i}": 12 for i in range(200)}, limits)
    assert (len(plan.uploads), plan.batches, plan.singles, plan.calls) == (1, 0, 0, 1)
    assert plan.estimate.seconds < 10


def test_measured_costs_are_the_defaults():
    limits = default_limits()
    assert limits.single_seconds == pytest.approx(0.02)
    # an upload of 200 meters x 12 months: 4.8 s on the service, as measured
    assert limits.upload_latency(2400, 200) == pytest.approx(4.8, abs=0.3)
    # a meter's year in an upload is cheaper for the service than its twelve single calls
    assert limits.upload_latency(2412, 201) - limits.upload_latency(2400, 200) < (
        12 * limits.single_seconds / limits.parallel
    )


@pytest.mark.parametrize(
    ("groups", "uploads", "singles"),
    [
        # a few readings: single calls, no bulk token spent on them
        ({"a": 1, "b": 1, "c": 1}, 0, 3),
        ({"a": 2}, 0, 2),
        # 5,004 readings: one full upload; the meter that would need a second one goes single
        ({f"m{i}": 12 for i in range(417)}, 1, 12),
        # a meter too large for what is left of the upload: its readings go as a second upload
        ({f"m{i}": 12 for i in range(400)} | {"daily": 365}, 2, 0),
    ],
)
def test_stray_readings_still_go_as_single_calls(groups, uploads, singles):
    plan = make_plan(groups, default_limits())
    assert (len(plan.uploads), plan.batches, plan.singles) == (uploads, 0, singles)
    assert plan.readings == sum(groups.values())


def test_no_upload_keeps_to_batches_and_single_calls():
    plan = make_plan({f"m{i}": 12 for i in range(200)}, default_limits(), uploads=False)
    assert not plan.uploads and plan.batches + plan.singles == plan.calls > 0
    assert plan.readings == 2400


def _scalar_batch_choice(groups, limits):
    """The batch planner's search written one prefix at a time (how it was first written): the
    number of chunks it batches."""
    candidates = sorted(
        (size for n in groups.values() if n > 0 for _, size in chunks(n) if size >= 2),
        reverse=True,
    )
    total = sum(groups.values())
    best_k, best, batched, wire, largest = 0, None, 0, 0.0, 0
    for k in range(len(candidates) + 1):
        if k:
            size = candidates[k - 1]
            batched, wire = batched + size, wire + limits.batch_latency(size)
            largest = max(largest, size)
        est = _estimate(limits, total - batched, k, wire, largest, 0, 0.0)
        key = (round(est.seconds, 6), est.principal_calls)
        if best is None or key < best:
            best_k, best = k, key
    return best_k


def _scalar_upload_choice(groups, limits):
    """The upload planner's search one prefix at a time: how many of the largest meters go in
    uploads (of the splits within 10 % or half a second of the fastest, the one spending the
    smallest share of the buckets, then the faster, then fewer calls, then the shorter)."""
    order = sorted((m for m, n in groups.items() if n > 0), key=lambda m: -groups[m])
    total = sum(groups[m] for m in order)
    options, in_uploads = [], 0
    for k in range(len(order) + 1):
        if k:
            in_uploads += groups[order[k - 1]]
        pieces = -(-in_uploads // 5000)
        chain = limits.upload_latency(in_uploads, k + pieces - 1, pieces) if k else 0.0
        largest = min(in_uploads, 5000)
        est = _estimate(limits, total - in_uploads, pieces, chain, largest, 0, chain)
        options.append((round(est.seconds, 6), est.principal_calls, pieces))
    best = min(o[0] for o in options)
    near = [k for k, o in enumerate(options) if o[0] <= best + max(0.5, 0.1 * best)]
    share = {
        k: options[k][2] / limits.bulk.limit + options[k][1] / limits.principal.limit for k in near
    }
    return min(near, key=lambda k: (share[k], options[k][0], options[k][1], k))


@given(
    sizes=st.lists(st.integers(0, 1_400), max_size=60),
    principal=st.tuples(
        st.sampled_from([3, 40, 300, 1000]),
        st.one_of(st.none(), st.integers(0, 1000)),
        st.floats(0, 70),
    ),
    bulk=st.tuples(st.sampled_from([1, 2, 10]), st.one_of(st.none(), st.integers(0, 10))),
    headroom=st.sampled_from([0.0, 0.1, 0.5]),
    concurrency=st.integers(1, 8),
)
@settings(max_examples=300, deadline=None)
def test_the_prefix_search_on_arrays_chooses_as_one_prefix_at_a_time(
    sizes, principal, bulk, headroom, concurrency
):
    """Both planners weigh every prefix on arrays; the choice (ties included: to the microsecond,
    then fewer calls, then the shorter prefix) is the one the scalar estimate makes prefix by
    prefix, under learned and unlearned buckets of every tightness."""
    limit, remaining, reset_in = principal
    limits = Limits(
        BucketBudget("key", limit, 60.0, None if remaining is None else min(remaining, limit),
                     reset_in if remaining is not None else None, remaining is not None),
        BucketBudget("bulk", bulk[0], 60.0, None if bulk[1] is None else min(bulk[1], bulk[0]),
                     30.0 if bulk[1] is not None else None, bulk[1] is not None),
        headroom,
        concurrency,
    )  # fmt: skip
    groups = {f"m{i:03d}": n for i, n in enumerate(sizes)}
    batched = make_plan(groups, limits, uploads=False)
    assert batched.batches == _scalar_batch_choice(groups, limits)
    mixed = upload_plan(groups, limits)
    in_uploads = {p.meter for u in mixed.uploads for p in u.parts}
    order = sorted((m for m, n in groups.items() if n > 0), key=lambda m: -groups[m])
    assert in_uploads == set(order[: _scalar_upload_choice(groups, limits)])
