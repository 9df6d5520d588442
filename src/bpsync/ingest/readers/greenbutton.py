"""Green Button (NAESB ESPI) XML: usage points, meter readings, reading types (unit of measure and
power-of-ten multiplier), interval blocks and usage summaries (billing periods with cost).

The API takes dates, not times, so intervals are summed into daily, calendar-month or billing-
period readings by their *local* date. Local time comes from the feed's LocalTimeParameters
(standard offset, DST offset and the ESPI DST rules), or from an IANA zone given by the caller;
a day with a DST change therefore has 23 or 25 hourly intervals, and they all land on that day.

The output is a `Table` whose columns are the fields of a reading, so the `green_button` template
maps it like any other source; `row` numbers count the derived readings (1, 2, …)."""

from __future__ import annotations

import calendar
import datetime as dt
import re
import xml.etree.ElementTree as ET
import zoneinfo
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bpsync.ingest.cells.values import Header, parse_header
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Row, Table

Aggregate = Literal["daily", "monthly", "billing"]

ATOM = "{http://www.w3.org/2005/Atom}"
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
# ESPI uom codes (IEC 61968-9) → (unit, factor from the base unit into it).
_UOM = {
    72: ("kWh", 1e-3),  # Wh
    169: ("therms", 1.0),
    42: ("m3", 1.0),
    119: ("cf", 1.0),
    128: ("gallons", 1.0),
    130: ("gallons_uk", 1.0),
    134: ("litres", 1.0),
    31: ("MJ", 1e-6),  # J
    132: ("kBtu", 1e-3),  # BTU
}
_SERVICE = {0: "electricity", 1: "natural_gas", 2: "water", 4: "district_heating"}
_CURRENCY = {840: "USD", 124: "CAD", 978: "EUR", 826: "GBP", 36: "AUD", 554: "NZD", 756: "CHF"}
_ESTIMATED_QUALITY = {8, 9}  # estimated using a reference day / by linear interpolation
_COST_SCALE = 100_000  # ESPI costs are in hundred-thousandths of the currency unit
_UP = re.compile(r"/UsagePoint/([^/]+)")
_MR = re.compile(r"/MeterReading/([^/]+)")
_RT = re.compile(r"/ReadingType/([^/]+)")
_LTP = re.compile(r"/LocalTimeParameters/([^/]+)")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(el: ET.Element, name: str) -> ET.Element | None:
    for c in el:
        if _local(c.tag) == name:
            return c
    return None


def _text(el: ET.Element | None, name: str) -> str | None:
    if el is None:
        return None
    c = _child(el, name)
    return c.text.strip() if c is not None and c.text else None


def _int(el: ET.Element | None, name: str, default: int | None = None) -> int | None:
    text = _text(el, name)
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


# ---- local time ---------------------------------------------------------------------------------


def dst_rule_datetime(rule: int, year: int) -> dt.datetime | None:
    """The local date-time an ESPI DST rule names in `year`. Bits 0-11 seconds, 12-16 hours,
    17-19 day of week (1 = Monday), 20-24 day of month, 25-27 operator, 28-31 month."""
    if rule == 0xFFFFFFFF or rule == 0:
        return None
    seconds = rule & 0xFFF
    hours = (rule >> 12) & 0x1F
    weekday = (rule >> 17) & 0x7  # 1..7, Monday = 1
    day = (rule >> 20) & 0x1F
    operator = (rule >> 25) & 0x7
    month = (rule >> 28) & 0xF
    if not 1 <= month <= 12:
        return None
    last = calendar.monthrange(year, month)[1]
    target = (weekday - 1) % 7  # Python: Monday = 0
    if operator == 0:
        date = dt.date(year, month, min(max(day, 1), last))
    elif operator == 1:  # that weekday on or after the day of month
        date = dt.date(year, month, min(max(day, 1), last))
        date += dt.timedelta(days=(target - date.weekday()) % 7)
    elif operator == 7:  # last such weekday of the month
        date = dt.date(year, month, last)
        date -= dt.timedelta(days=(date.weekday() - target) % 7)
    else:  # 2..6: first..fifth occurrence
        first = dt.date(year, month, 1)
        date = first + dt.timedelta(days=(target - first.weekday()) % 7 + 7 * (operator - 2))
    return dt.datetime.combine(date, dt.time()) + dt.timedelta(hours=hours, seconds=seconds)


