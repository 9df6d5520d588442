"""What the dry run says about an interval export read as days: how it was read, what was
left out and why, the days that are not a plain 24 hours, and the account of every row read
(used, left out with its reason, refused with a problem naming the row). A mixin of
`intervals._Build`, which decides; this only reports."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bpsync.ingest.cells.values import cell_text
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Row, Table
from bpsync.ingest.understand.interval_days import Accumulator, Day, Refusal, Stream
from bpsync.ingest.understand.interval_shape import Shape, _cell
from bpsync.ingest.understand.interval_text import resolve_dates, split_stamp

MAX_REFUSED = 100_000  # as readings.limits.MAX_REFUSED_ROWS: beyond it the file is refused whole


def _interval_word(step: int, n: int = 2) -> str:
    names = {15: "quarter-hour", 30: "half-hour", 60: "hour"}
    word = names.get(step, f"{step}-minute interval")
    return word if n == 1 else word + "s"


@dataclass
class Choice:
    """Which streams make each meter's consumption, and why the others were left out."""

    used: set[int] = field(default_factory=set)
    alternatives: dict[int, set[int]] = field(default_factory=dict)  # column → its used streams
    left_out: dict[int, str] = field(default_factory=dict)  # stream → reason


class Report:
    """The notes and problems of `_Build` (see intervals.py for the attributes)."""

    table: Table
    shape: Shape
    acc: Accumulator
    meter: str | None
    headers: list[str]
    streams: dict[int, Stream]
    notes: list[str]
    problems: list[Problem]
    refused_days: dict[tuple[str, dt.date], str]

    def where(self, row: int | None = None, column: int | None = None) -> Where:
        h = self.table.headers[column] if column is not None and column >= 0 else None
        return self.table.where(row, h)

    def fail(self, message: str, code: str = "interval_export") -> IngestError:
        return IngestError(message, where=self.where(), code=code)

    def _step(self, column: int) -> int:
        raise NotImplementedError

    def _step_of(self, choice: Any) -> int:
        raise NotImplementedError

    def _day_notes(
        self,
        choices: dict[str, Choice],
        compared: Counter[int],
        only_alt: Counter[int],
        unusual: list[tuple[str, dt.date, int]],
        repeated: list[tuple[str, dt.date, int]],
        units: set[str],
        out: list[tuple],
    ) -> None:
        s = self.shape
        step = s.step
        if s.kind == "wide":
            how = (
                f"a row per day ({s.start_text(self.table.headers)}) with {len(s.slots)} "
                f"{_interval_word(step)} columns ({self.headers[s.slots[0][0]]!r} …)"
            )
        else:
            primary = sorted({self.streams[x].column for c in choices.values() for x in c.used})
            how = (
                f"{step}-minute intervals starting at {s.start_text(self.table.headers)}"
                + (" (the column gives each interval's end)" if s.end_stamped else "")
                + ", values in "
                + ", ".join(repr(self.headers[c]) for c in primary if c >= 0)
            )
        meters = sorted({r[1] for r in out})
        self.notes.insert(
            0,
            f"read as an interval export: {how}; summed into one reading per meter and local "
            "day (the date the file prints for each interval's start): "
            f"{len(out):,} day(s)" + (f" for {len(meters)} meters" if len(meters) > 1 else ""),
        )
        if self.meter is not None:
            self.notes.append(f"meter: every interval is meter {self.meter!r} (--meter)")
        elif meters:
            self.notes.append(
                f"meters named by column {self.headers[s.meter]!r}: "  # type: ignore[index]
                + ", ".join(meters[:6])
                + " (link each with `bpsync meters link REFERENCE METER_ID`)"
            )
        for column, n in compared.items():
            self.notes.append(
                f"left out: {self._step(column)}-minute column {self.headers[column]!r} (restates "
                f"the {step}-minute column: equal on every day, {n:,} days compared)"
            )
        for column, n in only_alt.items():
            self.notes.append(
                f"{n:,} day(s) only in the {self._step(column)}-minute column "
                f"{self.headers[column]!r}: taken from it"
            )
        registers = sorted(
            {self.streams[x].register for c in choices.values() for x in c.used} - {""}
        )
        if len(registers) > 1:
            self.notes.append(
                "added: registers " + " + ".join(repr(r) for r in registers) + " (parts of one "
                "consumption: consumption = their sum)"
            )
        if not any(units):
            self.notes.append("no unit in the file: the values are taken in each meter's unit")
        unusual = list(dict.fromkeys((None, d, n) for _, d, n in unusual))  # type: ignore[misc]
        repeated = list(dict.fromkeys((None, d, n) for _, d, n in repeated))  # type: ignore[misc]
        if unusual:
            shown = ", ".join(f"{d.isoformat()} ({n})" for _, d, n in unusual[:8])
            more = f" and {len(unusual) - 8} more" if len(unusual) > 8 else ""
            self.notes.append(
                f"days with other than {1440 // step} {_interval_word(step)}, kept with the "
                f"intervals the file has (daylight-saving changes, first and last days): "
                f"{shown}{more}"
            )
        for _, d, n in repeated[:8]:
            self.notes.append(
                f"{d.isoformat()}: {n} {_interval_word(step, n)} written twice (the repeated hour "
                "of a daylight-saving change): both counted"
            )
        estimated = sum(1 for r in out if r[5])
        if estimated:
            self.notes.append(
                f"{estimated:,} day(s) hold estimated intervals: stored as estimated readings"
            )

    def _account(
        self,
        days: dict[tuple[str, dt.date], Day],
        choices: dict[str, Choice],
        fates: dict[tuple[str, dt.date], str],
    ) -> None:
        used = refused = 0
        left: Counter[str] = Counter()
        for key, day in days.items():
            choice, fate = choices[key[0]], fates.get(key, "empty")
            alternative = {s: c for c, sids in choice.alternatives.items() for s in sids}
            for signature, n in day.signatures.items():
                alt = next((alternative[s] for s in signature if s in alternative), None)
                if any(s in choice.used for s in signature) or (alt and fate == "alternative"):
                    if fate in ("used", "alternative", "empty"):
                        used += n
                    else:
                        refused += n
                elif alt is not None and fate == "used":
                    left[
                        f"{self._step(alt)}-minute column {self.headers[alt]!r} restating the "
                        f"{self._step_of(choice)}-minute column on a day taken from it"
                    ] += n
                elif alt is not None:
                    refused += n
                elif signature:
                    left[choice.left_out.get(signature[0], "not consumption")] += n
                else:
                    left["rows with an empty value"] += n
        refused += len({r.row for r in self.acc.refusals})
        for reason, n in left.items():
            if reason.startswith("rows with an empty value") and self.acc.empty_status:
                statuses = ", ".join(repr(s) for s in self.acc.empty_status)
                reason += f" (status {statuses}): nothing to add"
            self.notes.append(f"left out: {reason} ({n:,} row{'' if n == 1 else 's'})")
        total = self.acc.rows_read
        self.notes.append(
            f"rows read {total:,}: {used:,} used, {sum(left.values()):,} left out "
            f"(reasons above), {refused:,} refused (problems below)"
        )
        self._problems(choices)

    def _problems(self, choices: dict[str, Choice]) -> None:
        """The refused rows' problems, with their cells for the reject report: each row refused
        itself, and every row of a refused day that the day's sum would have used."""
        refusals = {r.row: r for r in self.acc.refusals}
        refused_days = self.refused_days
        if not refusals and not refused_days:
            return
        if len(refusals) > MAX_REFUSED:
            first = next(iter(refusals.values()))
            raise self.fail(
                f"{len(refusals):,} rows were refused (the first, row {first.row}: "
                f"{first.reason}). Nothing was imported from this file",
                code="too_many_refused_rows",
            )
        calendar, _, _ = resolve_dates(list(self.acc.dates))
        acc = self.acc
        for row in self.table.rows():
            mine = refusals.get(row.number)
            if mine is not None:
                cells = tuple(cell_text(c) for c in row.cells)
                self.problems.append(_problem(self, mine, cells))
                continue
            key = _row_day(acc, row, calendar)
            if key is None or key not in refused_days:
                continue
            choice = choices[key[0]]
            wanted = choice.used.union(*choice.alternatives.values())
            if not any(sid in wanted for sid in acc.row_streams(row)):
                continue  # left out anyway (injection, a restating unit): not refused
            cells = tuple(cell_text(c) for c in row.cells)
            self.problems.append(
                Problem(
                    "interval_day_refused",
                    f"the day {key[1].isoformat()} is not stored: {refused_days[key]}",
                    self.where(row.number),
                    meter=key[0] or self.meter,
                    row_values=cells,
                )
            )

    # -- the daily table and its template -------------------------------------------------------


def _problem(build: Report, r: Refusal, cells: tuple[str, ...]) -> Problem:
    return Problem(
        r.code,
        r.reason + "; the day it belongs to is not stored",
        build.where(r.row, r.column),
        value=r.value,
        meter=build.meter,
        row_values=cells,
    )


def _row_day(
    acc: Accumulator, row: Row, calendar: dict[str, dt.date]
) -> tuple[str, dt.date] | None:

    shape = acc.shape
    if shape.kind == "wide":
        got = split_stamp(_cell(row, shape.date))
        if got is None or got[0] not in calendar:
            return None
        return _cell(row, shape.meter), calendar[got[0]]
    start = acc._start(row)
    if isinstance(start, Refusal) or start[0] not in calendar:
        return None
    return _cell(row, shape.meter), calendar[start[0]] + dt.timedelta(days=start[2])
