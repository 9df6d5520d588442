"""Green Button quirks read without a service (the end-to-end cases are in
test_greenbutton_and_headers.py): US spring-forward bills, bills cut at 01:00 UTC in a feed
without LocalTimeParameters, and feed-level problems stated exactly."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError
from bpsync.ingest.readers.greenbutton import read_green_button
from tests.ingest.fidelity.fixtures import greenbutton as gb

D = dt.date


def rows(path: Path) -> list[tuple]:
    return [(r.cells[2], r.cells[3], r.cells[4]) for r in read_green_button(path).rows()]


def test_us_spring_forward_hourly_bills(tmp_path: Path):
    """Mimics a US electric utility feed across 10 March 2024 (a 23-hour day), bills written at
    midnight standard time, i.e. 01:00 daylight time from March on."""
    path = tmp_path / "elec.xml"
    iv = gb.intervals(D(2024, 2, 1), D(2024, 4, 30), "America/New_York", 60, 1000)
    bills = gb.monthly_bills([(2024, 2), (2024, 3), (2024, 4)], "Etc/GMT+5", usages=[696, 743, 720])
    path.write_text(gb.feed("E-1", iv, bills=bills))
    table = read_green_button(path)
    assert [(r.cells[2], r.cells[3], r.cells[4]) for r in table.rows()] == [
        (D(2024, 2, 1), D(2024, 2, 29), 696.0),
        (D(2024, 3, 1), D(2024, 3, 31), 743.0),
        (D(2024, 4, 1), D(2024, 4, 30), 720.0),
    ]
    assert table.problems == []  # the bills agree with the intervals: no warning


def test_bills_cut_at_one_am_utc_without_local_time(tmp_path: Path):
    """Mimics the gas feed of issue 11: no LocalTimeParameters, November bills "ending" at 01:00
    UTC on the next bill's first day. Before, each bill's last day overlapped the next bill."""
    path = tmp_path / "gas.xml"
    iv = gb.intervals(D(2024, 10, 1), D(2024, 12, 31), "UTC", 60, 1000)
    bills = gb.monthly_bills([(2024, 10), (2024, 11), (2024, 12)], "UTC", hour=1)
    path.write_text(gb.feed("G-1", iv, uom=169, power=-3, ltp=None, bills=bills, kind=1))
    assert rows(path) == [
        (D(2024, 10, 1), D(2024, 10, 31), 744.0),
        (D(2024, 11, 1), D(2024, 11, 30), 720.0),
        (D(2024, 12, 1), D(2024, 12, 31), 744.0),
    ]


def test_a_boundary_far_from_midnight_keeps_its_date(tmp_path: Path):
    """A bill cut at 06:00 local is not snapped: its dates are the local dates it covers."""
    path = tmp_path / "odd.xml"
    iv = gb.intervals(D(2024, 6, 1), D(2024, 6, 30), "America/New_York", 60, 1000)
    start = gb.epoch(dt.datetime(2024, 6, 1, 6), "America/New_York")
    end = gb.epoch(dt.datetime(2024, 6, 15, 6), "America/New_York")
    path.write_text(gb.feed("E-2", iv, bills=[gb.Bill(start, end - start)]))
    assert (D(2024, 6, 1), D(2024, 6, 15)) in [(a, b) for a, b, _ in rows(path)]


def test_feed_level_problems_are_named(tmp_path: Path):
    empty_type = tmp_path / "empty_type.xml"
    empty_type.write_text(gb.feed("E-3", [(1704085200, 3600, 5)], reading_type=False))
    with pytest.raises(IngestError) as err:
        read_green_button(empty_type)
    assert "its ReadingType has no uom (unit of measure), which bpsync cannot convert" in str(
        err.value
    )
    bad_start = tmp_path / "bad_start.xml"
    bad_start.write_text(gb.feed("E-4", [(0, 3600, 5), (0, 3600, 6)], bad_start="2024-01-01T00:00"))
    with pytest.raises(IngestError) as err:
        read_green_button(bad_start)
    assert (
        "ignored 2 usage point 1: interval readings whose start is not a whole number "
        "(e.g. '2024-01-01T00:00')" in str(err.value)
    )
    assert "holds no interval readings" in str(err.value)
