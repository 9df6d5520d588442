"""Green Button (NAESB ESPI) XML: usage points, meter readings, reading types (unit of measure and
power-of-ten multiplier), interval blocks and usage summaries (billing periods with cost).

The API takes dates, not times, so intervals are summed into daily, calendar-month or billing-
period readings by the *local* date they start on (greenbutton_time: a template's IANA zone, the
offset written on each reading, or the feed's LocalTimeParameters); a day with a DST change
therefore has 23 or 25 hourly intervals, and they all land on that day. An interval longer than
a day (a bill written as one interval) is kept whole, its boundaries snapped to local midnight.

Entries are tied together by their links (greenbutton_links), whatever order the feed writes
them in. Only what a grid meter records as consumption is read: a MeterReading of net or
received energy (flowDirection 4, 19) or of demand (W) is left out, and every interval reading
left out is counted in a note that says why.

The output is a `Table` whose columns are the fields of a reading, so the `green_button` template
maps it like any other source; `row` numbers count the derived readings (1, 2, …)."""

from __future__ import annotations

import calendar
import datetime as dt
import xml.etree.ElementTree as ET
import zoneinfo
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bpsync.ingest.cells.values import Header, parse_header
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Row, Table
from bpsync.ingest.readers.greenbutton_feed import (
    COST_SCALE,
    Feed,
    MeterReading,
    Point,
    Summary,
    label_of,
    left_out,
    read_feed,
)
from bpsync.ingest.readers.greenbutton_links import (
    child,
    entries,
    integer,
    local_name,
    parent_of,
    text,
)
from bpsync.ingest.readers.greenbutton_time import (
    LocalTime,
    day_seconds,
    describe_offset,
    dst_rule_datetime,
    parse_offset,
    period_days,
)

__all__ = ["COLUMNS", "Aggregate", "LocalTime", "dst_rule_datetime", "read_green_button"]

Aggregate = Literal["daily", "monthly", "billing"]

COLUMNS = (
    "Usage Point",
    "Service",
    "Start Date",
    "End Date",
    "Consumption",
    "Unit",
    "Cost",
    "Currency",
    "Estimated",
    "Intervals",
)
_ESTIMATED_QUALITY = {8, 9}  # estimated using a reference day / by linear interpolation
_LONGEST_DAY = 90_000  # 25 hours: an interval no longer than this belongs to the day it starts


@dataclass
class _Bucket:
    consumption: float = 0.0
    cost: float | None = None
    seconds: int = 0
    intervals: int = 0
    estimated: bool = False

    def add(self, value: float, cost: float | None, seconds: int, estimated: bool) -> None:
        self.consumption += value
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        self.seconds += seconds
        self.intervals += 1
        self.estimated = self.estimated or estimated


@dataclass
class _Series:
    """The intervals of one consumption MeterReading, by local day (and whole, when longer)."""

    point: Point
    reading: MeterReading
    unit: str
    currency: str | None
    days: dict[dt.date, _Bucket] = field(default_factory=dict)
    spans: list[tuple[dt.date, dt.date, _Bucket]] = field(default_factory=list)
    offsets: Counter[int] = field(default_factory=Counter)
    intervals: int = 0


@dataclass
class _Intervals:
    """Pass 2: the consumption series and an account of every interval reading."""

    series: dict[int, _Series] = field(default_factory=dict)  # by MeterReading entry order
    total: int = 0
    left_out: dict[str, int] = field(default_factory=dict)  # reason → interval readings
    dropped: Counter[str] = field(default_factory=Counter)  # bad start/duration/value
    inner_power: Counter[str] = field(default_factory=Counter)  # powerOfTenMultiplier in a reading
    bad_offsets: Counter[str] = field(default_factory=Counter)
    utc: int = 0  # readings read as UTC (no zone, offset or LocalTimeParameters)


