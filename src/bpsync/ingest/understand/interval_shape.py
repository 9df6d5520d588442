"""Which columns of a table make it an interval export, judged from its headers and its first
rows' values together (never from the file's name).

Two layouts: long (a row per interval: one timestamp column, or a date and a time column,
optionally an until date and time; a value column or several, a unit, a register, a meter, a
status) and wide (a row per day: a date column and 24, 48 or 96 time-slot columns `00:00-00:15`).
The step (5, 10, 15, 30 or 60 minutes) comes from the values: the spacing of successive starts
of each value column, or the from-until duration."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bpsync.ingest.cells.units import lookup_unit
from bpsync.ingest.cells.values import Header, NumberError, is_blank, parse_number
from bpsync.ingest.readers.base import Row
from bpsync.ingest.understand.interval_text import (
    decimal_mark,
    slot_minutes,
    split_stamp,
    time_minute,
    unformula,
)

STEPS = (5, 10, 15, 30, 60)
SAMPLE_ROWS = 400

_START_WORDS = {
    "from",
    "van",
    "start",
    "begin",
    "vanaf",
    "da",
    "de",
    "du",
    "von",
    "inizio",
    "debut",
}
_END_WORDS = {"until", "tot", "to", "end", "einde", "fine", "bis", "hasta", "au", "a", "ending"}
_VALUE_WORDS = {
    "usage", "verbruik", "volume", "consumption", "consumo", "value", "waarde", "quantity",
    "kwh", "energy", "energie", "afname", "offtake", "import", "delivered", "load", "use",
    "amount", "reading", "valore", "verbrauch", "consommation", "wert", "m3",
}  # fmt: skip
_NOT_VALUE_WORDS = {
    "status", "calorische", "calorific", "bovenwaarde", "factor", "index", "stand", "meterstand",
    "temperature", "price", "cost", "prijs", "interval", "id", "code", "ean", "number", "piek",
    "peak", "type", "register", "unit", "units", "eenheid", "meter", "cumulative", "total",
}  # fmt: skip
_UNIT_HEADERS = {"unit", "units", "eenheid", "unita", "unità", "einheit", "uom", "unite", "unité"}
_REGISTER_HEADERS = {"register", "registre", "richting", "direction", "flow", "energy flow"}
_STATUS_WORDS = {"status", "validatiestatus", "validation", "quality", "kwaliteit", "read type"}
_METER_KEYS = (
    ("ean", "ean code", "ean-code", "eancode", "ean nummer", "ean number"),
    ("pod", "mpan", "mprn", "esi id", "esiid", "nmi", "meter point"),
    ("meter id", "meter number", "meter no", "meter ref", "meternummer", "meter nr"),
    ("meter", "meter serial", "serial number"),
)


@dataclass
class ValueColumn:
    index: int
    text: str
    unit_index: int | None = None
    header_unit: str | None = None
    step: int | None = None


@dataclass
class Shape:
    """An interval export's layout, as recognised."""

    kind: str  # "long" or "wide"
    decimal: str = "."
    stamp: int | None = None  # one timestamp column
    date: int | None = None  # or a date column
    time: int | None = None  # and a time column (long)
    until: tuple[int, int | None] | None = None  # until stamp, or until date + time
    end_stamped: bool = False  # the one stamp is each interval's end
    values: list[ValueColumn] = field(default_factory=list)
    register: int | None = None
    meter: int | None = None
    status: int | None = None
    slots: list[tuple[int, int]] = field(default_factory=list)  # wide: (column, start minute)
    step: int = 0

    def start_text(self, headers: Sequence[Header]) -> str:
        if self.stamp is not None:
            return repr(headers[self.stamp].text)
        return " + ".join(repr(headers[i].text) for i in (self.date, self.time) if i is not None)


def words(text: str) -> set[str]:
    return {w for w in re.split(r"[^\w³]+", text.casefold()) if w}


def _cell(row: Row, i: int | None) -> str:
    """The cell's text, stripped; an Excel formula-quoted `="…"` cell is its text."""
    if i is None or i >= len(row.cells):
        return ""
    value = row.cells[i]
    if type(value) is not str:
        return "" if value is None else str(value)
    return unformula(value) if value[:2] == '="' or value[:1].isspace() else value.strip()