@dataclass
class LocalTime:
    """UTC instant → local date, from ESPI LocalTimeParameters or an IANA zone."""

    tz_offset: int = 0
    dst_offset: int = 0
    dst_start: int = 0xFFFFFFFF
    dst_end: int = 0xFFFFFFFF
    zone: zoneinfo.ZoneInfo | None = None
    _years: dict[int, tuple[dt.datetime, dt.datetime] | None] = field(default_factory=dict)

    def _window(self, year: int) -> tuple[dt.datetime, dt.datetime] | None:
        if year not in self._years:
            start = dst_rule_datetime(self.dst_start, year)
            end = dst_rule_datetime(self.dst_end, year)
            if start is None or end is None or not self.dst_offset:
                self._years[year] = None
            else:  # the end rule is written in daylight time; compare in standard time
                self._years[year] = (start, end - dt.timedelta(seconds=self.dst_offset))
        return self._years[year]

    def local(self, epoch: int) -> dt.datetime:
        if self.zone is not None:
            utc = dt.datetime.fromtimestamp(epoch, dt.UTC)
            return utc.astimezone(self.zone).replace(tzinfo=None)
        standard = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=epoch + self.tz_offset)
        window = self._window(standard.year)
        if window is not None:
            start, end = window
            in_dst = (
                start <= standard < end if start < end else (standard >= start or standard < end)
            )
            if in_dst:
                return standard + dt.timedelta(seconds=self.dst_offset)
        return standard


# ---- parsing ------------------------------------------------------------------------------------


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
class _Point:
    key: str
    title: str | None = None
    service: str | None = None
    ltp: str | None = None


@dataclass
class _ReadingType:
    unit: str | None
    scale: float
    currency: str | None
    uom: int | None
    flow: int | None


@dataclass
class _Summary:
    start: int
    duration: int
    consumption: float | None
    unit: str | None
    cost: float | None
    currency: str | None


def _links(entry: ET.Element) -> dict[str, list[str]]:
    links: dict[str, list[str]] = {}
    for link in entry.iter(f"{ATOM}link"):
        links.setdefault(link.get("rel", ""), []).append(link.get("href", ""))
    return links


def _entries(path: Path, name: str) -> Iterator[tuple[ET.Element, ET.Element | None]]:
    """(entry, its content's single child) for every Atom entry, streaming."""
    try:
        for _event, el in ET.iterparse(path, events=("end",)):
            if el.tag == f"{ATOM}entry":
                content = el.find(f"{ATOM}content")
                body = next(iter(content), None) if content is not None else None
                yield el, body
                el.clear()
    except ET.ParseError as exc:
        raise IngestError(f"not well-formed XML ({exc})", where=Where(name)) from None


def _reading_type(body: ET.Element) -> _ReadingType:
    uom = _int(body, "uom")
    power = _int(body, "powerOfTenMultiplier", 0) or 0
    unit, factor = _UOM.get(uom or -1, (None, 1.0))
    currency = _CURRENCY.get(_int(body, "currency", -1) or -1)
    return _ReadingType(unit, factor * 10.0**power, currency, uom, _int(body, "flowDirection"))


