"""Map: a `Table` and a `Template` in, one `MappedRow` per reading (or a `Problem`) out, lazily.

Wide layouts are unpivoted here: a row of a wide_meters sheet yields one reading per meter
column, a row of a wide_months sheet one reading per month column. Dates become inclusive periods
(docs/decisions.md D18): "end equals the next start" exports have their end moved back a day."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from bpsync.ingest.dates import (
    DateError,
    DateOrder,
    DateOrderEvidence,
    parse_date,
    parse_month,
)
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers.base import Row, Table, is_total_row
from bpsync.ingest.templates import AmbiguousColumn, Template, TemplateError, find_column
from bpsync.ingest.units import lookup_meter_type, lookup_unit
from bpsync.ingest.values import Header, NumberError, cell_text, is_blank, parse_flag, parse_number

# Look at this many date cells before deciding the file writes no all-numeric dates.
DATE_SCAN_LIMIT = 1000


@dataclass(slots=True)  # not frozen: frozen dataclasses are slow to build per row
class MappedRow:
    """One reading as the file states it (quantity in the file's unit, not yet the meter's)."""

    row: int
    meter_key: str
    start: dt.date
    end: dt.date
    consumption: float
    unit: str | None
    cost: float | None = None
    currency: str | None = None
    demand_kw: float | None = None
    estimated: bool = False
    building: str | None = None  # with meter.by = "building_name"
    column: str | None = None  # the value column of a wide layout
    column_index: int | None = None
    meter_type: str | None = None  # the service meter type the file states for the row


@dataclass
class Columns:
    """The template's fields resolved to this table's headers."""

    fields: dict[str, Header]
    meter: Header | None
    building: Header | None
    meter_name: Header | None
    values: list[tuple[Header, dt.date | None, dt.date | None]]  # wide: value columns (+ month)
    skip_if_filled: list[Header] = field(default_factory=list)


def resolve_columns(table: Table, template: Template) -> Columns:
    """Find each field's column; raises IngestError naming what is missing or ambiguous."""
    try:
        return _resolve_columns(table, template)
    except AmbiguousColumn as exc:
        raise IngestError(
            f"{exc} (template {template.name!r})",
            where=Where(table.file, table.sheet, table.header_row),
            code="ambiguous_column",
        ) from None


def _resolve_columns(table: Table, template: Template) -> Columns:
    headers = table.headers
    fields = {}
    for f, names in template.columns.items():
        h = find_column(headers, names)
        if h is not None:
            fields[f] = h
    spec = template.meter
    meter = find_column(headers, spec.column) if spec.column else None
    building = find_column(headers, spec.building_column) if spec.building_column else None
    meter_name = find_column(headers, spec.name_column) if spec.name_column else None
    missing = []
    if template.layout == "long" and "consumption" not in fields:
        missing.append(f"consumption ({' / '.join(template.names_for('consumption'))})")
    if template.layout != "wide_meters" and not template.fixed_meter:
        if spec.by == "building_name":
            if building is None or meter_name is None:
                missing.append("building and meter name")
        elif meter is None:
            missing.append(f"meter ({' / '.join(spec.column)})")
    has = set(fields)
    if template.layout != "wide_months" and not (
        {"start_date", "end_date"} <= has
        or ({"bill_date", "days"} <= has)
        or ({"end_date", "days"} <= has)
        or ({"start_date", "days"} <= has)
        or "month" in has
    ):
        missing.append("the period (start and end dates, read date and days, or month)")
    values: list[tuple[Header, dt.date | None, dt.date | None]] = []
    used = {h.index for h in fields.values()} | {
        h.index for h in (meter, building, meter_name) if h is not None
    }
    excluded = set()
    for name in template.exclude_columns:
        h = find_column(headers, [name])
        if h is not None:
            excluded.add(h.index)
    if template.layout == "wide_months":
        for h in headers:
            if h.index in used or h.index in excluded:
                continue
            try:
                first, last = parse_month(h.label)
            except DateError:
                continue
            values.append((h, first, last))
        if not values:
            missing.append("month columns (headers such as 'Jan 2024' or '2024-01')")
    elif template.layout == "wide_meters":
        values = [(h, None, None) for h in headers if h.index not in used | excluded]
        if not values:
            missing.append("meter columns")
    if missing:
        found = ", ".join(repr(h.text) for h in headers)
        raise IngestError(
            f"the file does not fit template {template.name!r}: missing {'; '.join(missing)}. "
            f"Columns found: {found}",
            where=Where(table.file, table.sheet, table.header_row),
            code="template_mismatch",
        )
    skips = [h for h in (find_column(headers, [n]) for n in template.skip_if_filled) if h]
    return Columns(fields, meter, building, meter_name, values, skips)


