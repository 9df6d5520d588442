"""An interval export's rows summed per meter, local day and stream while the file is read.

A stream is one source of values for a meter: a value column, the register a row names and the
unit it is in. Which streams make the consumption (offtake registers are added; injection is
not consumption; a coarser column or a second unit restating the same quantity is left out) is
decided at the end, when every stream is known; until then each (meter, day) holds a few numbers
per stream, so a year of quarter-hours for a few meters stays small."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from bpsync.ingest.cells.values import NumberError, is_blank, parse_number
from bpsync.ingest.readers.base import Row
from bpsync.ingest.understand.interval_shape import Shape, _cell, words
from bpsync.ingest.understand.interval_text import decimals, split_stamp, time_minute

INJECTION_WORDS = {
    "injection", "injectie", "inject", "export", "exported", "received", "return", "teruglevering",
    "feed", "feedin", "production", "productie", "generation", "immissione", "einspeisung",
}  # fmt: skip
_PLACEHOLDERS = frozenset({"", "-", "--", "n/a", "NA"})
ESTIMATED_WORDS = {"geschat", "estimated", "estimate", "estimé", "estime", "stimato", "e", "est"}


@dataclass(slots=True)
class StreamDay:
    """One stream's intervals on one day."""

    total: float = 0.0
    count: int = 0
    places: int = 0  # the most decimals a value printed
    seen: int = 0  # bit m: an interval starting at minute m (0-1439)
    repeats: list[int] = field(default_factory=list)  # minutes seen more than once
    estimated: int = 0


@dataclass(slots=True)
class Day:
    """Every stream of one meter on one printed date (and shift: -1 for an end-stamped
    interval that started the day before)."""

    first_row: int
    streams: dict[int, StreamDay] = field(default_factory=dict)
    signatures: Counter[tuple[int, ...]] = field(default_factory=Counter)  # rows by streams
    refused: tuple[int, str] | None = None  # (row, why) of the first refused row
    rows: int = 0


@dataclass(frozen=True, slots=True)
class Stream:
    column: int
    register: str
    unit: str


@dataclass(frozen=True, slots=True)
class Refusal:
    row: int
    column: int | None
    reason: str
    value: str | None
    code: str = "bad_interval"


