"""Reading storage: the overlap/anomaly query finds exactly the readings that matter, through index
seeks (EXPLAIN QUERY PLAN), however long the meter's history is."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from bpservice.db.readings import readings_near
from bpservice.db.session import Database
from bpservice.domain.readings import (
    History,
    PastReading,
    Period,
    anomaly_flags,
    days_before,
    twelve_month_average,
)

METER = "mtr_" + "0" * 24


def seed(db: Database, periods: list[tuple[dt.date, dt.date]]) -> None:
    """Insert readings of METER directly (no parent rows: foreign keys off on this connection)."""
    raw = db.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("PRAGMA foreign_keys=OFF")
        cursor.execute("BEGIN")
        cursor.executemany(
            "INSERT INTO readings (id, meter_id, building_id, org_id, environment, start_date, "
            "end_date, consumption, unit, source, anomaly_flags, created_at) "
            "VALUES (?, ?, 'bld_x', 'org_x', 'test', ?, ?, 1.0, 'kWh', 'api', '[]', "
            "'2026-01-01 00:00:00.000000')",
            [
                (f"rdg_{i:024d}", METER, s.isoformat(), e.isoformat())
                for i, (s, e) in enumerate(periods)
            ],
        )
        cursor.execute("COMMIT")
    finally:
        raw.close()


def test_readings_near_finds_every_candidate(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'r.db'}")
    db.create_all()
    d = dt.date
    periods = [
        (d(2020, 1, 1), d(2023, 6, 30)),  # a long reading straddling the window start
        (d(2023, 7, 1), d(2023, 7, 31)),
        (d(2024, 7, 1), d(2024, 7, 31)),
        (d(2024, 8, 1), d(2024, 8, 31)),
        (d(2030, 1, 1), d(2030, 1, 31)),  # after the period: irrelevant
    ]
    seed(db, periods)
    with db.read() as session:
        near = readings_near(session, METER, d(2024, 6, 1), d(2024, 7, 15))
        assert [(s, e) for _, s, e, _ in near] == periods[:3]
        near = readings_near(session, METER, d(2025, 1, 1), d(2025, 1, 31))
        assert [(s, e) for _, s, e, _ in near] == periods[2:4]
        # the straddling reading is found even when nothing else is near
        near = readings_near(session, METER, d(2022, 1, 1), d(2022, 1, 1))
        assert [(s, e) for _, s, e, _ in near] == periods[:1]
        assert readings_near(session, METER, d(2040, 1, 1), d(2040, 1, 1)) == []
        assert readings_near(session, "mtr_other", d(2024, 1, 1), d(2024, 12, 31)) == []
    db.dispose()


def test_days_before_stops_at_the_first_date() -> None:
    assert days_before(dt.date(2025, 3, 1), 365) == dt.date(2024, 3, 1)
    assert days_before(dt.date(1, 6, 1), 365) == dt.date.min


def test_overlap_queries_use_index_seeks(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'plan.db'}")
    db.create_all()
    start = dt.date(1990, 1, 1)
    seed(db, [(start + dt.timedelta(days=i), start + dt.timedelta(days=i)) for i in range(5000)])
    statements: list[tuple[str, tuple]] = []

    def capture(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if "FROM readings" in statement:
            statements.append((statement, tuple(params)))

    event.listen(db.engine, "before_cursor_execute", capture)
    with db.read() as session:
        readings_near(session, METER, dt.date(2000, 1, 1), dt.date(2000, 3, 1))
        event.remove(db.engine, "before_cursor_execute", capture)
        connection = session.connection()
        plans = [
            " ".join(
                str(row[-1])
                for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)
            )
            for sql, params in statements
        ]
    assert len(plans) == 2
    for plan in plans:
        assert "SEARCH readings USING INDEX" in plan, plan
        assert "SCAN readings" not in plan, plan
    db.dispose()


past_readings = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=900),  # start, days after 2023-01-01
        st.integers(min_value=1, max_value=60),  # length in days
        st.one_of(st.floats(min_value=-50, max_value=1e6), st.integers(0, 5000).map(float)),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(
    history=past_readings,
    start=st.integers(min_value=0, max_value=1000),
    days=st.integers(min_value=1, max_value=40),
    factor=st.sampled_from([None, 3.0, 0.25, 2.999999, 0.2500001, 1.0, 1e-9]),
    consumption=st.floats(min_value=-10, max_value=5e6),
)
def test_history_flags_equal_the_exact_rule(
    history: list[tuple[int, int, float]],
    start: int,
    days: int,
    factor: float | None,
    consumption: float,
) -> None:
    base = dt.date(2023, 1, 1)
    past = [
        PastReading(base + dt.timedelta(days=s), base + dt.timedelta(days=s + n - 1), c)
        for s, n, c in history
    ]
    new = Period(base + dt.timedelta(days=start), base + dt.timedelta(days=start + days - 1))
    exact = twelve_month_average(past, new)
    if factor is not None and exact is not None:
        consumption = factor * exact  # on (or a hair off) a threshold
    assert History(past).flags(consumption, new) == anomaly_flags(consumption, exact)