def _share(sample: Sequence[Row], i: int, test) -> float:  # type: ignore[no-untyped-def]
    filled = [c for r in sample if not is_blank(c := _cell(r, i))]
    if not filled:
        return 0.0
    return sum(1 for c in filled if test(c)) / len(filled)


def _numeric(sample: Sequence[Row], i: int, mark: str) -> bool:
    def ok(text: str) -> bool:
        try:
            return parse_number(text, mark) is not None
        except NumberError:
            return False

    filled = [c for r in sample if not is_blank(c := _cell(r, i))]
    return bool(filled) and sum(map(ok, filled)) >= 0.9 * len(filled)


def recognise_shape(headers: Sequence[Header], sample: Sequence[Row]) -> Shape | None:
    """The layout of an interval export, or None when the table is not one."""
    if not sample:
        return None
    mark = decimal_mark(
        c for r in sample[:50] for i in range(len(headers)) if (c := _cell(r, i))[:1].isdigit()
    )
    return _wide(headers, sample, mark) or _long(headers, sample, mark)


def _meter_column(headers: Sequence[Header], taken: set[int]) -> int | None:
    for keys in _METER_KEYS:
        for h in headers:
            if h.index not in taken and (h.key in keys or header_words_key(h) in keys):
                return h.index
    return None


def header_words_key(h: Header) -> str:
    return " ".join(sorted(words(h.text)))


def _wide(headers: Sequence[Header], sample: Sequence[Row], mark: str) -> Shape | None:
    slots = [(h.index, s) for h in headers if (s := slot_minutes(h.text)) is not None]
    if len(slots) < 24:
        return None
    starts = [s for _, (s, _e) in slots]
    step = starts[1] - starts[0]
    if step not in STEPS or starts != list(range(0, 1440, step)):
        return None
    dates = [
        h.index
        for h in headers
        if slot_minutes(h.text) is None
        and _share(sample, h.index, lambda c: (p := split_stamp(c)) is not None and p[1] is None)
        >= 0.9
    ]
    if not dates:
        return None
    if not any(_numeric(sample, i, mark) for i, _ in slots[:8]):
        return None
    taken = {dates[0], *(i for i, _ in slots)}
    return Shape(
        kind="wide",
        decimal=mark,
        date=dates[0],
        slots=[(i, s) for i, (s, _e) in slots],
        step=step,
        meter=_meter_column(headers, taken),
        values=[ValueColumn(i, headers[i].text, step=step) for i, _ in slots],
    )


def _long(headers: Sequence[Header], sample: Sequence[Row], mark: str) -> Shape | None:
    stamps, dates, times = [], [], []
    for h in headers:
        if (
            _share(
                sample, h.index, lambda c: (p := split_stamp(c)) is not None and p[1] is not None
            )
            >= 0.9
        ):
            stamps.append(h.index)
        elif _share(sample, h.index, lambda c: split_stamp(c) is not None) >= 0.9:
            dates.append(h.index)
        elif _share(sample, h.index, lambda c: time_minute(c) is not None) >= 0.9:
            times.append(h.index)
    # Start candidates: (stamp, date, time) in column order; pairs are a date followed by a time.
    starts: list[tuple[int | None, int | None, int | None]] = [(s, None, None) for s in stamps]
    for d in dates:
        t = next((t for t in times if t > d), None)
        if t is not None and not any(d < x < t for x in dates):
            starts.append((None, d, t))
    if not starts:
        return None
    starts.sort(key=lambda x: x[0] if x[0] is not None else x[1])  # type: ignore[arg-type,return-value]

    def first_col(c: tuple[int | None, int | None, int | None]) -> int:
        return c[0] if c[0] is not None else c[1]  # type: ignore[return-value]

    def says(c: tuple[int | None, int | None, int | None], vocab: set[str]) -> bool:
        return bool(words(headers[first_col(c)].text) & vocab)

    chosen = next((c for c in starts if says(c, _START_WORDS)), None)
    end_stamped = False
    if chosen is None:
        ends = [c for c in starts if says(c, _END_WORDS)]
        chosen = next((c for c in starts if c not in ends), None)
        if chosen is None:
            chosen, end_stamped = starts[0], True
    until = next((c for c in starts if c is not chosen and says(c, _END_WORDS)), None)
    if end_stamped:
        until = None
    shape = Shape(
        kind="long",
        decimal=mark,
        stamp=chosen[0],
        date=chosen[1],
        time=chosen[2],
        until=(first_col(until), until[2]) if until else None,
        end_stamped=end_stamped,
    )
    taken = {i for c in starts for i in c if i is not None}
    shape.meter = _meter_column(headers, taken)
    if shape.meter is not None:
        taken.add(shape.meter)
    for h in headers:
        w = words(h.text)
        if h.index in taken:
            continue
        if h.key in _REGISTER_HEADERS and shape.register is None:
            shape.register = h.index
        elif (w & _STATUS_WORDS or "status" in h.key) and shape.status is None:
            shape.status = h.index
    taken |= {i for i in (shape.register, shape.status) if i is not None}
    shape.values = _value_columns(headers, sample, mark, taken)
    if not shape.values:
        return None
    _steps(shape, sample)
    if not shape.values:
        return None
    return shape