class Accumulator:
    """The running sums of a table read row by row under a `Shape`."""

    def __init__(self, shape: Shape, headers_text: list[str]) -> None:
        self.shape = shape
        self.headers = headers_text
        self.days: dict[tuple[str, str, int], Day] = {}
        self.streams: dict[Stream, int] = {}
        self._ids: dict[tuple[int, str, str], int] = {}
        self._statuses: dict[str, bool] = {}
        self.dates: dict[str, None] = {}  # printed dates in order of first appearance
        self.refusals: list[Refusal] = []  # rows refused before they had a day
        self.rows_read = 0
        self.empty_status: Counter[str] = Counter()

    def stream(self, column: int, register: str, unit: str) -> int:
        key = (column, register, unit)
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self._ids)
            self.streams[Stream(column, register, unit)] = sid
        return sid

    def read(self, rows: Iterator[Row]) -> None:
        add = self._add_wide if self.shape.kind == "wide" else self._add_long
        for row in rows:
            self.rows_read += 1
            add(row)

    # -- long: a row per interval ---------------------------------------------------------------

    def _start(self, row: Row) -> tuple[str, int, int] | Refusal:
        s = self.shape
        if s.stamp is not None:
            text = _cell(row, s.stamp)
            got = split_stamp(text)
            if got is None or got[1] is None:
                return self._bad(row, s.stamp, "is not a date and time", text)
            date, minute = got[0], got[1]
        else:
            text = _cell(row, s.date)
            got = split_stamp(text)
            if got is None:
                return self._bad(row, s.date, "is not a date", text)
            date = got[0]
            time_text = _cell(row, s.time)
            t = time_minute(time_text)
            if t is None or t >= 1440:
                return self._bad(row, s.time, "is not a time of day", time_text)
            minute = t
        shift = 0
        if s.end_stamped:
            minute -= s.step
            if minute < 0:
                minute, shift = minute + 1440, -1
        if minute >= 1440:
            return self._bad(row, s.stamp, "is not a start time (24:00)", text)
        return date, minute, shift

    def _bad(self, row: Row, column: int | None, what: str, value: str) -> Refusal:
        name = self.headers[column] if column is not None else "?"
        return Refusal(row.number, column, f"column {name!r}: {value!r} {what}", value)

    def _add_long(self, row: Row) -> None:
        s = self.shape
        start = self._start(row)
        if isinstance(start, Refusal):
            if not any(not is_blank(c) for c in row.cells):
                return
            self.refusals.append(start)
            return
        date, minute, shift = start
        meter = _cell(row, s.meter)
        self.dates.setdefault(date)
        day = self._day(meter, date, shift, row.number)
        register = _cell(row, s.register)
        status = _cell(row, s.status)
        estimated = bool(status) and self._estimated(status)
        signature = []
        for col in s.values:
            text = _cell(row, col.index)
            if not text or text in _PLACEHOLDERS or is_blank(text):
                continue
            try:
                value = parse_number(text, s.decimal)
            except NumberError as exc:
                day.refused = day.refused or (row.number, f"{self.headers[col.index]!r}: {exc}")
                self.refusals.append(
                    Refusal(
                        row.number,
                        col.index,
                        f"column {self.headers[col.index]!r}: {text!r} is not a number ({exc})",
                        text,
                    )
                )
                return
            if value is None:
                continue
            unit = _cell(row, col.unit_index) if col.unit_index is not None else ""
            unit = "" if unit in _PLACEHOLDERS else unit
            sid = self.stream(col.index, register, unit or (col.header_unit or ""))
            self._put(day, sid, minute, value, decimals(text, s.decimal), estimated)
            signature.append(sid)
        if not signature and status:
            self.empty_status[status] += 1
        day.signatures[tuple(signature)] += 1
        day.rows += 1

    def row_streams(self, row: Row) -> list[int]:
        """The streams a row has values in (as `read` counted them), without counting it."""
        s = self.shape
        if s.kind == "wide":
            filled = any(not is_blank(_cell(row, i)) for i, _ in s.slots)
            return [self._ids[(-1, "", "")]] if filled and (-1, "", "") in self._ids else []
        register = _cell(row, s.register)
        out = []
        for col in s.values:
            if is_blank(_cell(row, col.index)):
                continue
            unit = _cell(row, col.unit_index) if col.unit_index is not None else ""
            unit = "" if unit in _PLACEHOLDERS else unit
            sid = self._ids.get((col.index, register, unit or (col.header_unit or "")))
            if sid is not None:
                out.append(sid)
        return out

    def _estimated(self, status: str) -> bool:
        flag = self._statuses.get(status)
        if flag is None:
            flag = self._statuses[status] = bool(words(status) & ESTIMATED_WORDS)
        return flag

    def _day(self, meter: str, date: str, shift: int, number: int) -> Day:
        key = (meter, date, shift)
        day = self.days.get(key)
        if day is None:
            day = self.days[key] = Day(number)
        return day

    def _put(
        self, day: Day, sid: int, minute: int, value: float, places: int, estimated: bool
    ) -> None:
        acc = day.streams.get(sid)
        if acc is None:
            acc = day.streams[sid] = StreamDay()
        acc.total += value
        acc.count += 1
        if places > acc.places:
            acc.places = places
        bit = 1 << minute
        if acc.seen & bit:
            acc.repeats.append(minute)
        acc.seen |= bit
        acc.estimated += estimated

    # -- wide: a row per day --------------------------------------------------------------------

    def _add_wide(self, row: Row) -> None:
        s = self.shape
        text = _cell(row, s.date)
        got = split_stamp(text)
        if got is None:
            if any(not is_blank(c) for c in row.cells):
                self.refusals.append(self._bad(row, s.date, "is not a date", text))
            return
        date = got[0]
        meter = _cell(row, s.meter)
        self.dates.setdefault(date)
        day = self._day(meter, date, 0, row.number)
        if day.rows:
            day.refused = day.refused or (
                row.number,
                f"the day {date!r} is written twice (rows {day.first_row} and {row.number})",
            )
        sid = self.stream(-1, "", "")
        values: list[tuple[int, float, int]] = []
        for index, minute in s.slots:
            cell = _cell(row, index)
            if is_blank(cell):
                continue
            try:
                value = parse_number(cell, s.decimal)
            except NumberError as exc:
                day.refused = day.refused or (row.number, f"{self.headers[index]!r}: {exc}")
                self.refusals.append(
                    Refusal(
                        row.number,
                        index,
                        f"column {self.headers[index]!r}: {cell!r} is not a number ({exc})",
                        cell,
                    )
                )
                day.rows += 1
                return
            if value is not None:
                values.append((minute, value, decimals(cell, s.decimal)))
        for minute, value, places in values:
            self._put(day, sid, minute, value, places, False)
        day.signatures[(sid,) if values else ()] += 1
        day.rows += 1
