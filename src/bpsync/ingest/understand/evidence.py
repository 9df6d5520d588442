"""The decisions taken from the whole file before any row is mapped (`plan_table`): the decimal
separator, the date order (day-first or month-first, from values that prove it) and each meter's
period convention ("end equals the next start" exports have their end moved back a day,
docs/decisions.md D18). Each is a scan of the table's cells for evidence; a file whose evidence
contradicts itself is refused, never guessed."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace

import numpy as np

from bpsync.ingest.cells.dates import DateError, DateOrder, DateOrderEvidence, parse_date
from bpsync.ingest.cells.values import Header, cell_text
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import Table
from bpsync.ingest.readers.chunks import table_chunks
from bpsync.ingest.understand.columns import Columns, resolve_columns
from bpsync.ingest.understand.dated_columns import (
    OrderScan,
    dated_rows,
    order_evidence_by_chunks,
    period_counts,
)
from bpsync.ingest.understand.templates import Template, TemplateError

# Look at this many date cells before deciding the file writes no all-numeric dates.
DATE_SCAN_LIMIT = 1000
# Rows read one by one for the date order before a file the reader reads in column chunks
# carries on in them (most files prove their order, or write no 03/04 dates, well before).
ORDER_ROWS = 1000


@dataclass
class Plan:
    """What the pre-scans decided for the whole file (`plan_table`)."""

    template: Template
    columns: Columns
    order: DateOrder | None
    decimal: str
    next_start_meters: frozenset[str] | None
    # Read dates only (no days, no start): meter key → {read day: the meter's previous read
    # day, or -1 for its first read}, ordinals (`scan_read_dates`).
    previous_read: dict[str, dict[int, int]] | None = None


def scan_date_order(
    table: Table, template: Template, columns: Columns
) -> tuple[DateOrder | None, str | None]:
    """Decide day-first or month-first from the data (see cells.dates.DateOrderEvidence).

    Reads until a value proves the order, or stops after DATE_SCAN_LIMIT date cells without any
    all-numeric date (the file writes ISO or month names, where no order is needed)."""
    if template.date_format:
        return template.date_order, None
    idx = [
        columns.fields[f].index
        for f in ("start_date", "end_date", "bill_date")
        if f in columns.fields
    ]
    evidence = DateOrderEvidence()
    if idx:
        scan = OrderScan(evidence)
        _order_evidence_by_rows(
            table, idx, scan, ORDER_ROWS if table.chunks else None, DATE_SCAN_LIMIT
        )
        if not scan.stopped:
            order_evidence_by_chunks(table, idx, scan, DATE_SCAN_LIMIT)
    if evidence.ambiguous and not evidence.decided and template.date_order is None:
        decided = order_from_periods(table, template, columns)
        if decided is not None:
            return decided
    try:
        return evidence.resolve(template.date_order)
    except DateError as exc:
        raise IngestError(
            f"dates cannot be read safely: {exc}",
            where=Where(table.file, table.sheet),
            code="ambiguous_dates",
        ) from None


def _order_evidence_by_rows(
    table: Table, idx: list[int], scan: OrderScan, rows: int | None, limit: int
) -> None:
    """Observe the date cells row by row until a value proves the order or `limit` cells hold
    no all-numeric date (`scan.stopped`), or (not stopped) past `rows` rows."""
    evidence = scan.evidence
    for count, row in enumerate(table.rows(), start=1):
        for i in idx:
            evidence.observe(row.cells[i] if i < len(row.cells) else None)
        scan.seen += len(idx)
        scan.last_row = row.number
        if evidence.decided or (scan.seen >= limit and not evidence.numeric):
            scan.stopped = True
            return
        if rows is not None and count >= rows:
            return
    scan.stopped = True


# Rows read for the period evidence; a bill longer than this many days is not plausible.
PERIOD_SCAN_ROWS = 2000
LONGEST_BILL_DAYS = 100


def order_from_periods(
    table: Table, template: Template, columns: Columns
) -> tuple[DateOrder, str] | None:
    """When every date could be read either way (03/04/2024), the periods decide: under the
    wrong order a bill ends before it starts, lasts more than LONGEST_BILL_DAYS days, or its
    dates disagree with the days it states. The order under which every period is plausible
    and the other is not wins; otherwise None (the file is refused as ambiguous)."""
    f = columns.fields
    start_h, end_h = f.get("start_date"), f.get("end_date") or f.get("bill_date")
    days_h = f.get("days")
    if end_h is None or (start_h is None and days_h is None):
        return None
    bad = {"MDY": 0, "DMY": 0}
    checked = 0
    previous: dict[str, dt.date | None] = {"MDY": None, "DMY": None}
    for count, row in enumerate(table.rows()):
        if count >= PERIOD_SCAN_ROWS:
            break
        cells = row.cells

        def at(h: Header, cells: tuple[object, ...] = cells) -> object:
            return cells[h.index] if h.index < len(cells) else None

        try:
            days = int(float(cell_text(at(days_h)))) if days_h is not None else None
        except ValueError:
            days = None
        judged = False
        for order in ("MDY", "DMY"):
            try:
                end = parse_date(at(end_h), order, None, table.date_epoch)
                start = (
                    parse_date(at(start_h), order, None, table.date_epoch)
                    if start_h is not None
                    else None
                )
            except DateError:
                previous[order] = None
                continue
            judged = True
            if start is not None:
                length = (end - start).days
                bad[order] += not 0 <= length <= LONGEST_BILL_DAYS
            elif days is not None and previous[order] is not None:
                # Consecutive bills: the gap between their end dates is one bill's days.
                gap = abs((previous[order] - end).days)
                bad[order] += gap > LONGEST_BILL_DAYS
            previous[order] = end
        checked += judged
    if not checked:
        return None
    for order, other in (("MDY", "DMY"), ("DMY", "MDY")):
        if bad[order] == 0 and bad[other] > 0:
            name = "month-first" if order == "MDY" else "day-first"
            other_name = "day-first" if order == "MDY" else "month-first"
            return order, (
                f"dates read {name}: every date could be read either way, and read "
                f"{other_name} {bad[other]} of {checked} bills would end before they start or "
                f"last more than {LONGEST_BILL_DAYS} days"
            )
    return None


def scan_period_convention(
    table: Table, template: Template, columns: Columns, order: DateOrder | None
) -> tuple[frozenset[str], list[str]]:
    """For end_date = "auto": the meters whose consecutive rows mostly have end == next start
    (older Portfolio Manager exports), and a note per convention for the dry run. A meter with no
    consecutive rows to judge keeps inclusive end dates, and the note says so."""
    f = columns.fields
    if not ("start_date" in f and "end_date" in f):
        return frozenset(), []
    dated = dated_rows(table, template, columns, order, ("start_date", "end_date"))
    pairs, same, next_day = period_counts(dated)
    touching: list[str] = []
    inclusive: list[str] = []
    unknown: list[str] = []
    chosen: set[str] = set()
    for key, n, s, d in zip(
        dated.keys, pairs.tolist(), same.tolist(), next_day.tolist(), strict=True
    ):
        label = key.replace("\x1f", " / ")
        if s > d:
            chosen.add(key)
            touching.append(f"{label} ({s} of {n} consecutive bills)")
        elif d:
            inclusive.append(f"{label} ({d} of {n} consecutive bills)")
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


_COMMA_DECIMAL = re.compile(
    r"^[-+(]?\d{1,3}(?:[. \u00a0]\d{3})+,\d+\)?$|^[-+(]?\d*,(?:\d{1,2}|\d{4,})\)?$"
)
_DOT_DECIMAL = re.compile(
    r"^[-+(]?\d{1,3}(?:[, \u00a0]\d{3})+\.\d+\)?$|^[-+(]?\d*\.(?:\d{1,2}|\d{4,})\)?$"
)


def _decimal_kind(value: object) -> int:
    """0: not text; 1: text proving nothing; 2: a decimal comma; 3: a decimal point."""
    if type(value) is not str:
        return 0
    text = value.strip().strip("$€£ ").strip()
    if _COMMA_DECIMAL.match(text):
        return 2
    if _DOT_DECIMAL.match(text):
        return 3
    return 1


@dataclass
class _Evidence:
    """What the number cells read so far say about the decimal separator."""

    limit: int
    comma: int = 0
    dot: int = 0
    texts: int = 0
    seen: int = 0
    last_row: int = 0  # the last row read
    example: dict[str, str] = field(default_factory=dict)
    done: bool = False

    def enough(self, seen: int, texts: int, proof: int) -> bool:
        # Past `limit` cells with proof or with no number typed as text (a workbook of real
        # numbers); else up to 20 times `limit` (numbers that never prove a convention, such as
        # whole numbers, are read the same either way).
        return (seen >= self.limit and (proof > 0 or texts == 0)) or seen >= 20 * self.limit


def _evidence_by_rows(table: Table, idx: list[int], evidence: _Evidence, cells: int) -> None:
    """Row by row until the evidence is enough, or (not done) past `cells` cells."""
    for row in table.rows():
        for i in idx:
            value = row.cells[i] if i < len(row.cells) else None
            evidence.seen += 1  # every cell counts: a sheet of real numbers is not read twice
            kind = _decimal_kind(value)
            evidence.texts += kind > 0
            if kind == 2:
                evidence.comma += 1
                evidence.example.setdefault(",", value)  # type: ignore[arg-type]
            elif kind == 3:
                evidence.dot += 1
                evidence.example.setdefault(".", value)  # type: ignore[arg-type]
        evidence.last_row = row.number
        e = evidence
        if e.enough(e.seen, e.texts, e.comma + e.dot):
            e.done = True
            return
        if e.seen >= cells:
            return
    evidence.done = True


def _evidence_by_chunks(table: Table, idx: list[int], evidence: _Evidence) -> None:
    """`_evidence_by_rows` carried on over a CSV's column chunks after `evidence.last_row`:
    each distinct cell is judged once and the rows' running counts find the same stopping row
    (a file of whole numbers is read up to 20 times `limit` cells: 0.4-0.7 s row by row for
    100,000, 0.06-0.08 s this way)."""
    import numpy as np

    e = evidence
    for chunk in table_chunks(table, max(1024, -(-20 * e.limit // max(1, len(idx))))):
        a = int(np.searchsorted(chunk.numbers, e.last_row, side="right"))
        n = len(chunk) - a
        if n <= 0:
            continue
        kinds = np.empty((n, len(idx)), dtype=np.int8)
        for j, i in enumerate(idx):
            codes, uniques = chunk.factors(i)
            kinds[:, j] = np.array([_decimal_kind(u) for u in uniques], dtype=np.int8)[codes[a:]]
        seen_at = e.seen + len(idx) * np.arange(1, n + 1)
        texts_at = e.texts + np.cumsum((kinds > 0).sum(axis=1))
        proof_at = e.comma + e.dot + np.cumsum((kinds >= 2).sum(axis=1))
        enough = ((seen_at >= e.limit) & ((proof_at > 0) | (texts_at == 0))) | (
            seen_at >= 20 * e.limit
        )
        e.done = bool(enough.any())
        end = int(np.argmax(enough)) + 1 if e.done else n
        taken = kinds[:end]
        for kind, sign in ((2, ","), (3, ".")):
            if sign not in e.example and (taken == kind).any():
                row, j = divmod(int(np.argmax((taken == kind).ravel())), len(idx))
                e.example[sign] = chunk.cell(idx[j], a + row)
        e.seen, e.texts = int(seen_at[end - 1]), int(texts_at[end - 1])
        e.comma += int((taken == 2).sum())
        e.dot += int((taken == 3).sum())
        e.last_row = int(chunk.numbers[a + end - 1])
        if e.done:
            return
    e.done = True


def scan_decimal(table: Table, columns: Columns, limit: int = 5000) -> tuple[str, str | None]:
    """For decimal = "auto": "," or "." from the number cells typed as text, as dates are decided.
    "1.234,5" or "12,5" prove a decimal comma; "1,234.5" or "12.5" a decimal point; "1,234" and
    "1.234" prove nothing. Both kinds in one file is an error (the file must be split or the
    template must say). Returns the separator and a note for the dry run. The first `limit`
    cells are read row by row (most files prove their convention there, and a workbook's numbers
    are rarely text); a CSV that has not carries on in its column chunks."""
    idx = [
        columns.fields[f].index for f in ("consumption", "cost", "demand") if f in columns.fields
    ] + [h.index for h, _, _ in columns.values]
    if not idx:
        return ".", None
    evidence = _Evidence(limit)
    chunked = table.kind == "csv" and table.chunks is not None
    _evidence_by_rows(table, idx, evidence, limit if chunked else 20 * limit)
    if not evidence.done:
        _evidence_by_chunks(table, idx, evidence)
    comma, dot, example = evidence.comma, evidence.dot, evidence.example
    if comma and dot:
        raise IngestError(
            f"numbers cannot be read safely: {example[',']!r} has a decimal comma but "
            f"{example['.']!r} a decimal point; set decimal in the template",
            where=Where(table.file, table.sheet),
            code="ambiguous_decimal",
        )
    if comma:
        return ",", f"numbers read with a decimal comma (e.g. {example[',']!r})"
    if dot:
        return ".", None
    return ".", None


def plan_table(table: Table, template: Template) -> Plan:
    """Resolve the columns and make the whole-file decisions from the data: decimal separator,
    date order, and (end_date = "auto") each meter's period convention. Notes for the dry run go
    to `table.notes`. Raises IngestError when the file as a whole cannot be read."""
    if template.format == "greenbutton" and table.kind != "greenbutton":
        raise TemplateError("this template reads Green Button XML only", template=template.name)
    columns = resolve_columns(table, template)
    if template.decimal == "auto":
        decimal, note = scan_decimal(table, columns)
        template = replace(template, decimal=decimal)
        if note:
            table.notes.append(note)
    order, note = scan_date_order(table, template, columns)
    if note:
        table.notes.append(note)
    if order and order != template.date_order:
        table.notes.append(f"dates read {'day-first' if order == 'DMY' else 'month-first'}")
    next_start_meters = None
    if template.end_date == "auto":
        next_start_meters, notes = scan_period_convention(table, template, columns, order)
        table.notes.extend(notes)
    previous_read = None
    f = columns.fields
    if "bill_date" in f and not ({"days", "start_date", "end_date"} & set(f)):
        previous_read, note = scan_read_dates(table, template, columns, order)
        table.notes.append(note)
    return Plan(template, columns, order, template.decimal, next_start_meters, previous_read)


def scan_read_dates(
    table: Table, template: Template, columns: Columns, order: DateOrder | None
) -> tuple[dict[str, dict[int, int]], str]:
    """Meter readings written as read dates only: consecutive reads of a meter make its periods
    (each from the day after the previous read to its own read date). Returns each meter's read
    days mapped to the previous one (-1 for a meter's first read, which starts no period) and a
    note for the dry run."""
    dated = dated_rows(table, template, columns, order, ("bill_date",))
    sort = np.lexsort((dated.days[0], dated.key))
    key, day = dated.key[sort], dated.days[0][sort]
    fresh = np.ones(len(key), dtype=bool)  # a meter's first row of each read day
    fresh[1:] = (key[1:] != key[:-1]) | (day[1:] != day[:-1])
    key, day = key[fresh], day[fresh]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    before = np.empty_like(day)
    before[1:] = day[:-1]
    before[first] = -1
    bounds = [*np.flatnonzero(first).tolist(), len(key)]
    days, befores = day.tolist(), before.tolist()
    previous: dict[str, dict[int, int]] = {
        name: dict(zip(days[a:b], befores[a:b], strict=True))
        for name, a, b in zip(dated.keys, bounds, bounds[1:], strict=False)
    }
    note = (
        "periods from consecutive read dates: each runs from the day after the meter's previous "
        f"read to its own read date; the first read of each meter ({len(previous)}) starts no "
        "period and is skipped (its usage covers days before the file)"
    )
    return previous, note
