"""Interval exports (hourly, 15-minute, a day per row of 96 quarter-hours) turned into one
reading per meter and local day, each the sum of the intervals that start on that day.

`recognise_intervals(table, meter=…)` is tried when no template matches a file: it returns the
daily table and the template that reads it, or None when the table is not an interval export.

The local day is the date the file prints for an interval's start (an ISO timestamp's date in its
own offset), so a daylight-saving day keeps every interval the file has (92 or 100 quarter-hours)
and a partly covered first or last day holds what the file has. What is not added is said in the
table's notes (printed by the dry run): injection registers (not consumption), a coarser column
restating a finer one (compared day by day), a second unit restating the first (kWh beside m³).
Every row read is accounted for: used, left out with its reason, or refused with a problem."""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from bpsync.ingest.cells.units import lookup_unit
from bpsync.ingest.problems import Problem
from bpsync.ingest.readers.base import Row, Table, make_headers
from bpsync.ingest.understand.interval_days import (
    INJECTION_WORDS,
    Accumulator,
    Day,
    StreamDay,
)
from bpsync.ingest.understand.interval_report import Choice, Report
from bpsync.ingest.understand.interval_shape import SAMPLE_ROWS, Shape, recognise_shape, words
from bpsync.ingest.understand.interval_text import DateOrderError, resolve_dates
from bpsync.ingest.understand.templates import MeterSpec, Template

TEMPLATE_NAME = "interval_days"
_COLUMNS = ("Meter", "Start Date", "End Date", "Consumption", "Unit", "Estimated")


def recognise_intervals(
    table: Table,
    *,
    meter: str | None = None,
    meter_unit: Callable[[str], str | None] | None = None,
) -> tuple[Table, Template] | None:
    """The daily table and its template, or None when `table` is not an interval export.
    Raises IngestError when it is one that cannot be read as days (no meter named and no
    `meter`, day/month order undecidable, two value columns that cannot be told apart)."""
    if table.kind not in ("csv", "xlsx"):
        return None
    sample = list(itertools.islice(table.rows(), SAMPLE_ROWS))
    shape = recognise_shape(table.headers, sample)
    if shape is None:
        return None
    texts = [h.text for h in table.headers]
    acc = Accumulator(shape, texts)
    acc.read(table.rows())
    return _Build(table, shape, acc, meter, meter_unit).run()


def _unit_name(text: str) -> str:
    unit = lookup_unit(text)
    return unit.name if unit else text


def _kept_unit(units: Counter[str], meter_unit: str | None) -> tuple[str, list[str], str | None]:
    """Of the units one set of intervals is stated in: (the one kept, the volume units, the
    meter's unit). The registered meter's own unit when it is one of them (no conversion at
    all), else the volume (kWh from a calorific value restates m³), else the commonest."""
    own = _unit_name(meter_unit) if meter_unit else None
    if own in units:
        return own, [], own
    volume = [u for u in units if (x := lookup_unit(u)) and x.dimension == "volume"]
    return (volume[0] if len(volume) == 1 else units.most_common(1)[0][0]), volume, own


