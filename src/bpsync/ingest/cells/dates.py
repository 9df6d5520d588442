"""Dates as files hold them: real date cells, Excel serial numbers, and text in many formats.

Text like 03/04/2024 is ambiguous (3 April or March 4). The order is decided for a whole file by
`DateOrderEvidence`: a value whose first number is over 12 proves day-first, one whose second number
is over 12 proves month-first; with no proof the template's order is used; with none there either,
or with proof both ways, the file is refused (never guessed)."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from typing import Literal

DateOrder = Literal["DMY", "MDY"]

EXCEL_1900 = dt.date(1899, 12, 30)  # serial 1 = 1900-01-01 once the 1900 leap-year bug is allowed
EXCEL_1904 = dt.date(1904, 1, 1)
_MAX_SERIAL = 2958465  # 9999-12-31

_MONTHS = {
    name.casefold(): i
    for i in range(1, 13)
    for name in (calendar.month_name[i], calendar.month_abbr[i])
}
_MONTHS.update({"sept": 9, "june": 6, "july": 7})
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))

_TIME_SUFFIX = re.compile(
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*[AaPp][Mm])?(?:Z|[+-]\d{2}:?\d{2})?)$"
)
_SERIAL = re.compile(r"^\d{1,7}(?:\.\d+)?$", re.ASCII)
_ISO = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_COMPACT = re.compile(r"^((?:19|20)\d{2})(\d{2})(\d{2})$")
_NUMERIC = re.compile(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{2}|\d{4})$")
_WEEKDAY = re.compile(r"^(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*[,.]?\s+", re.I)
_DAY_MONTH_YEAR = re.compile(
    rf"^(\d{{1,2}})(?:st|nd|rd|th)?[-/. ]+({_MONTH_RE})\.?[-/., ]+(\d{{2}}|\d{{4}})$", re.I
)
_MONTH_DAY_YEAR = re.compile(
    rf"^({_MONTH_RE})\.?[-/. ]+(\d{{1,2}})(?:st|nd|rd|th)?,?[-/. ]+(\d{{4}})$", re.I
)
_YEAR_MONTH_DAY = re.compile(rf"^(\d{{4}})[-/. ]+({_MONTH_RE})\.?[-/. ]+(\d{{1,2}})$", re.I)
# Months: 2024-01, 2024/1, 01/2024, Jan 2024, January-24, 2024 Jan
_MONTH_ISO = re.compile(r"^(\d{4})[-/.](\d{1,2})$")
_MONTH_NUM = re.compile(r"^(\d{1,2})[-/.](\d{4})$")
_MONTH_NAME_YEAR = re.compile(rf"^({_MONTH_RE})\.?[-/.,' ]+(\d{{2}}|\d{{4}})$", re.I)
_YEAR_MONTH_NAME = re.compile(rf"^(\d{{4}})[-/. ]+({_MONTH_RE})\.?$", re.I)


class DateError(ValueError):
    """Why a cell is not a date (the message is shown to the user)."""


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:  # the strptime convention: 69-99 → 1900s, 00-68 → 2000s
        year += 1900 if year >= 69 else 2000
    return year


def _make(year: int, month: int, day: int) -> dt.date:
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        raise DateError(f"no such date ({exc})") from None


def from_excel_serial(serial: float, epoch: dt.date = EXCEL_1900) -> dt.date:
    if not 1 <= serial <= _MAX_SERIAL:
        raise DateError("a number that is not an Excel date")
    days = int(serial)
    if epoch == EXCEL_1900 and days < 61:  # Excel's fictitious 1900-02-29
        days += 1
    return epoch + dt.timedelta(days=days)


def numeric_parts(text: str) -> tuple[int, int] | None:
    """The two leading numbers of an all-numeric date such as 03/04/2024, else None."""
    m = _NUMERIC.match(_strip(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _strip(text: str) -> str:
    text = " ".join(text.split())
    text = _TIME_SUFFIX.sub("", text).strip()
    return _WEEKDAY.sub("", text)


@functools.lru_cache(maxsize=131072)
def _parse_text(text: str, order: str | None) -> dt.date | str:
    """A date, or the reason the text is not one. Cached: real files repeat their dates a lot."""
    s = _strip(text)
    try:
        if m := _ISO.match(s):
            return _make(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if m := _NUMERIC.match(s):
            a, b, year = int(m.group(1)), int(m.group(2)), _year(m.group(3))
            if order == "DMY":
                return _make(year, b, a)
            if order == "MDY":
                return _make(year, a, b)
            if a > 12:
                return _make(year, b, a)
            if b > 12:
                return _make(year, a, b)
            if a == b:
                return _make(year, a, b)
            return "ambiguous: day and month could be either way round (set date_order)"
        if m := _DAY_MONTH_YEAR.match(s):
            return _make(_year(m.group(3)), _MONTHS[m.group(2).casefold()], int(m.group(1)))
        if m := _MONTH_DAY_YEAR.match(s):
            return _make(int(m.group(3)), _MONTHS[m.group(1).casefold()], int(m.group(2)))
        if m := _YEAR_MONTH_DAY.match(s):
            return _make(int(m.group(1)), _MONTHS[m.group(2).casefold()], int(m.group(3)))
        if m := _COMPACT.match(s):
            return _make(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except DateError as exc:
        return str(exc)
    return "not a date"


def parse_date(
    value: object,
    order: DateOrder | None = None,
    fmt: str | None = None,
    epoch: dt.date = EXCEL_1900,
) -> dt.date:
    """A date from a cell: a date/datetime, an Excel serial number, or text (with `fmt`, a
    strptime format, when the template gives one). Raises DateError."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, bool) or value is None:
        raise DateError("not a date")
    if isinstance(value, int | float):
        return from_excel_serial(float(value), epoch)
    text = str(value).strip()
    if not text:
        raise DateError("empty")
    if fmt:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            raise DateError(f"does not match the date format {fmt!r}") from None
    if len(text) <= 9 and _SERIAL.match(text):  # an Excel serial exported as text
        return from_excel_serial(float(text), epoch)
    result = _parse_text(text, order)
    if isinstance(result, str):
        raise DateError(result)
    return result