def _summary(body: ET.Element) -> _Summary | None:
    period = _child(body, "billingPeriod")
    start, duration = _int(period, "start"), _int(period, "duration")
    if start is None or not duration:
        return None
    consumption = unit = None
    overall = _child(body, "overallConsumptionLastPeriod")
    value = _int(overall, "value")
    if overall is not None and value is not None:
        u, factor = _UOM.get(_int(overall, "uom", -1) or -1, (None, 1.0))
        power = _int(overall, "powerOfTenMultiplier", 0) or 0
        if u is not None:
            consumption, unit = value * factor * 10.0**power, u
    bill = _int(body, "billLastPeriod")
    cost = bill / _COST_SCALE if bill is not None else None
    currency = _CURRENCY.get(_int(body, "currency", -1) or -1)
    return _Summary(start, duration, consumption, unit, cost, currency)


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
            zone = zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise IngestError(f"unknown time zone {timezone!r}", where=Where(name)) from None

    # Pass 1: metadata (small). Interval blocks are skipped and read in pass 2.
    points: dict[str, _Point] = {}
    ltps: dict[str, LocalTime] = {}
    reading_types: dict[str, _ReadingType] = {}
    mr_type: dict[tuple[str, str], str] = {}
    summaries: dict[str, list[_Summary]] = {}
    found_feed = False
    for entry, body in _entries(path, name):
        found_feed = True
        if body is None:
            continue
        kind = _local(body.tag)
        links = _links(entry)
        hrefs = links.get("self", []) + links.get("up", [])
        self_href = (links.get("self") or [""])[0]
        if kind == "UsagePoint":
            m = _UP.search(self_href)
            key = m.group(1) if m else str(len(points) + 1)
            service = _SERVICE.get(_int(_child(body, "ServiceCategory"), "kind", -1) or -1)
            ltp = next(
                (_LTP.search(h).group(1) for h in links.get("related", []) if _LTP.search(h)), None
            )  # type: ignore[union-attr]
            points[key] = _Point(key, entry.findtext(f"{ATOM}title") or None, service, ltp)
        elif kind == "LocalTimeParameters":
            m = _LTP.search(self_href)
            ltps[m.group(1) if m else str(len(ltps) + 1)] = LocalTime(
                tz_offset=_int(body, "tzOffset", 0) or 0,
                dst_offset=_int(body, "dstOffset", 0) or 0,
                dst_start=int(_text(body, "dstStartRule") or "FFFFFFFF", 16),
                dst_end=int(_text(body, "dstEndRule") or "FFFFFFFF", 16),
            )
        elif kind == "ReadingType":
            m = _RT.search(self_href)
            if m:
                reading_types[m.group(1)] = _reading_type(body)
        elif kind == "MeterReading":
            up, mr = _UP.search(self_href), _MR.search(self_href)
            rt = next((_RT.search(h) for h in links.get("related", []) if _RT.search(h)), None)
            if up and mr and rt:
                mr_type[(up.group(1), mr.group(1))] = rt.group(1)
        elif kind in ("UsageSummary", "ElectricPowerUsageSummary"):
            up = next((m for m in (_UP.search(h) for h in hrefs) if m), None)
            summary = _summary(body)
            if up and summary:
                summaries.setdefault(up.group(1), []).append(summary)
    if not found_feed:
        raise IngestError("no Atom entries: this is not a Green Button file", where=Where(name))

    def clock_for(point: str) -> LocalTime:
        if zone is not None:
            return LocalTime(zone=zone)
        p = points.get(point)
        if p and p.ltp in ltps:
            return ltps[p.ltp]
        if len(ltps) == 1:
            return next(iter(ltps.values()))
        return LocalTime()

    notes: list[str] = []
    if zone is None and not ltps:
        notes.append("the feed has no LocalTimeParameters: interval times were read as UTC")

    # Pass 2: intervals, summed per local day.
    days: dict[tuple[str, str], dict[dt.date, _Bucket]] = {}
    spans: dict[tuple[str, str], list[tuple[dt.date, dt.date, _Bucket]]] = {}
    skipped: set[str] = set()
    dropped: Counter[str] = Counter()
    for entry, body in _entries(path, name):
        if body is None or _local(body.tag) != "IntervalBlock":
            continue
        hrefs = [h for hs in _links(entry).values() for h in hs]
        up = next((m.group(1) for m in (_UP.search(h) for h in hrefs) if m), None)
        mr = next((m.group(1) for m in (_MR.search(h) for h in hrefs) if m), None)
        if up is None or mr is None:
            continue
        rt = reading_types.get(mr_type.get((up, mr), ""))
        if rt is None:
            skipped.add(
                f"usage point {up}: meter reading {mr} links no ReadingType, so its unit is unknown"
            )
            continue
        if rt.unit is None:
            skipped.add(
                f"usage point {up}: its ReadingType has "
                + ("no uom (unit of measure)" if rt.uom is None else f"unit code {rt.uom}")
                + ", which bpsync cannot convert"
            )
            continue
        if rt.flow not in (None, 1):
            skipped.add(f"usage point {up}: flow direction {rt.flow} (not delivered energy)")
            continue
        clock = clock_for(up)
        unit_key = (up, rt.unit)
        per_day = days.setdefault(unit_key, {})
        for reading in body:
            if _local(reading.tag) != "IntervalReading":
                continue
            period = _child(reading, "timePeriod")
            start, duration, value = (
                _int(period, "start"),
                _int(period, "duration"),
                _int(reading, "value"),
            )
            if start is None or not duration or value is None:
                what = "start" if start is None else "duration" if not duration else "value"
                raw = _text(period, what) if what != "value" else _text(reading, "value")
                dropped[
                    f"usage point {up}: interval readings whose {what} is "
                    + ("missing" if raw is None else f"not a whole number (e.g. {raw!r})")
                ] += 1
                continue
            cost_raw = _int(reading, "cost")
            cost = cost_raw / _COST_SCALE if cost_raw is not None else None
            quality = _int(_child(reading, "ReadingQuality"), "quality")
            estimated = quality in _ESTIMATED_QUALITY
            first = clock.local(start).date()
            last = clock.local(start + duration - 1).date()
            amount = value * rt.scale
            if first == last:
                per_day.setdefault(first, _Bucket()).add(amount, cost, duration, estimated)
            else:
                bucket = _Bucket()
                bucket.add(amount, cost, duration, estimated)
                spans.setdefault(unit_key, []).append((first, last, bucket))
    notes.extend(f"ignored {s}" for s in sorted(skipped))
    notes.extend(f"ignored {n} {what}" for what, n in sorted(dropped.items()))

    readings: list[tuple[str, str, dt.date, dt.date, _Bucket, bool]] = []  # (+ complete?)
    problems: list[Problem] = []
    for (up, unit), per_day in sorted(days.items()):
        clock = clock_for(up)
        if aggregate == "daily":
            for day in sorted(per_day):
                b = per_day[day]
                readings.append((up, unit, day, day, b, b.seconds >= _day_seconds(clock, day)))
            continue
        periods = _billing_periods(summaries.get(up, []), clock) if aggregate == "billing" else []
        if aggregate == "billing" and not periods:
            notes.append(f"usage point {up} has no billing summaries: aggregated by calendar month")
        readings.extend(_group(up, unit, per_day, periods, clock))
    for (up, unit), items in spans.items():
        for first, last, b in items:
            readings.append((up, unit, first, last, b, True))
    differ: dict[tuple, float] = {}
    if aggregate == "billing":
        readings, differ = _apply_summaries(readings, summaries, clock_for)
    readings.sort(key=lambda r: (r[0], r[1], r[2]))

    headers = [parse_header(c, i) for i, c in enumerate(COLUMNS)]
    rows: list[Row] = []
    for number, (up, unit, first, last, b, complete) in enumerate(readings, start=1):
        point = points.get(up, _Point(up))
        title = point.title or f"UsagePoint {up}"
        currency = next((rt.currency for rt in reading_types.values() if rt.currency), None)
        currency = currency or next(
            (s.currency for ss in summaries.values() for s in ss if s.currency), None
        )
        rows.append(
            Row(
                number,
                (
                    title,
                    point.service or "",
                    first,
                    last,
                    round(b.consumption, 6),
                    unit,
                    None if b.cost is None else round(b.cost, 2),
                    currency or "",
                    "Y" if b.estimated else "N",
                    b.intervals,
                ),
            )
        )
        billed = differ.get((up, unit, first, last))
        if billed is not None:
            share = (billed - b.consumption) / b.consumption * 100 if b.consumption else None
            problems.append(
                Problem(
                    "summary_mismatch",
                    f"the bill (UsageSummary) for {first}..{last} states {billed:g} {unit} but its "
                    f"intervals sum to {b.consumption:g} {unit}"
                    + (f" ({share:+.1f} %)" if share is not None else "")
                    + "; the intervals' sum was imported",
                    Where(name, row=number, column="Consumption"),
                    severity="warning",
                    meter=title,
                    value=f"{b.consumption:g}",
                )
            )
        if not complete:
            problems.append(
                Problem(
                    "incomplete_period",
                    f"the intervals cover only part of {first}..{last}; the reading was trimmed to "
                    "the days with data",
                    Where(name, row=number),
                    severity="warning",
                    meter=title,
                )
            )
    if not rows:
        why = [f"ignored {s}" for s in sorted(skipped)]
        why += [f"ignored {n} {what}" for what, n in sorted(dropped.items())]
        raise IngestError(
            "the feed holds no interval readings that can be imported"
            + (": " + "; ".join(why) if why else " (it has no IntervalBlock entries)"),
            where=Where(name),
        )
    return Table(
        file=name,
        kind="greenbutton",
        headers=[Header(h.text, h.key, None, None, h.index, h.text) for h in headers],
        header_row=0,
        _rows=lambda: iter(rows),
        notes=[*notes, f"{len(rows)} {aggregate} readings from {len(days)} usage point series"],
        problems=problems,
    )