def _read_intervals(path: Path, name: str, feed: Feed, zone: LocalTime | None) -> _Intervals:
    out = _Intervals()
    fixed: dict[int, LocalTime] = {}
    for _entry, bodies, links in entries(path, name):
        blocks = [b for b in bodies if local_name(b.tag) == "IntervalBlock"]
        if not blocks:
            continue
        owner = parent_of(links, feed.readings, "MeterReading")
        reading = owner.value if owner else None
        why = left_out(reading) if reading else "an IntervalBlock linked to no MeterReading"
        label = label_of(reading) if reading else "the feed"
        series = None
        if why is None and owner is not None and reading is not None and reading.point:
            rt = reading.reading_type
            assert rt is not None and rt.unit is not None
            series = out.series.setdefault(
                owner.node.order, _Series(reading.point, reading, rt.unit, rt.currency)
            )
        for block in blocks:
            for iv in block:
                if local_name(iv.tag) != "IntervalReading":
                    continue
                out.total += 1
                period = child(iv, "timePeriod")
                start, duration = integer(period, "start"), integer(period, "duration")
                value = integer(iv, "value")
                if series is None:  # every reading of a left-out MeterReading is counted there
                    key = f"{label}: {why}"
                    out.left_out[key] = out.left_out.get(key, 0) + 1
                bad = _bad_field(iv, period, start, duration, value)
                if bad is not None:
                    out.dropped[f"{label}: interval readings whose {bad}"] += 1
                    continue
                assert start is not None and duration is not None and value is not None
                if series is None:
                    continue
                inner = text(iv, "powerOfTenMultiplier")
                if inner is not None:
                    out.inner_power[inner] += 1
                clock = zone
                stated = text(period, "timezone")
                if clock is None and stated is not None:
                    offset = parse_offset(stated)
                    if offset is None:
                        out.bad_offsets[stated] += 1
                    else:
                        series.offsets[offset] += 1
                        clock = fixed.setdefault(offset, LocalTime(tz_offset=offset))
                if clock is None:
                    clock = series.point.clock
                if clock is None:
                    out.utc += 1
                    clock = _UTC
                _add(series, iv, clock, start, duration, value)
    return out


_UTC = LocalTime()
# 1900-01-01 .. 2200-01-01 UTC: instants a reading's date can be (and datetime can add offsets to)
_EPOCHS = range(-2_208_988_800, 7_258_118_400)
_LONGEST = 400 * 86400  # an interval longer than this is no reading period


def _bad_field(
    iv: ET.Element,
    period: ET.Element | None,
    start: int | None,
    duration: int | None,
    value: int | None,
) -> str | None:
    """What makes an IntervalReading unreadable (its start, duration or value), or None."""
    for what, number in (("start", start), ("duration", duration), ("value", value)):
        if number is None:  # the raw text only for the message
            raw = text(iv if what == "value" else period, what)
            return f"{what} is " + (
                "missing" if raw is None else f"not a whole number (e.g. {raw!r})"
            )
    if start not in _EPOCHS:
        return f"start is not between 1900 and 2200 (e.g. {start})"
    if not 0 < duration <= _LONGEST:  # type: ignore[operator]
        return f"duration is not between 1 second and 400 days (e.g. {duration})"
    return None


def _count(n: int) -> str:
    return f"{n} interval reading" + ("" if n == 1 else "s")


def _add(
    series: _Series, iv: ET.Element, clock: LocalTime, start: int, duration: int, value: int
) -> None:
    rt = series.reading.reading_type
    assert rt is not None
    cost_raw = integer(iv, "cost")
    cost = cost_raw / COST_SCALE if cost_raw is not None else None
    estimated = integer(child(iv, "ReadingQuality"), "quality") in _ESTIMATED_QUALITY
    amount = value * rt.scale
    series.intervals += 1
    if duration <= _LONGEST_DAY:  # the README's rule: an interval counts on the day it starts
        first = last = clock.local(start).date()
    else:
        first, last = period_days(clock, start, duration)
    if first == last:
        series.days.setdefault(first, _Bucket()).add(amount, cost, duration, estimated)
    else:
        bucket = _Bucket()
        bucket.add(amount, cost, duration, estimated)
        series.spans.append((first, last, bucket))


def _series_clock(series: _Series, zone: LocalTime | None) -> LocalTime:
    if zone is not None:
        return zone
    if series.offsets:
        return LocalTime(tz_offset=series.offsets.most_common(1)[0][0])
    return series.point.clock or _UTC


def _choose(found: _Intervals) -> tuple[list[_Series], list[str]]:
    """One consumption series per usage point and unit: two would put the same energy on the
    meter twice. The one with the most interval readings (the finest) is kept."""
    groups: dict[tuple[int, str], list[_Series]] = {}
    for _order, s in sorted(found.series.items()):
        groups.setdefault((s.point.key, s.unit), []).append(s)
    kept, notes = [], []
    for members in groups.values():
        best = max(members, key=lambda s: s.intervals)  # max keeps the first of equals
        kept.append(best)
        for s in members:
            if s is not best:
                notes.append(
                    f"ignored {label_of(s.reading)} ({s.intervals} interval readings): a second "
                    f"delivered {s.unit} reading of the usage point; meter reading "
                    f"{best.reading.label} ({best.intervals}) was imported, and both would count "
                    "the energy twice"
                )
    return kept, notes


