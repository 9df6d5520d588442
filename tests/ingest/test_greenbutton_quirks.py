"""Green Button feeds as utilities write them (issue 27 item 8), each quirk in a small feed written
here that mimics the real export named in its test (those exports are in ../shared/real-inputs and
tests/real_inputs/test_green_button.py imports them). Read offline: the reader's readings, problems
and the notes the dry run prints."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError
from bpsync.ingest.readers.greenbutton import read_green_button

D = dt.date
EASTERN_LTP = (
    "<espi:LocalTimeParameters><espi:dstEndRule>B40E2000</espi:dstEndRule>"
    "<espi:dstOffset>3600</espi:dstOffset><espi:dstStartRule>360E2000</espi:dstStartRule>"
    "<espi:tzOffset>-18000</espi:tzOffset></espi:LocalTimeParameters>"
)


def entry(
    self: str | None = None,
    up: str | None = None,
    related: tuple = (),
    body: str = "",
    title: str | None = None,
) -> str:
    links = "".join(
        f'<link rel="{rel}" href="{href}"/>'
        for rel, href in [("self", self), ("up", up), *(("related", r) for r in related)]
        if href
    )
    heading = f"<title>{title}</title>" if title else ""
    return f"<entry>{heading}{links}<content>{body}</content></entry>"


def reading_type(uom: int = 72, power: int = 0, flow: int | None = 1) -> str:
    direction = f"<espi:flowDirection>{flow}</espi:flowDirection>" if flow is not None else ""
    return (
        f"<espi:ReadingType>{direction}<espi:powerOfTenMultiplier>{power}"
        f"</espi:powerOfTenMultiplier><espi:uom>{uom}</espi:uom></espi:ReadingType>"
    )


def block(readings: list[tuple], extra: str = "") -> str:
    """(start, duration, value) → an IntervalBlock; `extra` is written inside each reading's
    timePeriod when it starts with <espi:timezone>, else inside the IntervalReading."""
    period_extra = extra if extra.startswith("<espi:timezone>") else ""
    reading_extra = "" if period_extra else extra
    return (
        "<espi:IntervalBlock>"
        + "".join(
            f"<espi:IntervalReading>{reading_extra}<espi:timePeriod><espi:duration>{d}</espi:duration>"
            f"<espi:start>{s}</espi:start>{period_extra}</espi:timePeriod>"
            f"<espi:value>{v}</espi:value></espi:IntervalReading>"
            for s, d, v in readings
        )
        + "</espi:IntervalBlock>"
    )


def feed(path: Path, *entries: str, base: str | None = None) -> Path:
    own = f'<link rel="self" href="{base}"/>' if base else ""
    path.write_text(
        '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" '
        f'xmlns:espi="http://naesb.org/espi">{own}{"".join(entries)}</feed>',
        encoding="utf-8",
    )
    return path


def usage_point(ref: str, *related: str, kind: int = 0, title: str = "Site") -> str:
    body = f"<espi:UsagePoint><espi:ServiceCategory><espi:kind>{kind}</espi:kind></espi:ServiceCategory></espi:UsagePoint>"
    return entry(ref, None, related, body, title)


def epoch(local: dt.datetime, offset_hours: int) -> int:
    return int(local.replace(tzinfo=dt.timezone(dt.timedelta(hours=offset_hours))).timestamp())


def hours(first: dt.datetime, count: int, offset: int, value: int = 1000) -> list[tuple]:
    start = epoch(first, offset)
    return [(start + 3600 * i, 3600, value) for i in range(count)]


def rows(table) -> list[tuple]:
    return [(r.cells[2], r.cells[3], r.cells[4], r.cells[5]) for r in table.rows()]


def test_relative_reading_type_href_picks_the_linked_of_two(tmp_path: Path):
    """Mimics UtilityAPI's feed (set2 intervals_APUC000000_electric.xml) and the NGMA gas
    provider feed: hrefs relative to the feed (`ReadingType/01`), two ReadingTypes of which the
    MeterReading links the Wh one, `published` written inside `content`."""
    path = feed(
        tmp_path / "relative.xml",
        entry("ReadingType/01", "ReadingType", body=reading_type(72, 0)),
        entry("ReadingType/02", "ReadingType", body=reading_type(169, 3)),
        usage_point("User/7/UsagePoint/9", "User/7/UsagePoint/9/MeterReading", title="Home"),
        entry(
            "User/7/UsagePoint/9/MeterReading/01",
            "User/7/UsagePoint/9/MeterReading",
            ("User/7/UsagePoint/9/MeterReading/01/IntervalBlock", "ReadingType/01"),
            "<espi:MeterReading/><published>2023-08-01T15:57:21+00:00</published>",
        ),
        entry(
            "User/7/UsagePoint/9/MeterReading/01/IntervalBlock/1",
            "User/7/UsagePoint/9/MeterReading/01/IntervalBlock",
            body=block(hours(dt.datetime(2024, 6, 1), 24, 0, 500)),
        ),
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [(D(2024, 6, 1), D(2024, 6, 1), 12.0, "kWh")]  # 24 x 500 Wh


def test_relative_hrefs_resolve_against_the_feed_and_ids_that_disagree(tmp_path: Path):
    """Mimics the NGMA gas provider feed (set1 ngma_gas_provider_2024-07-16.xml): the feed's own
    self link is a base for relative hrefs, the UsagePoint's path says `User/1111111` where its
    MeterReading collection says `User/11111111` (the links still tie them), and one content
    holds several IntervalBlocks."""
    readings = [(epoch(dt.datetime(2024, 1, d), -5), 86400, 2000 * d) for d in (1, 2)]
    path = feed(
        tmp_path / "base.xml",
        usage_point("User/1111111/UsagePoint/01", "User/11111111/UsagePoint/01/MeterReading"),
        entry(
            "User/11111111/UsagePoint/01/MeterReading/01",
            "User/11111111/UsagePoint/01/MeterReading",
            ("User/11111111/UsagePoint/01/MeterReading/01/IntervalBlock", "ReadingType/07"),
            "<espi:MeterReading/>",
        ),
        entry(
            "User/11111111/UsagePoint/01/MeterReading/01/IntervalBlock/0173",
            "User/11111111/UsagePoint/01/MeterReading/01/IntervalBlock",
            body=block(readings[:1]) + block(readings[1:]),
        ),
        entry("ReadingType/07", "ReadingType", body=reading_type(169, -3, flow=None)),
        entry("LocalTimeParameters/01", "LocalTimeParameters", body=EASTERN_LTP),
        base="/ThirdParty/11111111/Batch",
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [
        (D(2024, 1, 1), D(2024, 1, 1), 2.0, "therms"),
        (D(2024, 1, 2), D(2024, 1, 2), 4.0, "therms"),
    ]


def test_readings_newest_first_with_an_offset_on_each_reading(tmp_path: Path):
    """Mimics UtilityAPI's feed: hourly readings newest first, no LocalTimeParameters, and
    `<timezone>-0500</timezone>` inside every timePeriod (not ESPI). Local days are UTC-05:00
    ones (read as UTC, 19:00-23:00 would fall on the next day); the first and last days are
    partial and hold what the file has."""
    readings = hours(dt.datetime(2023, 2, 22, 13), 11 + 24 + 1, -5)[::-1]  # 13:00 .. 00:00
    path = feed(
        tmp_path / "offsets.xml",
        entry("ReadingType/01", "ReadingType", body=reading_type(72)),
        usage_point("User/1/UsagePoint/5", "User/1/UsagePoint/5/MeterReading"),
        entry(
            "User/1/UsagePoint/5/MeterReading/01",
            "User/1/UsagePoint/5/MeterReading",
            ("User/1/UsagePoint/5/MeterReading/01/IntervalBlock", "ReadingType/01"),
            "<espi:MeterReading/>",
        ),
        entry(
            "User/1/UsagePoint/5/MeterReading/01/IntervalBlock/1",
            "User/1/UsagePoint/5/MeterReading/01/IntervalBlock",
            body=block(readings, "<espi:timezone>-0500</espi:timezone>"),
        ),
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [
        (D(2023, 2, 22), D(2023, 2, 22), 11.0, "kWh"),
        (D(2023, 2, 23), D(2023, 2, 23), 24.0, "kWh"),
        (D(2023, 2, 24), D(2023, 2, 24), 1.0, "kWh"),
    ]
    assert [p.code for p in table.problems] == ["incomplete_period", "incomplete_period"]
    assert "local days from the UTC offset written on each interval reading (UTC-05:00)" in (
        table.notes
    )
    assert not any("read as UTC" in n for n in table.notes)


def test_an_offset_that_is_not_one_is_said_and_the_feed_clock_used(tmp_path: Path):
    readings = hours(dt.datetime(2024, 6, 1), 24, -4)
    path = feed(
        tmp_path / "zone_name.xml",
        entry("ReadingType/01", "ReadingType", body=reading_type(72)),
        usage_point("UsagePoint/5", "UsagePoint/5/MeterReading"),
        entry("LocalTimeParameters/1", None, body=EASTERN_LTP),
        entry("UsagePoint/5/MeterReading/1", None, ("ReadingType/01",), "<espi:MeterReading/>"),
        entry(
            None,
            "UsagePoint/5/MeterReading/1/IntervalBlock",
            body=block(readings, "<espi:timezone>Eastern</espi:timezone>"),
        ),
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [(D(2024, 6, 1), D(2024, 6, 1), 24.0, "kWh")]
    assert (
        "24 interval readings state the time zone 'Eastern', not a UTC offset: ignored"
        in table.notes
    )


def united_power(path: Path) -> Path:
    """One usage point, four MeterReadings (delivered, net, received, demand in W), blocks written
    before their MeterReading, a powerOfTenMultiplier inside every IntervalReading."""
    up = "/User/u/UsagePoint/0"
    start = epoch(dt.datetime(2025, 10, 19), -6)
    entries = [
        usage_point(
            up, f"{up}/MeterReading", f"{up}/LocalTimeParameters", f"{up}/ElectricPowerUsageSummary"
        ),
        entry(f"{up}/LocalTimeParameters", up, body=EASTERN_LTP.replace("-18000", "-25200")),
        entry(f"{up}/ElectricPowerUsageSummary/01", f"{up}/ElectricPowerUsageSummary"),  # empty
    ]
    kinds = {
        "01": (72, 1, [49600, 23030]),
        "02": (72, 4, [38600, -6490]),
        "03": (72, 19, [-11000, -29520]),
        "04": (38, 1, [10672]),
    }
    for mr, (uom, flow, values) in kinds.items():
        readings = [(start + 86400 * i, 86400, v) for i, v in enumerate(values)]
        inner = "<espi:powerOfTenMultiplier>3</espi:powerOfTenMultiplier>"
        entries += [
            entry(
                f"{up}/MeterReading/{mr}/IntervalBlock/0",
                f"{up}/MeterReading/{mr}/IntervalBlock",
                (f"{up}/MeterReading/{mr}",),
                block(readings, inner),
            ),
            entry(
                f"{up}/ReadingType/{mr}", f"{up}/MeterReading/{mr}", body=reading_type(uom, 0, flow)
            ),
            entry(
                f"{up}/MeterReading/{mr}",
                f"{up}/MeterReading",
                (f"{up}/MeterReading/{mr}/IntervalBlock", f"{up}/ReadingType/{mr}"),
                "<espi:MeterReading/>",
            ),
        ]
    return feed(path, *entries, base="/NISC/x/Readings")


def test_several_meter_readings_only_delivered_energy_is_consumption(tmp_path: Path):
    """Mimics United Power's NISC feed (set2 green_button_data_1761076466385.xml): the net,
    received and demand readings are left out, each named with its interval count and why; the
    powerOfTenMultiplier inside each IntervalReading is not ESPI and the ReadingType's x10^0
    governs (49600 Wh = 49.6 kWh)."""
    table = read_green_button(united_power(tmp_path / "united.xml"))
    assert rows(table) == [(D(2025, 10, 19), D(2025, 10, 20), 72.63, "kWh")]
    assert table.notes == [
        "ignored the powerOfTenMultiplier (3) written inside 2 IntervalReadings, where ESPI has "
        "none: values are scaled by their ReadingType's powerOfTenMultiplier",
        "ignored usage point 0, meter reading 02: flowDirection 4 (net: delivered minus "
        "received), not consumption (2 interval readings)",
        "ignored usage point 0, meter reading 03: flowDirection 19 (received: energy the site "
        "sent to the grid), not consumption (2 interval readings)",
        "ignored usage point 0, meter reading 04: demand in W (uom 38, ReadingType/04), not "
        "consumption (1 interval reading)",
        "usage point 0 has no billing summaries (its 1 UsageSummary entry is empty): aggregated "
        "by calendar month",
        "1 billing readings from 1 usage point series (2 of the feed's 7 interval readings; 5 "
        "ignored, as said above)",
    ]


def test_bill_length_intervals_across_dst_stay_back_to_back(tmp_path: Path):
    """Mimics National Grid's gas feed (set1 ngma_natural_gas_billing_…_2021-05-26_to_2024-04-25
    .xml): no LocalTimeParameters, each bill one IntervalReading starting at the UTC midnight of
    its first day, its duration counting the DST hour (30 days + 1 h across November, 32 days -
    1 h across March). Each bill ended on the next one's first day, and both were refused."""
    day = 86400
    bills = [
        (epoch(dt.datetime(2021, 10, 26), 0), 30 * day + 3600, 131000),
        (epoch(dt.datetime(2021, 11, 25), 0), 33 * day, 215000),
        (epoch(dt.datetime(2023, 2, 24), 0), 32 * day - 3600, 199000),
        (epoch(dt.datetime(2023, 3, 28), 0), 31 * day, 110000),
    ]
    mr = "/v1/User/1/UsagePoint/NET_USAGE/MeterReading/1"
    path = feed(
        tmp_path / "bills.xml",
        usage_point("/v1/BillingAccount/1/UsagePoint/NET_USAGE", mr, kind=1),
        entry(mr, None, ("/v1/ReadingType/0", f"{mr}/IntervalBlock/1"), "<espi:MeterReading/>"),
        entry("/v1/ReadingType/0", body=reading_type(169, -3, flow=None)),
        entry(f"{mr}/IntervalBlock/1", body=block(bills)),
        base="/v1/espi_third_party_batch_feed",
    )
    table = read_green_button(path)
    assert rows(table) == [
        (D(2021, 10, 26), D(2021, 11, 24), 131.0, "therms"),
        (D(2021, 11, 25), D(2021, 12, 27), 215.0, "therms"),
        (D(2023, 2, 24), D(2023, 3, 27), 199.0, "therms"),
        (D(2023, 3, 28), D(2023, 4, 27), 110.0, "therms"),
    ]
    assert (
        "4 interval readings of usage point NET_USAGE cover more than a day each (bills): each is one reading, its boundaries snapped to local midnight"
        in table.notes
    )


