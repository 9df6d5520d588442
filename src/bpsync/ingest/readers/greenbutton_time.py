"""Local time for Green Button feeds: which local calendar day a UTC instant falls on.

Three sources, in the order the reader prefers them: an IANA zone the template names; the UTC
offset a feed writes on each reading (UtilityAPI's `<timezone>-0500</timezone>` inside
`timePeriod`, not an ESPI element); the feed's LocalTimeParameters (standard offset, DST offset
and the NAESB REQ.21 DST rules). A feed with none of them is read as UTC."""

from __future__ import annotations

import calendar
import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass, field


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
    """UTC instant → local date-time, from ESPI LocalTimeParameters, a fixed offset or an IANA
    zone."""

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


_OFFSET = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


def parse_offset(text: str) -> int | None:
    """`-0500`, `-05:00`, `+0530` → seconds east of UTC; `Z`/`UTC` → 0; anything else None."""
    text = text.strip()
    if text.upper() in ("Z", "UTC", "GMT"):
        return 0
    m = _OFFSET.match(text)
    if not m or int(m.group(2)) > 14 or int(m.group(3)) > 59:
        return None
    seconds = int(m.group(2)) * 3600 + int(m.group(3)) * 60
    return -seconds if m.group(1) == "-" else seconds


def describe_offset(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    return f"UTC{sign}{abs(seconds) // 3600:02d}:{abs(seconds) % 3600 // 60:02d}"


def _midnight_utc(clock: LocalTime, day: dt.date) -> int:
    """The UTC instant of `day`'s local midnight under ESPI rules (standard or daylight)."""
    base = (day - dt.date(1970, 1, 1)).days * 86400 - clock.tz_offset
    midnight = dt.datetime.combine(day, dt.time())
    for candidate in (base, base - clock.dst_offset):
        if clock.local(candidate) == midnight:
            return candidate
    return base


def day_seconds(clock: LocalTime, day: dt.date) -> int:
    """Length of a local day in seconds (82,800 or 90,000 on a DST change)."""
    following = day + dt.timedelta(days=1)
    if clock.zone is not None:
        start = dt.datetime.combine(day, dt.time(), clock.zone).astimezone(dt.UTC)
        end = dt.datetime.combine(following, dt.time(), clock.zone).astimezone(dt.UTC)
        return int((end - start).total_seconds())
    return _midnight_utc(clock, following) - _midnight_utc(clock, day)


# A period boundary this close to a local midnight is that midnight (issue 11 item 3): real feeds
# write bill boundaries in standard time all year, or in UTC, so a November bill can "end" at
# 01:00 on the next bill's first day; a bill-length interval whose duration counts the DST hour
# ends at 01:00 or 23:00 (issue 27 item 8). Boundaries further from midnight keep their date.
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


def period_days(clock: LocalTime, start: int, duration: int) -> tuple[dt.date, dt.date]:
    """A period's first and last local calendar day, boundaries snapped to local midnight."""
    first = _snap(clock, start) or clock.local(start).date()
    end = _snap(clock, start + duration)
    last = end - dt.timedelta(days=1) if end else clock.local(start + duration - 1).date()
    return first, max(first, last)