class _Build(Report):
    def __init__(
        self,
        table: Table,
        shape: Shape,
        acc: Accumulator,
        meter: str | None,
        meter_unit: Callable[[str], str | None] | None = None,
    ) -> None:
        self.table, self.shape, self.acc, self.meter = table, shape, acc, meter
        # The registered meter's unit (by --meter or the file's reference), when it can be
        # looked up: the same intervals in two units are then read in the meter's own.
        self.meter_unit = meter_unit
        self.headers = [h.text for h in table.headers]
        self.streams = {sid: s for s, sid in acc.streams.items()}
        self.notes: list[str] = []
        self.problems: list[Problem] = []
        self.refused_days: dict[tuple[str, dt.date], str] = {}

    def run(self) -> tuple[Table, Template]:
        days = self._days()
        meters = sorted({m for m, _ in days})
        named = [m for m in meters if m]
        if self.meter is None and not named:
            raise self.fail(
                "this interval export names no meter: pass --meter METER (the meter's id or "
                "reference) to put every interval in it",
                code="no_meter",
            )
        if self.meter is not None and len(named) > 1:
            raise self.fail(
                f"this interval export holds {len(named)} meters ({', '.join(named[:5])}): "
                "link each to its meter with `bpsync meters link REFERENCE METER_ID` instead of "
                "--meter",
                code="several_meters",
            )
        choices = {m: self._choose(m, days) for m in meters}
        out, fates = self._daily(days, choices)
        self._account(days, choices, fates)
        return self._table(out), self._template(any(r[4] for r in out))

    # -- days -----------------------------------------------------------------------------------

    def _days(self) -> dict[tuple[str, dt.date], Day]:
        try:
            calendar, order, why = resolve_dates(list(self.acc.dates))
        except DateOrderError as exc:
            raise self.fail(
                f"cannot tell the day from the month: {exc}. Nothing was imported from this file",
                code="date_order",
            ) from None
        except ValueError as exc:
            raise self.fail(f"{str(exc)!r} is not a calendar date", code="bad_date") from None
        if order:
            self.notes.append(
                f"dates read {'day' if order == 'DMY' else 'month'} first ({order}): {why}"
            )
        days: dict[tuple[str, dt.date], Day] = {}
        for (meter, text, shift), day in self.acc.days.items():
            key = (meter, calendar[text] + dt.timedelta(days=shift))
            days[key] = _merge(days[key], day) if key in days else day
        return days

    def _choose(self, meter: str, days: dict[tuple[str, dt.date], Day]) -> Choice:
        seen = sorted({sid for (m, _), d in days.items() if m == meter for sid in d.streams})
        choice = Choice()
        kept: list[int] = []
        for sid in seen:
            s = self.streams[sid]
            label = s.register or (self.headers[s.column] if s.column >= 0 else "")
            if words(label) & INJECTION_WORDS:
                choice.left_out[sid] = "injection"
            else:
                kept.append(sid)
        injection = [sid for sid, why in choice.left_out.items() if why == "injection"]
        names = sorted(
            {self.streams[x].register or self.headers[self.streams[x].column] for x in injection}
        )
        for sid in injection:
            what = "registers" if self.streams[sid].register else "columns"
            listed = ", ".join(repr(n) for n in names)
            choice.left_out[sid] = f"injection {what} ({listed}): not consumption"
        by_column: dict[int, list[int]] = {}
        for sid in kept:
            by_column.setdefault(self.streams[sid].column, []).append(sid)
        for sids in by_column.values():
            units = Counter(_unit_name(self.streams[sid].unit) for sid in sids)
            if len(units) > 1:
                own = self.meter_unit(self.meter or meter) if self.meter_unit else None
                best, volume, own = _kept_unit(units, own)
                for sid in sids:
                    unit = _unit_name(self.streams[sid].unit)
                    if unit != best:
                        choice.left_out[sid] = (
                            f"{self.streams[sid].unit} rows restating "
                            f"{next(self.streams[x].unit for x in sids if _unit_name(self.streams[x].unit) == best)}"
                            " (the same intervals in another unit"
                            + (
                                ", the meter measuring volume)"
                                if volume
                                else f", {best} being the meter's unit)"
                                if best == own
                                else ")"
                            )
                        )
                sids[:] = [sid for sid in sids if sid not in choice.left_out]
        if not by_column:
            return choice
        steps = {c: self._step(c) for c in by_column}
        finest = min(steps.values())
        primary = [c for c, st in steps.items() if st == finest]
        if len(primary) > 1:
            names = " and ".join(repr(self.headers[c]) for c in primary)
            raise self.fail(
                f"the columns {names} both hold {finest}-minute values: which is the "
                "consumption is not clear. Save a template with `bpsync templates suggest FILE`",
                code="ambiguous_column",
            )
        choice.used = set(by_column[primary[0]])
        for c, sids in by_column.items():
            if c != primary[0]:
                choice.alternatives[c] = set(sids)
        return choice

    def _step(self, column: int) -> int:
        if column < 0:
            return self.shape.step
        return next(v.step for v in self.shape.values if v.index == column) or self.shape.step

    def _daily(
        self, days: dict[tuple[str, dt.date], Day], choices: dict[str, Choice]
    ) -> tuple[list[tuple], dict[tuple[str, dt.date], str]]:
        """The daily rows, and each day's fate: "used", "alternative" (taken from a coarser
        column) or the reason it was refused."""
        out: list[tuple] = []
        fates: dict[tuple[str, dt.date], str] = {}
        compared: Counter[int] = Counter()
        only_alt: Counter[int] = Counter()
        counts: Counter[tuple[str, int]] = Counter()  # (meter, intervals a day) → days
        unusual: list[tuple[str, dt.date, int]] = []
        repeated: list[tuple[str, dt.date, int]] = []
        units: set[str] = set()
        for key in sorted(days):
            meter, date = key
            day, choice = days[key], choices[meter]
            used = [day.streams[s] for s in choice.used if s in day.streams]
            why = _refused(day, used, self._step_of(choice))
            total, places = _total(used)
            source = sorted(choice.used)
            for column, sids in choice.alternatives.items():
                alt = [day.streams[s] for s in sids if s in day.streams]
                if not alt:
                    continue
                alt_total, alt_places = _total(alt)
                if not used:
                    total, places, source = alt_total, alt_places, sorted(sids)
                    only_alt[column] += 1
                    fates[key] = "alternative"
                    continue
                compared[column] += 1
                tolerance = max(1e-9 * max(abs(total), abs(alt_total)), 0.5 * 10**-places)
                if abs(alt_total - total) > tolerance + 1e-12 and why is None:
                    why = (
                        f"column {self.headers[column]!r} gives {alt_total:g} for this day and "
                        f"the finer {self.headers[source and self.streams[source[0]].column]!r} "
                        f"gives {total:g}: which one is right is not clear"
                    )
            if why is not None:
                fates[key] = why
                self.refused_days[key] = why
                continue
            if not source or not any(s in day.streams for s in source):
                fates[key] = "empty"
                continue
            fates.setdefault(key, "used")
            n = sum(day.streams[s].count for s in source if s in day.streams)
            counts[(meter, n)] += 1
            unit = self.streams[source[0]].unit
            units.add(unit)
            estimated = any(day.streams[s].estimated for s in source if s in day.streams)
            value = round(total, places)
            out.append((day.first_row, meter, date, value, unit, "Y" if estimated else ""))
            step = self._step_of(choice)
            if n != 1440 // step:
                unusual.append((meter, date, n))
            reps = sum(len(day.streams[s].repeats) for s in source if s in day.streams)
            if reps:
                repeated.append((meter, date, reps))
        self._day_notes(choices, compared, only_alt, unusual, repeated, units, out)
        return out, fates

    def _step_of(self, choice: Choice) -> int:
        if not choice.used:
            return self.shape.step
        return self._step(self.streams[min(choice.used)].column)

    # -- notes ----------------------------------------------------------------------------------

    def _table(self, out: list[tuple]) -> Table:
        rows = [
            Row(
                first,
                (
                    self.meter or meter,
                    date.isoformat(),
                    date.isoformat(),
                    repr(value),
                    unit,
                    estimated,
                ),
            )
            for first, meter, date, value, unit, estimated in out
        ]
        headers = make_headers(list(_COLUMNS))
        return replace(
            self.table,
            headers=headers,
            _rows=lambda: iter(rows),
            chunks=None,
            distinct_texts=None,
            kind="csv",
            notes=[*self.table.notes, *self.notes],
            problems=[*self.table.problems, *sorted(self.problems, key=_row_of)],
        )

    def _template(self, has_unit: bool) -> Template:
        columns: dict[str, tuple[str, ...]] = {
            "start_date": ("Start Date",),
            "end_date": ("End Date",),
            "consumption": ("Consumption",),
            "estimated": ("Estimated",),
        }
        if has_unit:
            columns["unit"] = ("Unit",)
        return Template(
            name=TEMPLATE_NAME,
            description="An interval export read as one reading per meter and local day.",
            layout="long",
            meter=MeterSpec(by="external_ref", column=("Meter",)),
            columns=columns,
            date_order=None,
            decimal=".",
            end_date="inclusive",
            estimated_values=("Y",),
            signature=("Meter", "Start Date", "End Date", "Consumption"),
            fixed_meter=self.meter,
        )


