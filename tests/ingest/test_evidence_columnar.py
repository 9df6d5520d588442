"""The whole-file date evidence read in column chunks decides exactly as the row-by-row scans it
replaced (issue 32 item 4): the meters whose end dates are the next start, the notes, the read
dates' previous reads and the date order, over seeded random tables. The row-by-row scans are
kept here as the reference, as they were written in `evidence` before."""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpsync.ingest.cells.dates import (
    EXCEL_1900,
    EXCEL_1904,
    DateError,
    DateOrder,
    DateOrderEvidence,
    parse_date,
)
from bpsync.ingest.cells.values import Header, cell_text, is_blank
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers import open_table
from bpsync.ingest.readers.base import Row, Table, make_headers
from bpsync.ingest.readers.chunks import chunks_of_rows
from bpsync.ingest.understand import evidence
from bpsync.ingest.understand.columns import Columns, resolve_columns
from bpsync.ingest.understand.templates import MeterSpec, Template

# ---- the row-by-row scans, as they were ---------------------------------------------------------


def _convention_key(meter: str, building: str | None) -> str:
    return meter if building is None else f"{building}\x1f{meter}"


def _row_key(template: Template, columns: Columns, cells: tuple[object, ...]) -> str | None:
    def at(h: Header | None) -> object:
        return cells[h.index] if h is not None and h.index < len(cells) else None

    if template.fixed_meter:
        return template.fixed_meter
    if template.meter.by == "building_name":
        b, n = at(columns.building), at(columns.meter_name)
        if is_blank(b) or is_blank(n):
            return None
        return _convention_key(cell_text(n).strip(), cell_text(b).strip())
    m = at(columns.meter)
    return None if is_blank(m) else cell_text(m).strip()


def _dated_rows(
    table: Table, template: Template, columns: Columns, order: DateOrder | None, names: tuple
) -> Iterator[tuple[str, tuple[dt.date, ...]]]:
    idx = [columns.fields[n].index for n in names]
    for row in table.rows():
        cells = row.cells
        key = _row_key(template, columns, cells)
        if key is None:
            continue
        try:
            yield (
                key,
                tuple(
                    parse_date(
                        cells[i] if i < len(cells) else None,
                        order,
                        template.date_format,
                        table.date_epoch,
                    )
                    for i in idx
                ),
            )
        except DateError:
            continue


def old_period_convention(
    table: Table, template: Template, columns: Columns, order: DateOrder | None
) -> tuple[frozenset[str], list[str]]:
    f = columns.fields
    if not ("start_date" in f and "end_date" in f):
        return frozenset(), []
    periods: dict[str, list[tuple[dt.date, dt.date]]] = {}
    for key, (start, end) in _dated_rows(
        table, template, columns, order, ("start_date", "end_date")
    ):
        periods.setdefault(key, []).append((start, end))
    touching: list[str] = []
    inclusive: list[str] = []
    unknown: list[str] = []
    chosen: set[str] = set()
    for key, items in periods.items():
        items.sort()
        pairs = list(itertools.pairwise(items))
        same = sum(1 for (_, e), (s, _) in pairs if e == s)
        next_day = sum(1 for (_, e), (s, _) in pairs if e + dt.timedelta(days=1) == s)
        label = key.replace("\x1f", " / ")
        if same > next_day:
            chosen.add(key)
            touching.append(f"{label} ({same} of {len(pairs)} consecutive bills)")
        elif next_day:
            inclusive.append(f"{label} ({next_day} of {len(pairs)} consecutive bills)")
        else:
            unknown.append(label)
    notes = []
    if touching:
        notes.append(
            "end dates read as the next bill's start (each period ends the day before) for "
            "meters whose bills share a boundary day: " + ", ".join(touching)
        )
    if inclusive:
        notes.append("end dates read as inclusive for: " + ", ".join(inclusive))
    if unknown:
        notes.append(
            "end dates read as inclusive (no consecutive bills to tell the convention) for: "
            + ", ".join(unknown)
        )
    return frozenset(chosen), notes


def old_read_dates(
    table: Table, template: Template, columns: Columns, order: DateOrder | None
) -> tuple[dict[str, dict[int, int]], str]:
    reads: dict[str, set[int]] = {}
    for key, (day,) in _dated_rows(table, template, columns, order, ("bill_date",)):
        reads.setdefault(key, set()).add(day.toordinal())
    previous: dict[str, dict[int, int]] = {}
    for key, days in reads.items():
        ordered = sorted(days)
        previous[key] = dict(zip(ordered, [-1, *ordered[:-1]], strict=True))
    note = (
        "periods from consecutive read dates: each runs from the day after the meter's previous "
        f"read to its own read date; the first read of each meter ({len(previous)}) starts no "
        "period and is skipped (its usage covers days before the file)"
    )
    return previous, note


