"""What one cell of an interval export holds: a timestamp split into its printed date and its
minute of the day, a time-slot header (`00:00-00:15`), a day/month order decided from all the
dates a file prints, an Excel formula-quoted reference (`="5414…"`), a decimal mark.

The local day of an interval is the date the utility prints (or the date of an ISO timestamp in
its own offset), so dates are kept as the printed text while a file is read and turned into
calendar dates once, at the end, when every date it prints is known."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

_STAMP = re.compile(
    r"^\s*(?P<date>\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4})"
    r"(?:(?:T|\s+)(?P<time>\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)\s*"
    r"(?P<ampm>[AaPp]\.?[Mm]\.?)?\s*(?P<offset>Z|[+-]\d{2}:?\d{2})?)?\s*$"
)
_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?\s*([AaPp]\.?[Mm]\.?)?\s*(?:Z|[+-]\d{2}:?\d{2})?\s*$"
)
_SLOT = re.compile(r"^\s*(\d{1,2})[:.h](\d{2})(?:\s*[-\u2013/]\s*(\d{1,2})[:.h](\d{2}))?\s*$")
_ISO_DATE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_NUM_DATE = re.compile(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4}|\d{2})$")
_FORMULA = re.compile(r'^\s*="(.*)"\s*$')


def unformula(text: str) -> str:
    """`="123456789123456789"` (Excel's way to keep an EAN's digits as text) → its text."""
    m = _FORMULA.match(text)
    return m.group(1).strip() if m else text.strip()


@lru_cache(maxsize=4096)
def split_stamp(text: str) -> tuple[str, int | None] | None:
    """(the printed date, minute of the day or None without a time) of a timestamp cell such as
    `03/30/2024 00:15`, `2021-12-25T00:00:00+01:00` or `10-01-2022`; None when it is not one."""
    m = _STAMP.match(text)
    if m is None:
        return None
    if m.group("time") is None:
        return m.group("date"), None
    minute = time_minute(m.group("time") + (m.group("ampm") or ""))
    if minute is None:
        return None
    return m.group("date"), minute


@lru_cache(maxsize=4096)
def time_minute(text: str) -> int | None:
    """Minute of the day of `00:15`, `00:15:00`, `12:15 AM`; 1440 for `24:00`; else None."""
    m = _TIME.match(text)
    if m is None:
        return None
    hour, minute = int(m.group(1)), int(m.group(2))
    ampm = (m.group(4) or "").replace(".", "").casefold()
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    if minute > 59 or hour > 24 or (hour == 24 and minute):
        return None
    return hour * 60 + minute


def slot_minutes(text: str) -> tuple[int, int | None] | None:
    """(start minute, end minute or None) of a time-slot header: `00:00-00:15`, `23:45-24:00`,
    `01:00`; None otherwise."""
    m = _SLOT.match(text)
    if m is None:
        return None
    start = int(m.group(1)) * 60 + int(m.group(2))
    if int(m.group(1)) > 23 or int(m.group(2)) > 59:
        return None
    if m.group(3) is None:
        return start, None
    end = int(m.group(3)) * 60 + int(m.group(4))
    if int(m.group(3)) > 24 or int(m.group(4)) > 59 or end > 1440:
        return None
    return start, end


def date_parts(text: str) -> tuple[str, int, int, int] | None:
    """("ymd", y, m, d) for an ISO-like date, ("num", a, b, year) for `a/b/yyyy`; else None."""
    m = _ISO_DATE.match(text)
    if m:
        return "ymd", int(m.group(1)), int(m.group(2)), int(m.group(3))
    m = _NUM_DATE.match(text)
    if m:
        year = int(m.group(3))
        return "num", int(m.group(1)), int(m.group(2)), year + 2000 if year < 100 else year
    return None


class DateOrderError(ValueError):
    """The dates do not say which is the day and which the month (the message says why)."""


def resolve_dates(texts: Sequence[str]) -> tuple[dict[str, dt.date], str | None, str]:
    """Every printed date (in order of first appearance in the file) as a calendar date, and the
    day/month order used ("DMY", "MDY" or None for ISO dates) and why. The order is the one the dates
    prove (a first number over 12 is a day, a second number over 12 a day), else the one under
    which the file's successive dates are one day apart most often. Raises DateOrderError when
    neither says, and ValueError naming a date that is no date."""
    numeric = [(t, p) for t in texts if (p := date_parts(t)) is not None and p[0] == "num"]
    order: str | None = None
    why = ""
    if numeric:
        dmy = any(p[1] > 12 for _, p in numeric)
        mdy = any(p[2] > 12 for _, p in numeric)
        if dmy and mdy:
            first = next(t for t, p in numeric if p[1] > 12)
            second = next(t for t, p in numeric if p[2] > 12)
            raise DateOrderError(
                f"the dates mix day/month orders ({first!r} is day first, {second!r} month first)"
            )
        if dmy or mdy:
            order = "DMY" if dmy else "MDY"
            proof = next(t for t, p in numeric if p[1 if dmy else 2] > 12)
            why = f"{proof!r} has {'a first' if dmy else 'a second'} number over 12"
        else:
            order = _order_by_sequence([p for _, p in numeric])
            why = "the file's successive dates are a day apart read so"
    out: dict[str, dt.date] = {}
    for text in texts:
        parts = date_parts(text)
        if parts is None:
            raise ValueError(text)
        kind, a, b, c = parts
        try:
            if kind == "ymd":
                out[text] = dt.date(a, b, c)
            else:
                out[text] = dt.date(c, b, a) if order == "DMY" else dt.date(c, a, b)
        except ValueError:
            raise ValueError(text) from None
    return out, order, why


def _order_by_sequence(parts: Sequence[tuple[str, int, int, int]]) -> str:
    def steps(order: str) -> int:
        days = []
        for _, a, b, year in parts:
            try:
                days.append(dt.date(year, b, a) if order == "DMY" else dt.date(year, a, b))
            except ValueError:
                return -1
        return sum(1 for x, y in itertools.pairwise(days) if abs((y - x).days) == 1)

    dmy, mdy = steps("DMY"), steps("MDY")
    if dmy == mdy:
        shown = ", ".join(repr(f"{a:02d}/{b:02d}/{y}") for _, a, b, y in parts[:3])
        raise DateOrderError(
            f"every date ({shown}) reads both day-first and month-first, and their sequence "
            "does not tell which"
        )
    return "DMY" if dmy > mdy else "MDY"


def decimal_mark(samples: Iterable[str]) -> str:
    """ "," when the sample's numbers write a decimal comma (`0,139`, `1.234,5`), else "."."""
    comma = dot = 0
    for text in samples:
        t = text.strip()
        if "," in t and "." in t:
            return "," if t.rfind(",") > t.rfind(".") else "."
        if re.fullmatch(r"[-+]?\d*,\d+", t):
            comma += 1
        elif re.fullmatch(r"[-+]?\d*\.\d+", t):
            dot += 1
    return "," if comma > dot else "."


def decimals(text: str, mark: str) -> int:
    """How many digits a number cell prints after its decimal mark."""
    cut = text.rfind(mark)
    if cut < 0:
        return 0
    tail = text[cut + 1 :]
    return len(tail) if tail.isdigit() else sum(1 for ch in tail if ch.isdigit())
