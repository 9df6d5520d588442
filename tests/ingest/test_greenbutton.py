"""Green Button: units and multipliers, DST days, daily/monthly/billing aggregation."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.ingest import IngestError, check_file
from bpsync.ingest.readers.greenbutton import dst_rule_datetime, read_green_button
from bpsync.ingest.readers.greenbutton_time import parse_offset

BASE = "https://u.example/espi/1_1/resource/Subscription/1"


def feed(intervals, *, uom=72, power=0, ltp=True, summaries=(), title="GB-METER"):
    readings = "".join(
        f"<espi:IntervalReading><espi:timePeriod><espi:duration>{d}</espi:duration><espi:start>{s}</espi:start>"
        f"</espi:timePeriod><espi:value>{v}</espi:value>{q}</espi:IntervalReading>"
        for s, d, v, q in intervals
    )
    ltp_entry = (
        f'<entry><link href="{BASE}/LocalTimeParameters/1" rel="self"/><content><espi:LocalTimeParameters>'
        "<espi:dstEndRule>B40E2000</espi:dstEndRule><espi:dstOffset>3600</espi:dstOffset>"
        "<espi:dstStartRule>360E2000</espi:dstStartRule><espi:tzOffset>-18000</espi:tzOffset>"
        "</espi:LocalTimeParameters></content></entry>"
        if ltp
        else ""
    )
    summary_entries = "".join(
        f'<entry><link href="{BASE}/UsagePoint/1/UsageSummary/{i}" rel="self"/>'
        f'<link href="{BASE}/UsagePoint/1/UsageSummary" rel="up"/><content><espi:UsageSummary>'
        f"<espi:billingPeriod><espi:duration>{d}</espi:duration><espi:start>{s}</espi:start></espi:billingPeriod>"
        f"<espi:billLastPeriod>{cost}</espi:billLastPeriod></espi:UsageSummary></content></entry>"
        for i, (s, d, cost) in enumerate(summaries)
    )
    return f"""<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:espi="http://naesb.org/espi">
<entry><link href="{BASE}/UsagePoint/1" rel="self"/><title>{title}</title>
<content><espi:UsagePoint><espi:ServiceCategory><espi:kind>0</espi:kind></espi:ServiceCategory></espi:UsagePoint></content></entry>
{ltp_entry}
<entry><link href="{BASE}/UsagePoint/1/MeterReading/1" rel="self"/>
<link href="{BASE}/ReadingType/9" rel="related"/><content><espi:MeterReading/></content></entry>
<entry><link href="{BASE}/ReadingType/9" rel="self"/><content><espi:ReadingType>
<espi:flowDirection>1</espi:flowDirection><espi:powerOfTenMultiplier>{power}</espi:powerOfTenMultiplier><espi:uom>{uom}</espi:uom>
</espi:ReadingType></content></entry>
<entry><link href="{BASE}/UsagePoint/1/MeterReading/1/IntervalBlock" rel="up"/>
<content><espi:IntervalBlock>{readings}</espi:IntervalBlock></content></entry>
{summary_entries}
</feed>"""


def hourly(local_start: dt.datetime, hours: int, utc_offset_hours: int, value: int = 1000):
    start = int(
        (local_start - dt.timedelta(hours=utc_offset_hours)).replace(tzinfo=dt.UTC).timestamp()
    )
    return [(start + 3600 * i, 3600, value, "") for i in range(hours)]


def test_dst_rules_decode_to_the_us_dates():
    assert dst_rule_datetime(0x360E2000, 2024) == dt.datetime(2024, 3, 10, 2)
    assert dst_rule_datetime(0xB40E2000, 2024) == dt.datetime(2024, 11, 3, 2)


@pytest.mark.parametrize(
    ("day", "offset", "hours"),
    [(dt.date(2024, 3, 10), -5, 23), (dt.date(2024, 11, 3), -4, 25), (dt.date(2024, 6, 1), -4, 24)],
)
def test_dst_days_have_23_or_25_hours_and_are_complete(tmp_path, day, offset, hours):
    path = tmp_path / "gb.xml"
    intervals = hourly(dt.datetime.combine(day, dt.time()), hours, offset)
    path.write_text(feed(intervals))
    table = read_green_button(path, aggregate="daily")
    rows = list(table.rows())
    assert [(r.cells[2], r.cells[4], r.cells[9]) for r in rows] == [(day, hours * 1.0, hours)]
    assert table.problems == []


def test_an_hour_missing_is_reported_and_multiplier_applied(tmp_path):
    path = tmp_path / "gb.xml"
    intervals = hourly(dt.datetime(2024, 6, 1), 23, -4, value=5)
    path.write_text(feed(intervals, uom=72, power=3))  # kWh-scaled Wh: 5 x 10^3 Wh = 5 kWh
    table = read_green_button(path, aggregate="daily")
    [row] = list(table.rows())
    assert row.cells[4] == 115.0 and row.cells[5] == "kWh"
    assert [p.code for p in table.problems] == ["incomplete_period"]


def test_timezone_override_and_monthly_trim(tmp_path):
    path = tmp_path / "gb.xml"
    intervals = hourly(dt.datetime(2024, 1, 15), 24 * 17, -5)  # 15..31 January
    path.write_text(feed(intervals, ltp=False, uom=169))
    table = read_green_button(path, aggregate="monthly", timezone="America/New_York")
    [row] = list(table.rows())
    assert (row.cells[2], row.cells[3], row.cells[5]) == (
        dt.date(2024, 1, 15),
        dt.date(2024, 1, 31),
        "therms",
    )
    assert table.problems[0].code == "incomplete_period"


def test_billing_periods_take_the_bill_cost(tmp_path):
    path = tmp_path / "gb.xml"
    intervals = hourly(dt.datetime(2024, 6, 1), 24 * 30, -4)
    start = intervals[0][0]
    path.write_text(feed(intervals, summaries=[(start, 30 * 86400, 12345600000)]))
    [row] = list(read_green_button(path).rows())
    assert (row.cells[2], row.cells[3], row.cells[4], row.cells[6]) == (
        dt.date(2024, 6, 1),
        dt.date(2024, 6, 30),
        720.0,
        123456.0,
    )


def test_not_xml_and_no_readings_are_refused(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<feed")
    with pytest.raises(IngestError, match="XML"):
        check_file(bad)
    empty = tmp_path / "empty.xml"
    empty.write_text(feed([]))
    with pytest.raises(IngestError, match="no interval readings"):
        read_green_button(empty)


def test_unreadable_intervals_and_clocks_are_named_not_tracebacks(tmp_path):
    far = tmp_path / "far.xml"
    far.write_text(feed([(10**15, 3600, 5, ""), (1717214400, 0, 5, "")]))
    with pytest.raises(IngestError) as err:
        read_green_button(far)
    assert (
        "ignored 1 usage point 1: interval readings whose start is not between 1900 and 2200"
        in (str(err.value))
    )
    assert "duration is not between 1 second and 400 days (e.g. 0)" in str(err.value)
    clock = tmp_path / "clock.xml"
    clock.write_text(feed(hourly(dt.datetime(2024, 6, 1), 24, -4)).replace("-18000", "-1800000"))
    with pytest.raises(IngestError, match="LocalTimeParameters: tzOffset -1800000"):
        read_green_button(clock)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("-0500", -18000), ("-05:00", -18000), ("+0530", 19800), ("Z", 0), ("Eastern", None)],
)
def test_offsets_written_on_readings(text, seconds):
    assert parse_offset(text) == seconds