def old_date_order(
    table: Table, template: Template, columns: Columns, limit: int
) -> tuple[DateOrder | None, str | None]:
    if template.date_format:
        return template.date_order, None
    idx = [
        columns.fields[f].index
        for f in ("start_date", "end_date", "bill_date")
        if f in columns.fields
    ]
    found = DateOrderEvidence()
    seen = 0
    if idx:
        for row in table.rows():
            for i in idx:
                found.observe(row.cells[i] if i < len(row.cells) else None)
            seen += len(idx)
            if found.decided or (seen >= limit and not found.numeric):
                break
    if found.ambiguous and not found.decided and template.date_order is None:
        decided = evidence.order_from_periods(table, template, columns)
        if decided is not None:
            return decided
    try:
        return found.resolve(template.date_order)
    except DateError as exc:
        raise IngestError(
            f"dates cannot be read safely: {exc}",
            where=Where(table.file, table.sheet),
            code="ambiguous_dates",
        ) from None


# ---- random tables ------------------------------------------------------------------------------

HEADERS = ["Meter", "Building", "Name", "Start", "End", "Read", "Usage"]
# Meter cells: spaces that strip to the same key, placeholders, and (workbooks) numbers and
# booleans whose text is a key too.
TEXT_METERS = ["M1", " M1", "M1 ", "M2", "m2", "B/C", "7", "", "N/A", "-", "  "]
BOOK_METERS = [*TEXT_METERS, 7, 7.0, 7.5, True, None, math.nan]


def _text_date(rng: random.Random, day: dt.date, style: str) -> str:
    roll = rng.random()
    if roll < 0.04:
        return rng.choice(["", "N/A", "soon", "13/13/2024", "31/02/2024", "0", "45000", " "])
    if roll < 0.08:  # another way of writing it
        style = rng.choice(["iso", "mdy", "dmy", "name", "dmy2", "stamp", "dots", "serial"])
    if style == "iso":
        return day.isoformat()
    if style == "mdy":
        return f"{day.month:02d}/{day.day:02d}/{day.year}"
    if style == "dmy":
        return f"{day.day}/{day.month}/{day.year}"
    if style == "dmy2":
        return f"{day.day:02d}-{day.month:02d}-{day.year % 100:02d}"
    if style == "name":
        return day.strftime("%b %d, %Y")
    if style == "stamp":
        return f"{day.isoformat()} 00:00:00"
    if style == "dots":
        return day.strftime("%d.%m.%Y")
    return str((day - EXCEL_1900).days)  # an Excel serial written as text


def _book_date(rng: random.Random, day: dt.date, style: str, epoch: dt.date) -> object:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice([None, True, math.nan, 3_000_000, -4, "N/A", 0.5, "soon"])
    if roll < 0.35:
        return _text_date(rng, day, style)
    kind = rng.choice(["date", "datetime", "int", "float"])
    if kind == "date":
        return day
    if kind == "datetime":
        return dt.datetime(day.year, day.month, day.day, rng.randrange(24))
    serial = (day - epoch).days
    if epoch == EXCEL_1900 and serial < 61:
        serial -= 1
    return serial if kind == "int" else serial + rng.random() * 0.99


def _periods(rng: random.Random, meters: list[object]) -> list[tuple[object, dt.date, dt.date]]:
    """Each meter's bills in its own convention (end == next start, inclusive, or neither),
    some repeated, then interleaved."""
    bills = []
    for meter in meters:
        gap = rng.choice([0, 1, 0, 1, None])
        start = dt.date(rng.choice([1950, 1900, 2024]), rng.randint(1, 12), rng.randint(1, 28))
        for _ in range(rng.randint(0, 8)):
            end = start + dt.timedelta(days=rng.randint(0, 40))
            bills.append((meter, start, end))
            if rng.random() < 0.1:
                bills.append((meter, start, end))
            step = gap if gap is not None and rng.random() < 0.85 else rng.randint(-5, 10)
            start = end + dt.timedelta(days=step)
    rng.shuffle(bills)
    if rng.random() < 0.5:
        bills.sort(key=lambda b: str(b[0]))
    return bills