def _value_columns(
    headers: Sequence[Header], sample: Sequence[Row], mark: str, taken: set[int]
) -> list[ValueColumn]:
    units = [h.index for h in headers if h.key in _UNIT_HEADERS or words(h.text) & _UNIT_HEADERS]
    numeric = [
        h
        for h in headers
        if h.index not in taken and h.index not in units and _numeric(sample, h.index, mark)
    ]
    named = [
        h
        for h in numeric
        if (words(h.text) & _VALUE_WORDS or (h.unit and lookup_unit(h.unit)))
        and not words(h.text) & _NOT_VALUE_WORDS
    ]
    if not named:
        plain = [h for h in numeric if not words(h.text) & _NOT_VALUE_WORDS]
        named = plain if len(plain) == 1 else []
    out = []
    for h in named:
        unit_index = next((u for u in units if h.index < u <= h.index + 2), None)
        if unit_index is None and len(units) == 1:
            unit_index = units[0]
        out.append(ValueColumn(h.index, h.text, unit_index, h.unit))
    return out


def _steps(shape: Shape, sample: Sequence[Row]) -> None:
    """Each value column's step: the modal spacing of successive starts where it has a value
    (by meter, register and unit), else the from-until duration. Columns with no interval step
    are dropped."""
    durations: Counter[int] = Counter()
    for col in shape.values:
        spacing: Counter[int] = Counter()
        last: dict[tuple[str, ...], tuple[str, int]] = {}
        for row in sample:
            start = _start(shape, row)
            if start is None:
                continue
            if is_blank(_cell(row, col.index)):
                continue
            key = (
                _cell(row, shape.meter),
                _cell(row, shape.register),
                _cell(row, col.unit_index),
            )
            before = last.get(key)
            if before is not None and before[0] == start[0] and start[1] > before[1]:
                spacing[start[1] - before[1]] += 1
            last[key] = start
            if shape.until is not None and not durations.total() > 200:
                end = _until(shape, row)
                if end is not None:
                    durations[(end - start[1]) % 1440] += 1
        if spacing:
            col.step = spacing.most_common(1)[0][0]
    duration = durations.most_common(1)[0][0] if durations else None
    for col in shape.values:
        if col.step is None:
            col.step = duration
    shape.values = [c for c in shape.values if c.step in STEPS]
    if shape.values:
        shape.step = min(c.step for c in shape.values if c.step)


def _start(shape: Shape, row: Row) -> tuple[str, int] | None:
    if shape.stamp is not None:
        got = split_stamp(_cell(row, shape.stamp))
        return got if got is not None and got[1] is not None else None  # type: ignore[return-value]
    d = split_stamp(_cell(row, shape.date))
    t = time_minute(_cell(row, shape.time))
    if d is None or t is None:
        return None
    return d[0], t


def _until(shape: Shape, row: Row) -> int | None:
    assert shape.until is not None
    first, time = shape.until
    if time is None:
        got = split_stamp(_cell(row, first))
        return got[1] if got else None
    return time_minute(_cell(row, time))