def _time_notes(found: _Intervals, kept: list[_Series], feed: Feed) -> list[str]:
    notes = []
    offsets = sorted({o for s in kept for o in s.offsets})
    if offsets:
        notes.append(
            "local days from the UTC offset written on each interval reading ("
            + ", ".join(describe_offset(o) for o in offsets)
            + ")"
            + ("; it takes precedence over the feed's LocalTimeParameters" if feed.ltps else "")
        )
    if found.utc:
        notes.append("the feed has no LocalTimeParameters: interval times were read as UTC")
    for raw, n in sorted(found.bad_offsets.items()):
        notes.append(
            f"{n} interval readings state the time zone {raw!r}, not a UTC offset: ignored"
        )
    if found.inner_power:
        values = ", ".join(sorted(found.inner_power))
        notes.append(
            f"ignored the powerOfTenMultiplier ({values}) written inside "
            f"{sum(found.inner_power.values())} IntervalReadings, where ESPI has none: values "
            "are scaled by their ReadingType's powerOfTenMultiplier"
        )
    return notes


def read_green_button(
    path: str | Path,
    *,
    aggregate: Aggregate = "billing",
    timezone: str | None = None,
    display_name: str | None = None,
) -> Table:
    """Parse an ESPI feed and aggregate its intervals (see the module docstring).

    `aggregate`: "daily" (one reading per local day), "monthly" (per calendar month), or
    "billing" (per UsageSummary billing period, with the bill's cost; calendar months when the
    feed has no summaries). Periods the intervals do not fully cover are trimmed to the covered
    days and reported as warnings."""
    path = Path(path)
    name = display_name or path.name
    zone = None
    if timezone:
        try:
            zone = LocalTime(zone=zoneinfo.ZoneInfo(timezone))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise IngestError(f"unknown time zone {timezone!r}", where=Where(name)) from None
    feed = read_feed(path, name)
    found = _read_intervals(path, name, feed, zone)
    kept, chosen = _choose(found)
    notes = _time_notes(found, kept, feed)
    why = [f"ignored {reason} ({_count(n)})" for reason, n in found.left_out.items()]
    why += chosen
    why += [f"ignored {n} {what}" for what, n in sorted(found.dropped.items())]
    notes += why

    readings: list[_Reading] = []
    for s in kept:
        clock = _series_clock(s, zone)
        if aggregate == "daily":
            for day in sorted(s.days):
                b = s.days[day]
                readings.append(_Reading(s, day, day, b, b.seconds >= day_seconds(clock, day)))
        elif s.days:
            periods = _billing_periods(s.point.summaries, clock) if aggregate == "billing" else []
            if aggregate == "billing" and not periods:
                empty = f" (its {s.point.empty_summaries} UsageSummary entry is empty)"
                notes.append(
                    f"usage point {s.point.label} has no billing summaries"
                    + (empty if s.point.empty_summaries else "")
                    + ": aggregated by calendar month"
                )
            readings.extend(_group(s, periods, clock))
        if s.spans:
            notes.append(
                f"{len(s.spans)} interval readings of {label_of(s.reading)} cover more than a day "
                "each (bills): each is one reading, its boundaries snapped to local midnight"
            )
        readings += [_Reading(s, first, last, b, True) for first, last, b in s.spans]
    differ: dict[int, float] = {}
    if aggregate == "billing":
        differ = _apply_summaries(readings, zone)
    readings.sort(key=lambda r: (r.series.point.key, r.series.unit, r.first))
    rows, problems = _rows(readings, differ, name)
    used = sum(s.intervals for s in kept)
    if not rows:
        raise IngestError(
            "the feed holds no interval readings that can be imported"
            + (": " + "; ".join(why) if why else " (it has no IntervalBlock entries)"),
            where=Where(name),
        )
    notes.append(  # the wording before issue 27; the account of ignored readings when any are
        f"{len(rows)} {aggregate} readings from {len(kept)} usage point series"
        + (
            f" ({used} of the feed's {found.total} interval readings; {found.total - used} "
            "ignored, as said above)"
            if found.total > used
            else ""
        )
    )
    headers = [parse_header(c, i) for i, c in enumerate(COLUMNS)]
    return Table(
        file=name,
        kind="greenbutton",
        headers=[Header(h.text, h.key, None, None, h.index, h.text) for h in headers],
        header_row=0,
        _rows=lambda: iter(rows),
        notes=notes,
        problems=problems,
    )