def random_rows(rng: random.Random, book: bool, epoch: dt.date) -> list[tuple[object, ...]]:
    pool = BOOK_METERS if book else TEXT_METERS
    meters = rng.sample(pool, rng.randint(1, 6))
    style = rng.choice(["iso", "mdy", "dmy", "name", "dmy2", "stamp", "dots", "serial"])
    rows = []
    for meter, start, end in _periods(rng, meters):
        if book:
            s, e = (_book_date(rng, d, style, epoch) for d in (start, end))
            read = _book_date(rng, end, style, epoch)
        else:
            s, e, read = (_text_date(rng, d, style) for d in (start, end, end))
        building = rng.choice(pool)
        cells: tuple[object, ...] = (meter, building, meter, s, e, read, "1")
        if rng.random() < 0.05:  # a short row (a workbook's trailing cells trimmed)
            cells = cells[: rng.randint(0, len(cells))]
        rows.append(cells)
    if rng.random() < 0.05 and rows:  # a period ending on the last day there is
        big: object = dt.date.max if book else "9999-12-31"
        rows.append((rows[0][0], rows[0][1], rows[0][2], big, big, big, "1"))
        rows.append(rows[-1])
    if book and epoch == EXCEL_1904 and rng.random() < 0.1 and rows:
        # A serial past 9999-12-31 from 1904 (parse_date's OverflowError), in some date cells
        # of a row, after an unreadable date or none: raised only where the row scan reads it.
        cells = [rng.choice([2958465, "N/A", dt.date(2024, 1, 1)]) for _ in range(3)]
        at = rng.randrange(len(rows) + 1)
        rows.insert(at, (rng.choice(pool), rng.choice(pool), rng.choice(pool), *cells, "1"))
    return rows


def memory_table(rng: random.Random, rows: list[tuple[object, ...]], book: bool, epoch) -> Table:
    """The rows held in memory; chunks of a random size, as a reader that reads columns
    directly gives them (rows split across chunks, keys first met in a later one)."""
    size = rng.randint(1, max(1, len(rows) + 1))

    def read() -> Iterator[Row]:
        return (Row(n, cells) for n, cells in enumerate(rows, start=2))

    def chunks(_size: int) -> Any:
        return chunks_of_rows(read(), size, text=not book)

    return Table(
        file="bills.xlsx" if book else "bills.csv",
        kind="xlsx" if book else "csv",
        headers=make_headers(HEADERS),
        header_row=1,
        _rows=read,
        date_epoch=epoch,
        chunks=chunks if rng.random() < 0.8 else None,
    )


