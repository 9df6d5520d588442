"""A template's fields found in a table's headers (`resolve_columns`): each field's column, the
meter and building columns, a wide layout's value columns (with their months), and the columns
whose filled cell means "skip this row". A missing or ambiguous column refuses the file."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from bpsync.ingest.cells.dates import DateError, parse_month
from bpsync.ingest.cells.values import Header, header_key
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.base import Table
from bpsync.ingest.understand.templates import AmbiguousColumn, Template, find_column


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
        or "bill_date" in has  # read dates only: consecutive reads make the periods
    ):
        missing.append("the period (start and end dates, read dates (and days), or month)")
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


def unused_columns(table: Table, template: Template) -> list[str]:
    """The file's columns the template reads nothing from, by name (the dry run lists them, so a
    cost or demand column the template does not know is never dropped without a word). Empty
    when the template does not fit (resolving it will say why)."""
    try:
        columns = _resolve_columns(table, template)
    except (AmbiguousColumn, IngestError):
        return []
    used = {h.index for h in columns.fields.values()}
    used |= {h.index for h in (columns.meter, columns.building, columns.meter_name) if h}
    used |= {h.index for h, _, _ in columns.values}
    used |= {h.index for h in columns.skip_if_filled}
    excluded = {header_key(n) for n in template.exclude_columns}
    return [
        h.text
        for h in table.headers
        if h.index not in used and h.key not in excluded and header_key(h.text) not in excluded
    ]
