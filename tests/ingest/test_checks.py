"""The column-wise checks (bpsync.ingest.checks.columnwise) against the reading-by-reading rule they
replace (against_stored.check_meter_with_stored, which meters with stored readings still use): for
random meters with duplicates, overlaps, gaps, negative values, odd period lengths, future dates
and values placed exactly on the 3x / 25 % thresholds, the same accepted readings, flags and
problems in the same order."""

from __future__ import annotations

import datetime as dt
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest.checks.against_stored import check_meter_with_stored as _check_meter_with_stored
from bpsync.ingest.checks.against_stored import flag_stored_meters as _flag_stored_meters
from bpsync.ingest.checks.collected import (
    COLUMNS,
    Collected,
    StoredReading,
    ValidationResult,
    collected_from,
)
from bpsync.ingest.checks.columnwise import Context, check_meters
from bpsync.ingest.checks.service_rules import flags_by_ordinal
from bpsync.ingest.checks.validate import validate
from bpsync.ingest.problems import Where
from bpsync.ingest.readings.assign_meters import Candidate


def _collected(seed: int, meters: int) -> Collected:
    rng = random.Random(seed)
    out = []
    row = 2
    for m in range(meters):
        cols: dict[str, list] = {name: [] for name in COLUMNS}
        day = dt.date(2023, 1, 1).toordinal() + rng.randint(0, 60)
        level = rng.choice([100.0, 250.5, 1e-3, 7e6])
        for _ in range(rng.randint(1, 30)):
            days = rng.choice([30, 31, 28, 29, 1, 7, 90, 400, 3])
            value = level * rng.choice([1, 1, 1, 3, 0.25, 0.2499999, 3.0000001, -1, 0, 2.9999999])
            start = day + rng.choice([0, 0, 0, 1, 5, -3, -days])  # gaps and overlaps
            for _ in range(2 if rng.random() < 0.1 else 1):  # exact duplicates
                for name, value_ in (
                    ("rows", row),
                    ("starts", start),
                    ("ends", start + days - 1),
                    ("consumption", value),
                    ("cost", float("nan") if rng.random() < 0.5 else 1.0),
                    ("demand", float("nan")),
                    ("currency", -1),
                    ("estimated", 0),
                    ("cols", -1 if rng.random() < 0.8 else 4),
                ):
                    cols[name].append(value_)
                row += rng.choice([1, 1, 2])
            day = start + days
        out.append((f"m{m}", f"mtr_{m}" if m % 3 else None, "kWh", cols))
    return collected_from(out, file="f.csv", currencies=[""])


def _run(collected: Collected, columnar: bool, today: dt.date):
    result = ValidationResult(collected)
    keyed: list = []

    def where(row: int, column: int | None = None) -> Where:
        return Where("f.csv", None, row, "Start" if column is None else f"c{column}", column)

    context = Context(where, (today + dt.timedelta(days=1)).toordinal(), 3, keyed)
    items = list(collected.meters.items())
    if columnar:
        check_meters(result, context, [(p, k, m) for p, (k, m) in enumerate(items)])
    else:
        for p, (k, m) in enumerate(items):
            _check_meter_with_stored(result, context, p, k, m, ())
        _flag_stored_meters(result, context)
    keyed.sort(key=lambda kp: kp[0])
    accepted = {k: list(result.accepted.get(k, [])) for k in collected.meters}
    return accepted, dict(sorted(result.flags.items())), [p for _, p in keyed]


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10**9), meters=st.integers(1, 6))
def test_columnar_checks_match_the_reading_by_reading_rule(seed, meters):
    collected = _collected(seed, meters)
    today = dt.date(2024, 6, 1)
    got = _run(collected, True, today)
    want = _run(collected, False, today)
    assert got[0] == want[0]
    assert got[1] == want[1]
    assert [(p.code, p.reason, p.where, p.value, p.severity, p.meter) for p in got[2]] == [
        (p.code, p.reason, p.where, p.value, p.severity, p.meter) for p in want[2]
    ]