@dataclass
class _Reading:
    series: _Series
    first: dt.date
    last: dt.date
    bucket: _Bucket
    complete: bool


def _rows(
    readings: list[_Reading], differ: dict[int, float], name: str
) -> tuple[list[Row], list[Problem]]:
    rows: list[Row] = []
    problems: list[Problem] = []
    for number, r in enumerate(readings, start=1):
        s, b, first, last = r.series, r.bucket, r.first, r.last
        title = s.point.title or f"UsagePoint {s.point.label}"
        currency = s.currency or next((x.currency for x in s.point.summaries if x.currency), None)
        rows.append(
            Row(
                number,
                (
                    title,
                    s.point.service or "",
                    first,
                    last,
                    round(b.consumption, 6),
                    s.unit,
                    None if b.cost is None else round(b.cost, 2),
                    currency or "",
                    "Y" if b.estimated else "N",
                    b.intervals,
                ),
            )
        )
        billed = differ.get(id(r))
        if billed is not None:
            share = (billed - b.consumption) / b.consumption * 100 if b.consumption else None
            problems.append(
                Problem(
                    "summary_mismatch",
                    f"the bill (UsageSummary) for {first}..{last} states {billed:g} {s.unit} but "
                    f"its intervals sum to {b.consumption:g} {s.unit}"
                    + (f" ({share:+.1f} %)" if share is not None else "")
                    + "; the intervals' sum was imported",
                    Where(name, row=number, column="Consumption"),
                    severity="warning",
                    meter=title,
                    value=f"{b.consumption:g}",
                )
            )
        if not r.complete:
            problems.append(
                Problem(
                    "incomplete_period",
                    f"the intervals cover only part of {first}..{last}; the reading was trimmed "
                    "to the days with data",
                    Where(name, row=number),
                    severity="warning",
                    meter=title,
                )
            )
    return rows, problems


def _billing_periods(summaries: list[Summary], clock: LocalTime) -> list[tuple[dt.date, dt.date]]:
    return sorted({period_days(clock, s.start, s.duration) for s in summaries})


def _group(s: _Series, periods: list[tuple[dt.date, dt.date]], clock: LocalTime) -> list[_Reading]:
    """Sum days into billing periods (or calendar months), trimmed to the days that have data."""
    groups: dict[tuple[dt.date, dt.date], list[dt.date]] = {}
    for day in sorted(s.days):
        period = next((p for p in periods if p[0] <= day <= p[1]), None)
        if period is None:
            first = day.replace(day=1)
            period = (first, first.replace(day=calendar.monthrange(day.year, day.month)[1]))
        groups.setdefault(period, []).append(day)
    out = []
    for (first, last), members in sorted(groups.items()):
        total = _Bucket()
        for day in members:
            b = s.days[day]
            total.consumption += b.consumption
            if b.cost is not None:
                total.cost = (total.cost or 0.0) + b.cost
            total.seconds += b.seconds
            total.intervals += b.intervals
            total.estimated = total.estimated or b.estimated
        expected = sum(
            day_seconds(clock, first + dt.timedelta(days=i)) for i in range((last - first).days + 1)
        )
        complete = total.seconds >= expected
        if not complete:
            first, last = members[0], members[-1]
        out.append(_Reading(s, first, last, total, complete))
    return out


# Summary and intervals agree when they differ by no more than this share of the larger figure.
SUMMARY_TOLERANCE = 0.005


def _apply_summaries(readings: list[_Reading], zone: LocalTime | None) -> dict[int, float]:
    """The intervals are the measurement; a bill covering exactly a derived period gives its cost
    and is a cross-check of the usage. Returns, per reading (by id), the bill's usage where it
    differs from the intervals' sum by more than SUMMARY_TOLERANCE."""
    differ: dict[int, float] = {}
    for r in readings:
        clock = _series_clock(r.series, zone)
        bucket = r.bucket
        for s in r.series.point.summaries:
            if period_days(clock, s.start, s.duration) != (r.first, r.last):
                continue
            if s.consumption is not None and s.unit == r.series.unit:
                larger = max(abs(s.consumption), abs(bucket.consumption))
                if abs(s.consumption - bucket.consumption) > SUMMARY_TOLERANCE * larger:
                    differ[id(r)] = s.consumption
            if s.cost is not None:
                bucket.cost = s.cost
    return differ