def month_bounds(year: int, month: int) -> tuple[dt.date, dt.date]:
    if not 1 <= month <= 12:
        raise DateError("no such month")
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


@functools.lru_cache(maxsize=4096)
def _parse_month_text(text: str) -> tuple[int, int] | str:
    s = _strip(text)
    if m := _MONTH_ISO.match(s):
        return int(m.group(1)), int(m.group(2))
    if m := _MONTH_NUM.match(s):
        return int(m.group(2)), int(m.group(1))
    if m := _MONTH_NAME_YEAR.match(s):
        return _year(m.group(2)), _MONTHS[m.group(1).casefold()]
    if m := _YEAR_MONTH_NAME.match(s):
        return int(m.group(1)), _MONTHS[m.group(2).casefold()]
    return "not a month"


def parse_month(
    value: object, order: DateOrder | None = None, epoch: dt.date = EXCEL_1900
) -> tuple[dt.date, dt.date]:
    """The first and last day of the month a cell names: "2024-01", "Jan 2024", "January-24",
    "01/2024", or any date (its month). Raises DateError."""
    if isinstance(value, str):
        result = _parse_month_text(value)
        if not isinstance(result, str):
            return month_bounds(*result)
    day = parse_date(value, order, epoch=epoch)
    return month_bounds(day.year, day.month)


def looks_like_month(text: str) -> bool:
    """True for header cells that name a month with its year (wide monthly sheets)."""
    return not isinstance(_parse_month_text(text), str)


@dataclass
class DateOrderEvidence:
    """Collects proof of day-first or month-first order from all-numeric text dates."""

    day_first: list[str] = field(default_factory=list)  # examples, at most a few
    month_first: list[str] = field(default_factory=list)
    ambiguous: int = 0
    numeric: int = 0

    def observe(self, value: object) -> None:
        if not isinstance(value, str):
            return
        parts = numeric_parts(value)
        if parts is None:
            return
        self.numeric += 1
        a, b = parts
        if a > 12 and b <= 12:
            if len(self.day_first) < 3:
                self.day_first.append(value.strip())
        elif b > 12 and a <= 12:
            if len(self.month_first) < 3:
                self.month_first.append(value.strip())
        elif a != b:
            self.ambiguous += 1

    @property
    def decided(self) -> bool:
        return bool(self.day_first or self.month_first)

    def resolve(self, template_order: DateOrder | None) -> tuple[DateOrder | None, str | None]:
        """(order, note) or raise DateError explaining why the file cannot be read safely."""
        if self.day_first and self.month_first:
            raise DateError(
                "dates are written both day-first (e.g. "
                f"{self.day_first[0]}) and month-first (e.g. {self.month_first[0]}); "
                "fix the file so one order is used throughout"
            )
        if self.day_first:
            note = None
            if template_order == "MDY":
                note = f"the template says month-first, but {self.day_first[0]} is day-first"
            return "DMY", note
        if self.month_first:
            note = None
            if template_order == "DMY":
                note = f"the template says day-first, but {self.month_first[0]} is month-first"
            return "MDY", note
        if self.ambiguous and template_order is None:
            raise DateError(
                f"{self.ambiguous} dates such as 03/04 could be day-first or month-first and no "
                "value in the file decides it; pass --date-order DMY or MDY (or set date_order "
                "in the template or the folder's .bpsync-folder.toml)"
            )
        return template_order, None