@pytest.mark.parametrize(("day", "count"), [(D(2011, 3, 13), 23), (D(2011, 11, 6), 25)])
def test_dst_days_keep_every_hour_under_pacific_rules(tmp_path: Path, day: dt.date, count: int):
    """Mimics the Green Button Alliance sample (set1 Coastal_Multi_Family_…_RetailCustomer_5.xml):
    LocalTimeParameters for US Pacific, absolute hrefs; a DST day holds 23 or 25 hours, complete."""
    base = "https://gb.example/DataCustodian/espi/1_1/resource"
    up = f"{base}/RetailCustomer/5/UsagePoint/1"
    offset = -8 if day.month == 3 else -7  # local midnight is still standard / still daylight
    path = feed(
        tmp_path / "pacific.xml",
        usage_point(up, f"{up}/MeterReading", f"{base}/LocalTimeParameters/01"),
        entry(f"{base}/LocalTimeParameters/01", body=EASTERN_LTP.replace("-18000", "-28800")),
        entry(
            f"{up}/MeterReading/01",
            f"{up}/MeterReading",
            (f"{up}/MeterReading/01/IntervalBlock", f"{base}/ReadingType/07"),
            "<espi:MeterReading/>",
        ),
        entry(f"{base}/ReadingType/07", body=reading_type(72)),
        entry(
            f"{up}/MeterReading/01/IntervalBlock/173",
            f"{up}/MeterReading/01/IntervalBlock",
            body=block(hours(dt.datetime.combine(day, dt.time()), count, offset, 400)),
        ),
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [(day, day, count * 400 / 1000, "kWh")]
    assert [r.cells[9] for r in table.rows()] == [count] and table.problems == []


def test_two_delivered_readings_of_one_point_are_not_added(tmp_path: Path):
    """A feed with the same energy as hourly and as daily MeterReadings (both flowDirection 1):
    adding them would count it twice; the finer one is imported and the other named."""
    up = "UsagePoint/1"
    day_start = epoch(dt.datetime(2024, 6, 1), -4)
    path = feed(
        tmp_path / "twice.xml",
        usage_point(up, f"{up}/MeterReading"),
        entry("LocalTimeParameters/1", body=EASTERN_LTP),
        entry("ReadingType/1", body=reading_type(72)),
        entry(
            f"{up}/MeterReading/1", f"{up}/MeterReading", ("ReadingType/1",), "<espi:MeterReading/>"
        ),
        entry(
            f"{up}/MeterReading/2", f"{up}/MeterReading", ("ReadingType/1",), "<espi:MeterReading/>"
        ),
        entry(None, f"{up}/MeterReading/1/IntervalBlock", body=block([(day_start, 86400, 24000)])),
        entry(
            None,
            f"{up}/MeterReading/2/IntervalBlock",
            body=block(hours(dt.datetime(2024, 6, 1), 24, -4)),
        ),
    )
    table = read_green_button(path, aggregate="daily")
    assert rows(table) == [(D(2024, 6, 1), D(2024, 6, 1), 24.0, "kWh")]
    assert [r.cells[9] for r in table.rows()] == [24]
    assert (
        "ignored usage point 1, meter reading 1 (1 interval readings): a second delivered kWh "
        "reading of the usage point; meter reading 2 (24) was imported, and both would count the "
        "energy twice"
    ) in table.notes


def test_an_empty_reading_type_and_identical_fractional_starts_say_both(tmp_path: Path):
    """Mimics the NGMA gas provider feed: its ReadingType is empty and every reading starts at
    the same fractional instant (the feed's creation time); nothing can be imported and the
    error names both reasons and the count."""
    up = "User/1/UsagePoint/01"
    readings = [("1721154384.66136", 2505600, 12000), ("1721154384.66136", 2592000, 15000)]
    path = feed(
        tmp_path / "empty_type.xml",
        usage_point(up, f"{up}/MeterReading", kind=1),
        entry(
            f"{up}/MeterReading/01",
            f"{up}/MeterReading",
            ("ReadingType/07",),
            "<espi:MeterReading/>",
        ),
        entry(
            f"{up}/MeterReading/01/IntervalBlock/1",
            f"{up}/MeterReading/01/IntervalBlock",
            body=block(readings[:1]) + block(readings[1:]),
        ),
        entry("ReadingType/07", "ReadingType", body="<espi:ReadingType/>"),
    )
    with pytest.raises(IngestError) as err:
        read_green_button(path)
    message = str(err.value)
    assert message.startswith(
        "empty_type.xml: the feed holds no interval readings that can be imported"
    )
    assert (
        "ignored usage point 01: its ReadingType has no uom (unit of measure), which bpsync cannot convert (ReadingType/07) (2 interval readings)"
        in message
    )
    assert (
        "ignored 2 usage point 01: interval readings whose start is not a whole number (e.g. '1721154384.66136')"
        in message
    )