def scan_date_order(
    table: Table, template: Template, columns: Columns
) -> tuple[DateOrder | None, str | None]:
    """Decide day-first or month-first from the data (see dates.DateOrderEvidence).

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
    seen = 0
    if idx:
        for row in table.rows():
            for i in idx:
                evidence.observe(row.cells[i] if i < len(row.cells) else None)
            seen += len(idx)
            if evidence.decided or (seen >= DATE_SCAN_LIMIT and not evidence.numeric):
                break
    try:
        return evidence.resolve(template.date_order)
    except DateError as exc:
        raise IngestError(
            f"dates cannot be read safely: {exc}",
            where=Where(table.file, table.sheet),
            code="ambiguous_dates",
        ) from None


class _RowError(Exception):
    def __init__(self, code: str, reason: str, header: Header | None, value: object = None):
        self.code, self.reason, self.header, self.value = code, reason, header, value


def map_rows(
    table: Table,
    template: Template,
    *,
    columns: Columns | None = None,
    date_order: DateOrder | None = None,
    next_start_meters: frozenset[str] | None = None,
) -> Iterator[MappedRow | Problem]:
    """Every reading of the table, or a Problem for each row (or wide cell) that cannot be read.
    Call `scan_date_order` first for files with all-numeric dates (`map_table` does both)."""
    if template.format == "greenbutton" and table.kind != "greenbutton":
        raise TemplateError("this template reads Green Button XML only", template=template.name)
    columns = columns or resolve_columns(table, template)
    f = columns.fields
    order = date_order
    decimal = template.decimal
    epoch = table.date_epoch
    fmt = template.date_format
    true_values = frozenset(v.strip().casefold() for v in template.estimated_values) or None
    one_day = dt.timedelta(days=1)

    def cell(cells: tuple[object, ...], h: Header | None) -> object:
        return cells[h.index] if h is not None and h.index < len(cells) else None

    dates_seen: dict[str, dt.date] = {}  # real files repeat their dates: parse each text once
    units_seen: dict[str, str] = {}
    meters_seen: dict[str, str] = {}

    def date_of(cells: tuple[object, ...], name: str) -> dt.date:
        h = f[name]
        value = cell(cells, h)
        if type(value) is str:
            known = dates_seen.get(value)
            if known is not None:
                return known
        if is_blank(value):
            raise _RowError("missing_date", f"{name.replace('_', ' ')} is empty", h)
        try:
            day = parse_date(value, order, fmt, epoch)
        except DateError as exc:
            raise _RowError(
                "bad_date", f"{name.replace('_', ' ')} is not a date: {exc}", h, value
            ) from None
        if type(value) is str and len(dates_seen) < 100_000:
            dates_seen[value] = day
        return day

    def days_of(cells: tuple[object, ...]) -> int:
        h = f["days"]
        value = cell(cells, h)
        try:
            number = parse_number(value, decimal)
        except NumberError:
            number = None
        if number is None or number != int(number) or not 1 <= number <= 3660:
            raise _RowError(
                "bad_days", "the number of days must be a whole number from 1", h, value
            )
        return int(number)

    # The period of a row, by whichever date fields the template maps. With end_date = "auto",
    # `next_start_meters` names the meters whose file writes end == next start.
    def period(cells: tuple[object, ...], meter: str | None = None) -> tuple[dt.date, dt.date]:
        next_start = template.end_date == "next_start" or (
            next_start_meters is not None and meter in next_start_meters
        )
        if "start_date" in f and "end_date" in f:
            start, end = date_of(cells, "start_date"), date_of(cells, "end_date")
            if next_start:
                end -= one_day
        elif "month" in f:
            h = f["month"]
            value = cell(cells, h)
            if is_blank(value):
                raise _RowError("missing_date", "month is empty", h)
            try:
                return parse_month(value, order, epoch)
            except DateError as exc:
                raise _RowError("bad_date", f"month is not a month: {exc}", h, value) from None
        elif "start_date" in f:
            start = date_of(cells, "start_date")
            end = start + dt.timedelta(days=days_of(cells) - 1)
        else:
            read = date_of(cells, "bill_date" if "bill_date" in f else "end_date")
            days = days_of(cells)
            end = read - one_day if next_start else read
            start = end - dt.timedelta(days=days - 1)
        if end < start:
            header = f.get("end_date") or f.get("bill_date")
            raise _RowError(
                "end_before_start",
                f"the period ends ({end}) before it starts ({start})"
                + (" once the end date is made inclusive" if next_start else ""),
                header,
                cell(cells, header),
            )
        return start, end

    def number_of(cells: tuple[object, ...], name: str, h: Header | None = None) -> float | None:
        h = h or f.get(name)
        if h is None:
            return None
        value = cell(cells, h)
        try:
            return parse_number(value, decimal)
        except NumberError as exc:
            raise _RowError(
                f"bad_{name}", f"{name.replace('_', ' ')} is not a number: {exc}", h, value
            ) from None

    def unit_of(cells: tuple[object, ...], value_header: Header | None) -> str | None:
        if "unit" in f:
            value = cell(cells, f["unit"])
            if type(value) is str and value in units_seen:
                return units_seen[value]
            if not is_blank(value):
                unit = lookup_unit(str(value))
                if unit is None:
                    raise _RowError(
                        "unknown_unit", "the unit is not one bpsync knows", f["unit"], value
                    )
                if type(value) is str and len(units_seen) < 10_000:
                    units_seen[value] = unit.name
                return unit.name
        if value_header is not None and value_header.unit:
            return value_header.unit
        return template.fixed_unit

    def extras(cells: tuple[object, ...]) -> tuple[float | None, str | None, float | None, bool]:
        cost = number_of(cells, "cost")
        currency = template.fixed_currency
        if "cost" in f and f["cost"].currency:
            currency = f["cost"].currency
        if "currency" in f:
            value = cell(cells, f["currency"])
            if not is_blank(value):
                currency = str(value).strip().upper()
        demand = number_of(cells, "demand")
        estimated = False
        if "estimated" in f:
            value = cell(cells, f["estimated"])
            flag = parse_flag(value, true_values) if true_values else parse_flag(value)
            if flag is None:
                if true_values:
                    flag = False  # the template lists the values meaning "estimated"
                else:
                    raise _RowError(
                        "bad_estimated", "the estimated flag is not yes/no", f["estimated"], value
                    )
            estimated = flag
        return cost, currency, demand, estimated

    fixed_meter = template.fixed_meter

    def meter_of(cells: tuple[object, ...]) -> tuple[str, str | None]:
        if fixed_meter:
            return fixed_meter, None
        if template.meter.by == "building_name":
            building, name = cell(cells, columns.building), cell(cells, columns.meter_name)
            if is_blank(building):
                raise _RowError("missing_meter", "the building name is empty", columns.building)
            if is_blank(name):
                raise _RowError("missing_meter", "the meter name is empty", columns.meter_name)
            return cell_text(name).strip(), cell_text(building).strip()
        value = cell(cells, columns.meter)
        if type(value) is str:
            known = meters_seen.get(value)
            if known is not None:
                return known, None
        if is_blank(value):
            raise _RowError("missing_meter", "the meter is empty", columns.meter)
        key = cell_text(value).strip()
        if type(value) is str and len(meters_seen) < 1_000_000:
            meters_seen[value] = key
        return key, None

    types_seen: dict[str, str] = {}

    def meter_type_of(cells: tuple[object, ...]) -> str | None:
        h = f.get("meter_type")
        value = cell(cells, h)
        if h is None or is_blank(value):
            return None
        text = cell_text(value).strip()
        known = types_seen.get(text)
        if known is None:
            known = lookup_meter_type(text)
            if known is None:
                raise _RowError(
                    "unknown_meter_type",
                    "the meter type is not one bpsync knows, so the row cannot be put in a meter "
                    "safely",
                    h,
                    value,
                )
            types_seen[text] = known
        return known

    def filled_skip(cells: tuple[object, ...]) -> Header | None:
        return next((h for h in columns.skip_if_filled if not is_blank(cell(cells, h))), None)

    def problem(row: Row, err: _RowError, meter: str | None = None) -> Problem:
        where = table.where(row.number, err.header)
        value = None if err.value is None else cell_text(err.value)
        return Problem(
            err.code,
            err.reason,
            where,
            value=value,
            meter=meter,
            row_values=tuple(cell_text(c) for c in row.cells),
        )

    layout = template.layout
    for row in table.rows():
        cells = row.cells
        if is_total_row(cells):
            yield Problem(
                "total_row",
                "skipped a total row",
                table.where(row.number),
                severity="notice",
                row_values=tuple(cell_text(c) for c in cells),
            )
            continue
        if columns.skip_if_filled:
            filled = filled_skip(cells)
            if filled is not None:
                yield Problem(
                    "already_in_source",
                    f"{filled.label} is filled: Portfolio Manager already holds this entry, so "
                    "the row is not inserted",
                    table.where(row.number, filled),
                    value=cell_text(cell(cells, filled)),
                    severity="notice",
                    row_values=tuple(cell_text(c) for c in cells),
                )
                continue
        try:
            if layout == "long":
                meter, building = meter_of(cells)
                meter_type = meter_type_of(cells)
                start, end = period(cells, _convention_key(meter, building))
                consumption = number_of(cells, "consumption")
                if consumption is None:
                    raise _RowError("missing_consumption", "consumption is empty", f["consumption"])
                unit = unit_of(cells, f["consumption"])
                cost, currency, demand, estimated = extras(cells)
                yield MappedRow(
                    row.number,
                    meter,
                    start,
                    end,
                    consumption,
                    unit,
                    cost,
                    currency,
                    demand,
                    estimated,
                    building,
                    meter_type=meter_type,
                )
                continue
            if layout == "wide_meters":
                start, end = period(cells)
                cost, currency, demand, estimated = extras(cells)
                row_meter = None
                row_building = None
            else:
                row_meter, row_building = meter_of(cells)
                row_type = meter_type_of(cells)
                cost = currency = demand = None
                estimated = False
        except _RowError as err:
            yield problem(row, err)
            continue
        for h, first, last in columns.values:
            value = cell(cells, h)
            if is_blank(value):
                continue  # an empty cell in a wide sheet is "no reading", not an error
            try:
                consumption = number_of(cells, "consumption", h)
                assert consumption is not None
                unit = unit_of(cells, h)
            except _RowError as err:
                yield problem(row, err, meter=row_meter or h.label)
                continue
            if layout == "wide_meters":
                yield MappedRow(
                    row.number,
                    h.label,
                    start,
                    end,
                    consumption,
                    unit,
                    None,
                    currency,
                    None,
                    estimated,
                    None,
                    h.text,
                    h.index,
                )
            else:
                assert first is not None and last is not None and row_meter is not None
                yield MappedRow(
                    row.number,
                    row_meter,
                    first,
                    last,
                    consumption,
                    unit,
                    None,
                    None,
                    None,
                    False,
                    row_building,
                    h.text,
                    h.index,
                    row_type,
                )


def _convention_key(meter: str, building: str | None) -> str:
    return meter if building is None else f"{building}\x1f{meter}"


def scan_period_convention(
    table: Table, template: Template, columns: Columns, order: DateOrder | None
) -> tuple[frozenset[str], list[str]]:
    """For end_date = "auto": the meters whose consecutive rows mostly have end == next start
    (older Portfolio Manager exports), and a note per convention for the dry run. A meter with no
    consecutive rows to judge keeps inclusive end dates, and the note says so."""
    f = columns.fields
    if not ("start_date" in f and "end_date" in f):
        return frozenset(), []
    s_i, e_i = f["start_date"].index, f["end_date"].index
    periods: dict[str, list[tuple[dt.date, dt.date]]] = {}
    for row in table.rows():
        cells = row.cells

        def at(h: Header | None, cells: tuple[object, ...] = cells) -> object:
            return cells[h.index] if h is not None and h.index < len(cells) else None

        if template.fixed_meter:
            key = template.fixed_meter
        elif template.meter.by == "building_name":
            b, n = at(columns.building), at(columns.meter_name)
            if is_blank(b) or is_blank(n):
                continue
            key = _convention_key(cell_text(n).strip(), cell_text(b).strip())
        else:
            m = at(columns.meter)
            if is_blank(m):
                continue
            key = cell_text(m).strip()
        try:
            start = parse_date(
                cells[s_i] if s_i < len(cells) else None,
                order,
                template.date_format,
                table.date_epoch,
            )
            end = parse_date(
                cells[e_i] if e_i < len(cells) else None,
                order,
                template.date_format,
                table.date_epoch,
            )
        except DateError:
            continue
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


_COMMA_DECIMAL = re.compile(
    r"^[-+(]?\d{1,3}(?:[. \u00a0]\d{3})+,\d+\)?$|^[-+(]?\d*,(?:\d{1,2}|\d{4,})\)?$"
)
_DOT_DECIMAL = re.compile(
    r"^[-+(]?\d{1,3}(?:[, \u00a0]\d{3})+\.\d+\)?$|^[-+(]?\d*\.(?:\d{1,2}|\d{4,})\)?$"
)


def scan_decimal(table: Table, columns: Columns, limit: int = 5000) -> tuple[str, str | None]:
    """For decimal = "auto": "," or "." from the number cells typed as text, as dates are decided.
    "1.234,5" or "12,5" prove a decimal comma; "1,234.5" or "12.5" a decimal point; "1,234" and
    "1.234" prove nothing. Both kinds in one file is an error (the file must be split or the
    template must say). Returns the separator and a note for the dry run."""
    idx = [
        columns.fields[f].index for f in ("consumption", "cost", "demand") if f in columns.fields
    ] + [h.index for h, _, _ in columns.values]
    comma = dot = texts = 0
    example: dict[str, str] = {}
    seen = 0
    for row in table.rows():
        for i in idx:
            value = row.cells[i] if i < len(row.cells) else None
            seen += 1  # every cell counts: a sheet of real numbers is not read twice in full
            if type(value) is not str:
                continue
            texts += 1
            text = value.strip().strip("$€£ ").strip()
            if _COMMA_DECIMAL.match(text):
                comma += 1
                example.setdefault(",", value)
            elif _DOT_DECIMAL.match(text):
                dot += 1
                example.setdefault(".", value)
        # Past `limit` cells with proof or with no number typed as text (a workbook of real
        # numbers); else up to 20 times `limit` (numbers that never prove a convention, such as
        # whole numbers, are read the same either way).
        if (seen >= limit and (comma or dot or not texts)) or seen >= 20 * limit:
            break
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


def map_table(table: Table, template: Template) -> Iterator[MappedRow | Problem]:
    """Resolve the columns, decide the date order from the data, and map every row.
    Raises IngestError before yielding anything when the file as a whole cannot be read."""
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
    return itertools.chain(
        table.problems,
        map_rows(
            table,
            template,
            columns=columns,
            date_order=order,
            next_start_meters=next_start_meters,
        ),
    )