def _midnight_utc(clock: LocalTime, day: dt.date) -> int:
    """The UTC instant of `day`'s local midnight under ESPI rules (standard or daylight)."""
    base = (day - dt.date(1970, 1, 1)).days * 86400 - clock.tz_offset
    midnight = dt.datetime.combine(day, dt.time())
    for candidate in (base, base - clock.dst_offset):
        if clock.local(candidate) == midnight:
            return candidate
    return base


def _day_seconds(clock: LocalTime, day: dt.date) -> int:
    """Length of a local day in seconds (82,800 or 90,000 on a DST change)."""
    following = day + dt.timedelta(days=1)
    if clock.zone is not None:
        start = dt.datetime.combine(day, dt.time(), clock.zone).astimezone(dt.UTC)
        end = dt.datetime.combine(following, dt.time(), clock.zone).astimezone(dt.UTC)
        return int((end - start).total_seconds())
    return _midnight_utc(clock, following) - _midnight_utc(clock, day)


# A billing-period boundary this close to a local midnight is that midnight (issue 11 item 3):
# real feeds write bill boundaries in standard time all year, or in UTC, so a November bill can
# "end" at 01:00 on the next bill's first day. Boundaries further from midnight keep their date.
SNAP = dt.timedelta(hours=2)


def _snap(clock: LocalTime, epoch: int) -> dt.date | None:
    """The local date whose midnight lies within SNAP of the instant, if any."""
    local = clock.local(epoch)
    midnight = dt.datetime.combine(local.date(), dt.time())
    if local - midnight <= SNAP:
        return local.date()
    if midnight + dt.timedelta(days=1) - local <= SNAP:
        return local.date() + dt.timedelta(days=1)
    return None


