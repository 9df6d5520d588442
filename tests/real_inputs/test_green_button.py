"""The five real Green Button (ESPI) feeds of ../shared/real-inputs (issue 27 item 8), imported with
the plain documented command (`bpsync import FILE --meter METER`, shipped templates only) into a
meter registered in the feed's unit, and the stored readings read back.

What each file should store is derived here, independently of bpsync, from the XML itself with
xml.etree: entries tied together by their links as ESPI writes them (a MeterReading's `related`
href is its ReadingType's `self`; an IntervalBlock's `up` is one of its MeterReading's `related`
links, or the MeterReading's `related` names the block's `self`), values x 10^powerOfTenMultiplier
of the linked ReadingType in its uom (72 = Wh), and local days from the feed's
LocalTimeParameters (decoded per NAESB REQ.21 and cross-checked with the IANA zone they describe)
or from the offset written on every reading (see set1/set2 PROVENANCE.md and the README there)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import xml.etree.ElementTree as ET
import zoneinfo
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import pytest

from tests.real_inputs.conftest import Org, daily_sums, period_sums

ATOM = "{http://www.w3.org/2005/Atom}"
UTC = dt.UTC


# ---- an independent reading of an ESPI feed --------------------------------------------------


@dataclass
class Entry:
    links: dict[str, list[str]]  # rel → hrefs, resolved against the feed's own self link
    bodies: list[ET.Element]  # the ESPI elements inside <content>

    def one(self, rel: str) -> str:
        return (self.links.get(rel) or [""])[0]

    def kind(self) -> str:
        return self.bodies[0].tag.split("}")[-1] if self.bodies else ""


def espi(path: Path) -> list[Entry]:
    root = ET.parse(path).getroot()
    feed_self = next(
        (x.get("href", "") for x in root.findall(f"{ATOM}link") if x.get("rel") == "self"), ""
    )
    out = []
    for entry in root.findall(f"{ATOM}entry"):
        links: dict[str, list[str]] = {}
        for link in entry.findall(f"{ATOM}link"):
            links.setdefault(link.get("rel", ""), []).append(
                urljoin(feed_self, link.get("href", ""))
            )
        content = entry.find(f"{ATOM}content")
        bodies = [c for c in (content if content is not None else []) if not c.tag.startswith(ATOM)]
        out.append(Entry(links, bodies))
    return out


def field(el: ET.Element, *path: str) -> str | None:
    for name in path:
        el = next((c for c in el if c.tag.split("}")[-1] == name), None)  # type: ignore[assignment]
        if el is None:
            return None
    return (el.text or "").strip()


def reading_type(entries: list[Entry], meter_reading: Entry) -> ET.Element:
    [rt] = [
        e.bodies[0]
        for e in entries
        if e.kind() == "ReadingType" and e.one("self") in meter_reading.links["related"]
    ]
    return rt


def interval_readings(entries: list[Entry], meter_reading: Entry) -> list[ET.Element]:
    out = []
    for e in entries:
        if e.kind() != "IntervalBlock":
            continue
        if (
            e.one("up") in meter_reading.links["related"]
            or e.one("self") in meter_reading.links["related"]
        ):
            out += [iv for block in e.bodies for iv in block if iv.tag.endswith("IntervalReading")]
    return out


def scaled(rt: ET.Element) -> tuple[float, str]:
    """value → quantity in the unit the meter is registered in (Wh stays Wh; therms)."""
    return 10.0 ** int(field(rt, "powerOfTenMultiplier") or 0), {"72": "Wh", "169": "therms"}[
        field(rt, "uom") or ""
    ]


def rule_datetime(rule: str, year: int) -> dt.datetime:
    """NAESB REQ.21 DST rule: month bits 28-31, operator 25-27 (2.. = n-1th occurrence), weekday
    17-19 (7 = Sunday), hour 12-16."""
    r = int(rule, 16)
    month, op, weekday, hour = r >> 28, (r >> 25) & 7, (r >> 17) & 7, (r >> 12) & 31
    first = dt.date(year, month, 1)
    day = first + dt.timedelta(days=(weekday - 1 - first.weekday()) % 7 + 7 * (op - 2))
    return dt.datetime.combine(day, dt.time(hour))


def assert_ltp_is(entries: list[Entry], zone: str, years: range) -> zoneinfo.ZoneInfo:
    """The feed's LocalTimeParameters describe `zone` in these years: same standard offset, and
    the DST rules name the days the zone changes on."""
    [ltp] = [e.bodies[0] for e in entries if e.kind() == "LocalTimeParameters"]
    tz = zoneinfo.ZoneInfo(zone)
    for year in years:
        jan = dt.datetime(year, 1, 15, tzinfo=tz).utcoffset()
        assert jan == dt.timedelta(seconds=int(field(ltp, "tzOffset") or 0))
        for rule, std in (("dstStartRule", True), ("dstEndRule", False)):
            at = rule_datetime(field(ltp, rule) or "", year)
            before = (at - dt.timedelta(hours=1)).replace(tzinfo=tz).utcoffset()
            after = (at + dt.timedelta(hours=2)).replace(tzinfo=tz).utcoffset()
            assert (before == jan) is std and (after == jan) is not std
    return tz


def tiles(stored: list[tuple], days: dict[dt.date, float], *, tol: float = 1e-6) -> None:
    """The stored readings cover the expected days exactly once, back to back, and each equals
    the sum of its days (the README: days, months or bills may be stored)."""
    assert stored[0][0] == min(days) and stored[-1][1] == max(days)
    for (_, end, *_), (start, *_) in itertools.pairwise(stored):
        assert start == end + dt.timedelta(days=1)
    for start, end, value, expected in period_sums(stored, days):
        assert value == pytest.approx(expected, abs=tol), (start, end)


def dry_run(org: Org, path: Path, meter: str) -> dict:
    body = org.import_json(str(path), "--meter", meter, "--dry-run")
    assert body["status"] == "dry-run" and body["rejected"] == 0
    return body


def nothing_ignored(body: dict) -> bool:
    """Every interval reading of the feed was summed: the reader names each one it leaves out."""
    return not [n for n in body["notes"] if n.startswith("ignored")]


# ---- the five feeds -------------------------------------------------------------------------


def test_national_grid_gas_bills_across_dst(org: Org):
    """35 bill-length intervals written as UTC midnights of the local bill dates, with durations
    that count the DST hour (30 days + 1 h across November, 32 days - 1 h across March): the
    issue had only 29 of 35 stored, each fall bill overlapping the next."""
    path = org.copy(
        "set1/ngma_natural_gas_billing_billing_data_Service_1_1_2021-05-26_to_2024-04-25.xml"
    )
    entries = espi(path)
    [mr] = [e for e in entries if e.kind() == "MeterReading"]
    factor, unit = scaled(reading_type(entries, mr))
    expected = []
    for iv in interval_readings(entries, mr):
        start = dt.datetime.fromtimestamp(int(field(iv, "timePeriod", "start") or 0), UTC)
        seconds = int(field(iv, "timePeriod", "duration") or 0)
        assert start.time() == dt.time() and abs(seconds - round(seconds / 86400) * 86400) <= 3600
        last = start.date() + dt.timedelta(days=round(seconds / 86400) - 1)
        cost = int(field(iv, "cost") or 0) / 100_000  # ESPI: hundred-thousandths of a dollar
        expected.append((start.date(), last, int(field(iv, "value") or 0) * factor, cost))
    assert unit == "therms" and len(expected) == 35
    assert (expected[0][0], expected[-1][1]) == (
        dt.date(2021, 5, 26),
        dt.date(2024, 4, 25),
    )  # the file's name
    for a, b in itertools.pairwise(expected):
        assert b[0] == a[1] + dt.timedelta(days=1)  # bills back to back
    meter = org.meter("natural_gas", "therms", "Gas")
    body = dry_run(org, path, meter)
    assert body["notes"][-1] == "35 billing readings from 1 usage point series" and nothing_ignored(
        body
    )
    summary = org.import_json(str(path), "--meter", meter)
    assert (summary["accepted"], summary["rejected"]) == (35, 0)
    stored = org.stored(meter)
    assert [(s, e, c) for s, e, c, _ in stored] == [
        (s, e, pytest.approx(c)) for s, e, c, _ in expected
    ]
    assert [cost for *_, cost in stored] == [pytest.approx(cost) for *_, cost in expected]


def test_gas_provider_feed_without_unit_or_dates_is_refused_saying_why(org: Org):
    """The MeterReading links `ReadingType/07` by a relative href (found now), but that ReadingType
    is empty (no uom) and all 36 readings start at the same fractional instant (the feed's own
    creation time): no reading has a period or a unit, so nothing can be stored, and the error
    names both reasons."""
    path = org.copy("set1/ngma_gas_provider_2024-07-16.xml")
    entries = espi(path)
    [mr] = [e for e in entries if e.kind() == "MeterReading"]
    rt = reading_type(entries, mr)
    assert field(rt, "uom") is None
    starts = Counter(field(iv, "timePeriod", "start") for iv in interval_readings(entries, mr))
    assert starts == Counter({"1721154384.66136": 36})
    meter = org.meter("natural_gas", "therms", "Gas")
    result = org.bpsync("--json", "import", str(path), "--meter", meter)
    assert result.exit_code == 6, result.output
    message = json.loads(result.stderr.splitlines()[-1])["error"]["message"]
    assert (
        "its ReadingType has no uom (unit of measure), which bpsync cannot convert (ReadingType/07) (36 interval readings)"
        in message
    )
    assert (
        "36 usage point 01: interval readings whose start is not a whole number (e.g. '1721154384.66136')"
        in message
    )
    assert org.stored(meter) == []


def test_coastal_multi_family_hourly_year(org: Org):
    """Green Button Alliance sample: 8760 hourly Wh readings of 2011 with LocalTimeParameters for
    US Pacific (13 March: 23 hours, 6 November: 25 hours) and one UsageSummary for November whose
    usage (768032 Wh) is not November's intervals' sum: the intervals are stored, with a warning."""
    path = org.copy("set1/Coastal_Multi_Family_Jan_1_2011_to_Jan_1_2012_RetailCustomer_5.xml")
    entries = espi(path)
    tz = assert_ltp_is(entries, "America/Los_Angeles", range(2011, 2012))
    [mr] = [e for e in entries if e.kind() == "MeterReading"]
    factor, unit = scaled(reading_type(entries, mr))
    readings = interval_readings(entries, mr)
    local = [
        (
            dt.datetime.fromtimestamp(int(field(iv, "timePeriod", "start") or 0), tz).date(),
            int(field(iv, "value") or 0) * factor,
        )
        for iv in readings
    ]
    days = daily_sums(iter(local))
    hours = Counter(d for d, _ in local)
    assert unit == "Wh" and len(readings) == 8760 and len(days) == 365
    assert (hours[dt.date(2011, 3, 13)], hours[dt.date(2011, 11, 6)]) == (23, 25)
    assert set(hours.values()) == {23, 24, 25}
    meter = org.meter("electricity", "Wh", "Coastal Multi-Family")
    body = dry_run(org, path, meter)
    assert body["notes"][-1] == "12 billing readings from 1 usage point series" and nothing_ignored(
        body
    )
    [warning] = [p for p in body["problems"] if p["code"] == "summary_mismatch"]
    november = sum(v for d, v in days.items() if d.month == 11) / 1000
    assert (
        f"2011-11-01..2011-11-30 states 768.032 kWh but its intervals sum to {november:g} kWh"
        in warning["reason"]
    )
    summary = org.import_json(str(path), "--meter", meter)
    assert (summary["accepted"], summary["rejected"]) == (12, 0)
    stored = org.stored(meter)
    tiles(stored, days)
    assert [(s.month, e.month) for s, e, *_ in stored] == [(m, m) for m in range(1, 13)]


def test_utilityapi_ontario_hourly_newest_first_with_offsets(org: Org):
    """300 hourly Wh readings written newest first, a relative ReadingType href, two ReadingTypes
    (the MeterReading links the Wh one), no LocalTimeParameters but `<timezone>-0500</timezone>` in
    every timePeriod; 22 February (11 h) and 7 March (1 h) only partly covered."""
    path = org.copy("set2/intervals_APUC000000_electric.xml")
    entries = espi(path)
    [mr] = [e for e in entries if e.kind() == "MeterReading"]
    factor, unit = scaled(reading_type(entries, mr))
    readings = interval_readings(entries, mr)
    local = []
    for iv in readings:
        stated = field(iv, "timePeriod", "timezone") or ""
        offset = dt.timedelta(hours=int(stated[:3]), minutes=int(stated[0] + stated[3:]))
        start = dt.datetime.fromtimestamp(
            int(field(iv, "timePeriod", "start") or 0), dt.timezone(offset)
        )
        local.append((start.date(), int(field(iv, "value") or 0) * factor))
    starts = [int(field(iv, "timePeriod", "start") or 0) for iv in readings]
    assert starts == sorted(starts, reverse=True) and len(readings) == 300  # newest first
    days = daily_sums(iter(local))
    hours = Counter(d for d, _ in local)
    assert unit == "Wh" and (hours[dt.date(2023, 2, 22)], hours[dt.date(2023, 3, 7)]) == (11, 1)
    meter = org.meter("electricity", "Wh", "Ontario")
    body = dry_run(org, path, meter)
    assert (
        "local days from the UTC offset written on each interval reading (UTC-05:00)"
        in body["notes"]
    )
    assert body["notes"][-1] == "2 billing readings from 1 usage point series" and nothing_ignored(
        body
    )
    summary = org.import_json(str(path), "--meter", meter)
    assert summary["rejected"] == 0
    stored = org.stored(meter)
    tiles(stored, days)
    assert sum(c for _, _, c, _ in stored) == pytest.approx(sum(days.values()))


def test_united_power_four_meter_readings_only_delivered_is_stored(org: Org):
    """One usage point, four MeterReadings: delivered (flowDirection 1), net (4), received (19),
    demand in W (uom 38). A powerOfTenMultiplier of 3 inside each IntervalReading is not ESPI:
    the ReadingType's x10^0 governs (49600 Wh = 49.6 kWh, as the account's CSV says). Daily
    intervals at local (Mountain) midnight; an empty usage summary."""
    path = org.copy("set2/green_button_data_1761076466385.xml")
    entries = espi(path)
    tz = assert_ltp_is(entries, "America/Denver", range(2025, 2026))
    readings = [e for e in entries if e.kind() == "MeterReading"]
    kinds = {}
    for mr in readings:
        rt = reading_type(entries, mr)
        kinds[mr.one("self").rsplit("/", 1)[-1]] = (
            field(rt, "flowDirection"),
            field(rt, "uom"),
            len(interval_readings(entries, mr)),
        )
    assert kinds == {
        "01": ("1", "72", 2),
        "02": ("4", "72", 2),
        "03": ("19", "72", 2),
        "04": ("1", "38", 1),
    }
    [delivered] = [mr for mr in readings if mr.one("self").endswith("/01")]
    factor, unit = scaled(reading_type(entries, delivered))
    assert unit == "Wh"
    local = [
        (
            dt.datetime.fromtimestamp(int(field(iv, "timePeriod", "start") or 0), tz).date(),
            int(field(iv, "value") or 0) * factor / 1000,
        )
        for iv in interval_readings(entries, delivered)
    ]
    assert local == [(dt.date(2025, 10, 19), 49.6), (dt.date(2025, 10, 20), 23.03)]
    meter = org.meter("electricity", "kWh", "United Power")
    body = dry_run(org, path, meter)
    notes = body["notes"]
    assert (
        "ignored usage point 0, meter reading 02: flowDirection 4 (net: delivered minus received), not consumption (2 interval readings)"
        in notes
    )
    assert (
        "ignored usage point 0, meter reading 03: flowDirection 19 (received: energy the site sent to the grid), not consumption (2 interval readings)"
        in notes
    )
    assert (
        "ignored usage point 0, meter reading 04: demand in W (uom 38, ReadingType/04), not consumption (1 interval reading)"
        in notes
    )
    assert any(
        n.startswith("ignored the powerOfTenMultiplier (3) written inside 2 IntervalReadings")
        for n in notes
    )
    assert (
        notes[-1]
        == "1 billing readings from 1 usage point series (2 of the feed's 7 interval readings; "
        "5 ignored, as said above)"
    )
    printed = org.bpsync("import", str(path), "--meter", meter, "--dry-run")
    assert printed.exit_code == 0, printed.output
    said = " ".join(printed.stdout.split())  # the console wraps long notes
    for reading in ("02: flowDirection 4", "03: flowDirection 19", "04: demand in W"):
        assert f"note: ignored usage point 0, meter reading {reading}" in said
    summary = org.import_json(str(path), "--meter", meter)
    assert summary["rejected"] == 0
    tiles(org.stored(meter), daily_sums(iter(local)))