def csv_table(rows: list[tuple[object, ...]], path: Path) -> Table:
    """The rows written to a CSV file and read by the CSV reader (Arrow's column chunks)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADERS)
        for cells in rows:
            writer.writerow(cells)
    return open_table(path)


def random_template(rng: random.Random) -> Template:
    how = rng.choice(["meter", "meter", "building", "fixed"])
    meter = (
        MeterSpec(by="building_name", building_column=("Building",), name_column=("Name",))
        if how == "building"
        else MeterSpec(by="meter_id", column=("Meter",))
    )
    return Template(
        name="t",
        meter=meter,
        columns={
            "start_date": ("Start",),
            "end_date": ("End",),
            "bill_date": ("Read",),
            "consumption": ("Usage",),
        },
        fixed_meter="FIXED" if how == "fixed" else None,
        date_order=rng.choice([None, None, "DMY", "MDY"]),
        date_format="%d.%m.%Y" if rng.random() < 0.1 else None,
        end_date="auto",
    )


def outcome(fn: Any, *args: Any) -> tuple:
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # the same exception, with the same message, is the same outcome
        return ("raised", type(exc), str(exc), getattr(exc, "code", None))


def _read_dates(result: tuple) -> tuple:
    if result[0] != "ok":
        return result
    previous, note = result[1]
    return ("ok", [(k, list(v.items())) for k, v in previous.items()], note)


def check_table(table: Table, template: Template, rng: random.Random, monkeypatch) -> None:
    columns = resolve_columns(table, template)
    for order in (None, "DMY", "MDY"):
        assert outcome(evidence.scan_period_convention, table, template, columns, order) == (
            outcome(old_period_convention, table, template, columns, order)
        )
        assert _read_dates(outcome(evidence.scan_read_dates, table, template, columns, order)) == (
            _read_dates(outcome(old_read_dates, table, template, columns, order))
        )
    limit = rng.choice([1, 2, 3, 5, 8, 1000])
    monkeypatch.setattr(evidence, "DATE_SCAN_LIMIT", limit)
    monkeypatch.setattr(evidence, "ORDER_ROWS", rng.choice([1, 2, 3, 7, 1000]))
    assert outcome(evidence.scan_date_order, table, template, columns) == outcome(
        old_date_order, table, template, columns, limit
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_chunked_scans_decide_as_the_row_scans(seed: int, monkeypatch, tmp_path) -> None:
    """Several meters in mixed conventions, blank and unreadable dates, rows without a meter,
    day-first and month-first dates (ambiguous ones too), workbook cells (dates, datetimes,
    serial numbers, booleans, NaN) under either epoch, short rows, and chunks of every size:
    the chunked scans decide, note and fail exactly as the row scans."""
    rng = random.Random(seed)
    for case in range(12):
        book = rng.random() < 0.45
        epoch = rng.choice([EXCEL_1900, EXCEL_1904]) if book else EXCEL_1900
        rows = random_rows(rng, book, epoch)
        template = random_template(rng)
        if not book and case % 4 == 0:
            table = csv_table(rows, tmp_path / f"bills{case}.csv")
        else:
            table = memory_table(rng, rows, book, epoch)
        check_table(table, template, rng, monkeypatch)


def test_a_meter_first_dated_in_a_later_chunk_is_noted_in_row_order(monkeypatch) -> None:
    """Keys are listed in the order of their first dated row, not of their first cell: M2's
    first row has no dates, so M1 (dated first) leads the notes."""
    rows = [
        ("M2", "", "", "", "", "", "1"),
        ("M1", "", "", "2024-01-01", "2024-01-31", "2024-01-31", "1"),
        ("M1", "", "", "2024-01-31", "2024-02-29", "2024-02-29", "1"),
        ("M2", "", "", "2024-01-01", "2024-01-31", "2024-01-31", "1"),
        ("M2", "", "", "2024-02-01", "2024-02-29", "2024-02-29", "1"),
    ]
    rng = random.Random(0)
    for size in range(1, 6):
        table = memory_table(rng, rows, False, EXCEL_1900)
        table.chunks = lambda _n, size=size, table=table: chunks_of_rows(
            table.rows(), size, text=True
        )
        template = Template(
            name="t",
            meter=MeterSpec(by="meter_id", column=("Meter",)),
            columns={"start_date": ("Start",), "end_date": ("End",), "consumption": ("Usage",)},
            end_date="auto",
        )
        columns = resolve_columns(table, template)
        chosen, notes = evidence.scan_period_convention(table, template, columns, None)
        assert chosen == {"M1"}
        assert notes == [
            "end dates read as the next bill's start (each period ends the day before) for "
            "meters whose bills share a boundary day: M1 (1 of 1 consecutive bills)",
            "end dates read as inclusive for: M2 (1 of 1 consecutive bills)",
        ]
        check_table(table, template, rng, monkeypatch)


@pytest.mark.parametrize("seed", range(20))
def test_the_date_order_evidence_carried_on_in_chunks_is_the_row_loops(seed: int) -> None:
    """The evidence itself (examples of each order, counts) after the row loop stopped at
    `rows` rows and the chunks carried on, is the evidence of the row loop alone."""
    from bpsync.ingest.understand.dated_columns import OrderScan, order_evidence_by_chunks

    rng = random.Random(1000 + seed)
    for _ in range(10):
        book = rng.random() < 0.4
        rows = random_rows(rng, book, EXCEL_1900)
        for _ in range(rng.randint(0, 6)):  # more proof of either order
            rows.insert(rng.randrange(len(rows) + 1), ("M1", "", "", "13/01/2024", "01/13/2024"))
        table = memory_table(rng, rows, book, EXCEL_1900)
        table.chunks = lambda _n, t=table, k=rng.randint(1, 9), text=not book: chunks_of_rows(
            t.rows(), k, text=text
        )
        idx = rng.sample([3, 4, 5], rng.randint(1, 3))
        limit = rng.choice([1, 3, 10, 1000])
        alone = OrderScan(DateOrderEvidence())
        evidence._order_evidence_by_rows(table, idx, alone, None, limit)
        carried = OrderScan(DateOrderEvidence())
        evidence._order_evidence_by_rows(table, idx, carried, rng.randint(1, 5), limit)
        if not carried.stopped:
            order_evidence_by_chunks(table, idx, carried, limit)
        assert carried.evidence == alone.evidence
        assert (carried.seen, carried.stopped) == (alone.seen, alone.stopped)


def test_periods_sort_alike_packed_or_not() -> None:
    """The packed sort of (key, start, end) and lexsort agree, and lexsort takes over when the
    three do not fit in 63 bits."""
    import numpy as np

    from bpsync.ingest.understand.dated_columns import _sorted_periods

    rng = np.random.default_rng(5)
    for keys, low, high in ((5, 700_000, 700_100), (1 << 40, 1, 3_652_059), (3, 1, 2)):
        key = rng.integers(0, keys, 500)
        start, end = rng.integers(low, high, 500), rng.integers(low, high, 500)
        order = np.lexsort((end, start, key))
        got = _sorted_periods(key, start, end)
        for a, b in zip(got, (key[order], start[order], end[order]), strict=True):
            assert np.array_equal(a, b)