def summary_period(s: _Summary, clock: LocalTime) -> tuple[dt.date, dt.date]:
    """A bill's first and last local calendar day, boundaries snapped to local midnight."""
    first = _snap(clock, s.start) or clock.local(s.start).date()
    end = _snap(clock, s.start + s.duration)
    last = end - dt.timedelta(days=1) if end else clock.local(s.start + s.duration - 1).date()
    return first, max(first, last)


def _billing_periods(summaries: list[_Summary], clock: LocalTime) -> list[tuple[dt.date, dt.date]]:
    return sorted({summary_period(s, clock) for s in summaries})


def _group(
    up: str,
    unit: str,
    per_day: dict[dt.date, _Bucket],
    periods: list[tuple[dt.date, dt.date]],
    clock: LocalTime,
) -> list[tuple[str, str, dt.date, dt.date, _Bucket, bool]]:
    """Sum days into billing periods (or calendar months), trimmed to the days that have data."""
    groups: dict[tuple[dt.date, dt.date], list[dt.date]] = {}
    for day in sorted(per_day):
        period = next((p for p in periods if p[0] <= day <= p[1]), None)
        if period is None:
            first = day.replace(day=1)
            period = (first, first.replace(day=calendar.monthrange(day.year, day.month)[1]))
        groups.setdefault(period, []).append(day)
    out = []
    for (first, last), members in sorted(groups.items()):
        total = _Bucket()
        for day in members:
            b = per_day[day]
            total.consumption += b.consumption
            if b.cost is not None:
                total.cost = (total.cost or 0.0) + b.cost
            total.seconds += b.seconds
            total.intervals += b.intervals
            total.estimated = total.estimated or b.estimated
        expected = sum(
            _day_seconds(clock, first + dt.timedelta(days=i))
            for i in range((last - first).days + 1)
        )
        complete = total.seconds >= expected
        if not complete:
            first, last = members[0], members[-1]
        out.append((up, unit, first, last, total, complete))
    return out


# Summary and intervals agree when they differ by no more than this share of the larger figure.
SUMMARY_TOLERANCE = 0.005


def _apply_summaries(
    readings: list[tuple[str, str, dt.date, dt.date, _Bucket, bool]],
    summaries: dict[str, list[_Summary]],
    clock_for: Callable[[str], LocalTime],
) -> tuple[list[tuple[str, str, dt.date, dt.date, _Bucket, bool]], dict[tuple, float]]:
    """The intervals are the measurement; a bill covering exactly a derived period gives its cost
    and is a cross-check of the usage. Returns the readings and, per (point, unit, first, last),
    the bill's usage where it differs from the intervals' sum by more than SUMMARY_TOLERANCE."""
    out = []
    differ: dict[tuple, float] = {}
    for up, unit, first, last, bucket, complete in readings:
        clock = clock_for(up)
        for s in summaries.get(up, []):
            if summary_period(s, clock) != (first, last):
                continue
            if s.consumption is not None and s.unit == unit:
                larger = max(abs(s.consumption), abs(bucket.consumption))
                if abs(s.consumption - bucket.consumption) > SUMMARY_TOLERANCE * larger:
                    differ[(up, unit, first, last)] = s.consumption
            if s.cost is not None:
                bucket.cost = s.cost
        out.append((up, unit, first, last, bucket, complete))
    return out, differ