def _row_of(p: Problem) -> int:
    return p.where.row or 0


def _total(streams: list[StreamDay]) -> tuple[float, int]:
    return sum(s.total for s in streams), max((s.places for s in streams), default=0)


def _refused(day: Day, used: list[StreamDay], step: int) -> str | None:
    """Why a day cannot be stored as the sum of its intervals, or None."""
    if day.refused is not None:
        row, why = day.refused
        return f"row {row} of this day was refused ({why})"
    for s in used:
        if s.count > 1500 // step:
            return f"it holds {s.count} intervals of {step} minutes, more than 25 hours"
        if not s.repeats:
            continue
        distinct = set(s.repeats)
        if len(distinct) != len(s.repeats) or len(distinct) > 60 // step or max(distinct) >= 240:
            m = s.repeats[0]
            return (
                f"the interval starting {m // 60:02d}:{m % 60:02d} is written more than once "
                "(not the repeated hour of a daylight-saving change)"
            )
    return None


def _merge(a: Day, b: Day) -> Day:
    """Two parts of one day (an end-stamped file's last interval of the day before)."""
    for sid, s in b.streams.items():
        t = a.streams.get(sid)
        if t is None:
            a.streams[sid] = s
            continue
        t.total += s.total
        t.count += s.count
        t.places = max(t.places, s.places)
        both = t.seen & s.seen
        t.repeats += [m for m in range(1440) if both >> m & 1] + s.repeats
        t.seen |= s.seen
        t.estimated += s.estimated
    a.signatures.update(b.signatures)
    a.refused = a.refused or b.refused
    a.first_row = min(a.first_row, b.first_row)
    a.rows += b.rows
    return a