def _stored(seed: int, collected: Collected) -> dict[str, list[StoredReading]]:
    """Up to 14 stored readings per meter (monthly bills and odd periods, negative values and
    values placed to put the file's readings on the 3x / 25 % thresholds), ending before the
    meter's first reading in the file."""
    rng = random.Random(seed)
    out = {}
    for m in collected.meters.values():
        if m.meter_id is None or rng.random() < 0.2:
            continue
        end = min(m.lists().starts) - rng.choice([1, 1, 1, 10, 200])
        readings = []
        for _ in range(rng.randint(0, 14)):
            days = rng.choice([30, 31, 28, 29, 7, 90, 3])
            level = rng.choice([100.0, 250.5, 1e-3, 7e6, 33.3333333])
            value = level * rng.choice([1, 1, 1, 3, 0.25, -1, 0, 1 / 3])
            start = end - days + 1
            readings.append(
                StoredReading(dt.date.fromordinal(start), dt.date.fromordinal(end), value)
            )
            end = start - rng.choice([1, 1, 5])
        out[m.meter_id] = readings[::-1]
    return out


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10**9), meters=st.integers(1, 6))
def test_flags_against_stored_readings_match_the_reading_by_reading_rule(seed, meters):
    """The meters with stored readings get their flags all at once on arrays: each flag is the
    one `flags_by_ordinal` (the service's sums, stored readings first, then the file's earlier
    readings) gives that meter's accepted readings."""
    collected = _collected(seed, meters)
    stored = _stored(seed, collected)
    result = validate(collected, existing=stored, today=dt.date(2024, 6, 1))
    want: dict = {}
    for key, m in collected.meters.items():
        history = stored.get(m.meter_id or "", [])
        if not history:
            continue
        lists, accepted = m.lists(), list(result.accepted[key])
        flags = flags_by_ordinal(
            [lists.starts[i] for i in accepted],
            [lists.ends[i] for i in accepted],
            [lists.consumption[i] for i in accepted],
            [r.start.toordinal() for r in history],
            [r.end.toordinal() for r in history],
            [r.consumption for r in history],
        )
        for i, f in zip(accepted, flags, strict=True):
            if f:
                want[(m.meter_id, lists.rows[i])] = f
    got = {k: v for k, v in result.flags.items() if k[0] in stored and stored[k[0]]}
    assert got == want


def test_candidates_come_back_in_start_order() -> None:
    collected = _collected(3, 2)
    result = ValidationResult(collected)
    check_meters(
        result,
        Context(lambda row, column=None: Where("f", None, row), None, None, []),
        [(p, k, m) for p, (k, m) in enumerate(collected.meters.items())],
    )
    for key in result.accepted:
        starts = [c.start for c in result.candidates(key)]
        assert starts == sorted(starts)
        assert all(isinstance(c, Candidate) for c in result.candidates(key))


@settings(max_examples=200, deadline=None)
@given(
    meters=st.lists(
        st.lists(st.sampled_from([1, 7, 27, 30, 31, 32, 33, 90]), min_size=1, max_size=30),
        min_size=1,
        max_size=3,
    ),
    values=st.lists(
        st.one_of(st.floats(-50, 1e7, allow_nan=False), st.sampled_from([0.0, -0.0])),
        min_size=90,
        max_size=90,
    ),
    block=st.sampled_from([1, 4, 1 << 17]),
)
def test_window_average_is_the_services_to_the_bit(meters, values, block):
    """The column-wise average equals the scalar rule's (`twelve_month_average`, the service's
    summation order) bit for bit, for daily, weekly, monthly and quarterly mixes, several meters
    side by side, whatever block the readings are summed in."""
    import numpy as np

    from bpsync.ingest.checks import service_rules as checks
    from bpsync.ingest.checks.service_rules import PastReading, twelve_month_average

    g, s, e = [], [], []
    for m, lengths in enumerate(meters):
        start = dt.date(2022, 1, 1).toordinal()
        for n in lengths:
            g.append(m)
            s.append(start)
            e.append(start + n - 1)
            start += n
    c = values[: len(s)]
    saved, checks._BLOCK = checks._BLOCK, block
    try:
        got = checks.window_averages(
            np.array(g), np.array(s), np.array(e), np.array(c, dtype=float)
        )
    finally:
        checks._BLOCK = saved
    past = [
        PastReading(dt.date.fromordinal(a), dt.date.fromordinal(b), v)
        for a, b, v in zip(s, e, c, strict=True)
    ]
    for i in range(len(s)):
        before = [p for j, p in enumerate(past[:i]) if g[j] == g[i]]
        want = twelve_month_average(before, past[i].start, past[i].end)
        assert (want is None and np.isnan(got[i])) or got[i] == want, i
        assert want is None or np.signbit(got[i]) == np.signbit(want), i  # zero's sign too
