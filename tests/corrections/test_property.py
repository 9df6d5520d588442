"""Property: any sequence of imports and corrected re-imports with `--update` ends with the
service holding exactly the last file's readings over the periods it covers (bounded and seeded:
8 sequences of up to 3 files, each a fresh organisation on the real service)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import make_org
from tests.corrections.conftest import bills, month, stored
from tests.corrections.test_update import run

MONTHS = [month(2024, m) for m in range(1, 7)]

# A file: which of six months it covers, where two neighbours merge into one bill (a rebill's
# shape), and each reading's consumption, cost and demand.
files = st.lists(
    st.tuples(
        st.integers(0, 5),  # first month
        st.integers(1, 4),  # months covered
        st.integers(0, 3),  # merge: every k-th boundary is dropped (0: none)
        st.lists(st.sampled_from([100.0, 250.0, 400.0]), min_size=6, max_size=6),
        st.sampled_from([None, 10.0, 12.5]),  # cost
        st.sampled_from([None, 5.0]),  # demand
    ),
    min_size=1,
    max_size=3,
)


def periods(first: int, count: int, merge: int) -> list[tuple[dt.date, dt.date]]:
    months = MONTHS[first : first + count]
    out: list[tuple[dt.date, dt.date]] = []
    for i, (s, e) in enumerate(months):
        if out and merge and i % merge == 0:
            out[-1] = (out[-1][0], e)  # this month joins the previous reading
        else:
            out.append((s, e))
    return out


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=files)
def test_last_file_wins_over_the_periods_it_covers(service, tmp_path, sequence):
    org = make_org(service, meters=1)
    meter = org.meters[0]
    counter = itertools.count()
    last: list[tuple] = []
    for first, count, merge, values, cost, demand in sequence:
        rows = [
            (meter, s, e, values[i], cost, demand)
            for i, (s, e) in enumerate(periods(first, count, merge))
        ]
        path = bills(tmp_path / f"{org.building}-{next(counter)}.csv", rows)
        summary = asyncio.run(run(service, org, path, update=True))
        assert summary.rejected == 0 and summary.pending == 0, summary
        last = rows
    span = (last[0][1], last[-1][2])
    held = [r for r in stored(service, org, meter) if r[0] <= span[1] and span[0] <= r[1]]
    assert held == [(s, e, v, c, d) for _, s, e, v, c, d in last]
